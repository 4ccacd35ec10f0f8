"""The ``orchestrator.pcs`` section of a project file: a Slurm cluster on AWS Parallel Computing Service (PCS).

Facts (FACTS.md section 5; botocore's ``pcs`` service model; cfn-lint 1.58's ``AWS::PCS::*`` schemas):

- cluster names take 3 to 40 characters, a letter first, then letters, digits and hyphens, never ``pcs_``
  (botocore ``ClusterName``); compute node group and queue names take 3 to 25 (``ComputeNodeGroupName``,
  ``QueueName``);
- Slurm versions 24.11, 25.05, 25.11 and 26.05 (botocore's pcs model; FACTS.md also names 23.11 and 24.05);
  ``Size`` SMALL / MEDIUM / LARGE manages up to 32 / 512 /
  2,048 nodes; ``Name``, ``Networking`` and ``Size`` are create-only (cfn-lint schema);
- ``SlurmConfiguration.ScaleDownIdleTimeInSeconds`` 1 to 10,000,000 (botocore);
- nodes boot an image that carries the PCS agent and Slurm: AWS's ``aws-pcs-sample_ami-*`` images are for demos,
  a production image is built with AWS's recipe (aws-samples/aws-hpc-recipes ``recipes/pcs/dlami_for_pcs_imagebuilder``,
  EC2 Image Builder from the Deep Learning AMI Base GPU, AL2023 or Ubuntu 24.04).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fmcluster.config.base import Int, Model

SLURM_VERSIONS = ("24.11", "25.05", "25.11", "26.05")
"""The Slurm versions AWS PCS takes today: the valid values of CreateCluster's ``scheduler.version`` in botocore
1.44.8's pcs model (its documentation; tests/checks/test_pcs.py compares). FACTS.md section 5 still names 23.11 and
24.05, which PCS no longer offers; AWS's dlami_for_pcs_imagebuilder images carry 24.11, 25.05 and 25.11."""
DEFAULT_SLURM_VERSION = "25.05"
"""The default: the oldest version with everything fmcluster may use (accounting needs 24.11, the REST API and
UltraServer instances 25.05: PCS user guide "Enabling Slurm REST API", "Configure UltraServer instances")."""

Size = Literal["SMALL", "MEDIUM", "LARGE"]
SIZE_NODES: dict[str, int] = {"SMALL": 32, "MEDIUM": 512, "LARGE": 2048}
"""How many nodes (every node group's instances, login nodes included) each cluster ``Size`` manages (FACTS.md
section 5, PCS user guide "Cluster size")."""

NAME_PREFIX = r"^[A-Za-z][A-Za-z0-9-]*$"
NAME_PREFIX_MAX = 19
"""The cluster name is ``PREFIX-<s|m|l>-<compute subnet ID's hex>`` (2 + 18 more characters) within PCS's 40."""
NODE_GROUP_NAME = r"^(?!pcs_)[A-Za-z][A-Za-z0-9-]{2,24}$"
"""Compute node group and queue names (botocore ``ComputeNodeGroupName``, ``QueueName``: 3 to 25 characters)."""
AMI_ID = r"^ami-[a-z0-9]+$"
"""``AmiId`` (cfn-lint ``AWS::PCS::ComputeNodeGroup`` schema)."""

LOGIN = "login"
"""The login node group's name (compute groups keep their own names)."""
DEFAULT_LOGIN_TYPE = "m7i.2xlarge"
"""8 vCPUs and 32 GiB for users' shells, builds and job submission; no GPU."""


class LoginSettings(Model):
    """The login node group: nodes where users log in and submit jobs (Session Manager, no SSH keys)."""

    count: Int = Field(default=1, ge=1, le=16, description="Number of login nodes (always running).")
    instance_type: str = Field(default=DEFAULT_LOGIN_TYPE, pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9]+$",
                               description=f"EC2 type of the login nodes. Default: {DEFAULT_LOGIN_TYPE}.")


class PcsGroupSettings(Model):
    """PCS settings of one compute group (its compute node group and queue)."""

    min_count: Int | None = Field(
        default=None, ge=0,
        description="Static nodes (ScalingConfiguration.MinInstanceCount): kept running when idle. Default: 0 "
                    "on demand (nodes start with jobs), the whole group with a reservation or capacity block "
                    "(the capacity is paid for either way).")


class PcsSettings(Model):
    """How fmcluster builds the AWS PCS cluster (``orchestrator.type: pcs``)."""

    cluster_name: str | None = Field(
        default=None, pattern=NAME_PREFIX, max_length=NAME_PREFIX_MAX,
        description="How the PCS cluster's name starts (up to 19 characters); fmcluster appends the size's letter "
                    "and the compute subnet's ID, so that a change of Size or subnet (create-only) comes with a new "
                    "name. Default: the project name, cut to 19 characters.")
    slurm_version: str = Field(
        default=DEFAULT_SLURM_VERSION,
        description=f"Slurm version of the cluster, one of {', '.join(SLURM_VERSIONS)}. "
                    f"Default: {DEFAULT_SLURM_VERSION}; the image (ami_id) must carry the same version.")
    size: Size | None = Field(
        default=None,
        description="SMALL (up to 32 nodes), MEDIUM (512) or LARGE (2,048), counting every node with the login "
                    "nodes. Default: the smallest that holds them. Create-only: a change replaces the cluster.")
    scaledown_idle_seconds: Int | None = Field(
        default=None, ge=1, le=10_000_000,
        description="Seconds a dynamic node may stay idle before PCS stops it "
                    "(SlurmConfiguration.ScaleDownIdleTimeInSeconds). Default: PCS's own.")
    ami_id: str | None = Field(
        default=None, pattern=AMI_ID,
        description="Image of every node group: it must carry the PCS agent and the Slurm version above (build "
                    "one with AWS's dlami_for_pcs_imagebuilder recipe). A compute group's own ami_id wins. "
                    "Required unless every group and the login nodes have an image.")
    login: LoginSettings | None = Field(
        default_factory=LoginSettings,
        description="The login node group; null for none (jobs are then submitted from elsewhere).")
    login_ami_id: str | None = Field(
        default=None, pattern=AMI_ID,
        description="Image of the login nodes (x86_64, PCS agent and Slurm). Default: ami_id.")
    groups: dict[str, PcsGroupSettings] = Field(
        default_factory=dict, description="Per compute group (by name): its node group's settings.")

    def group(self, name: str) -> PcsGroupSettings:
        """A compute group's settings; their defaults when the group has none."""
        return self.groups.get(name) or PcsGroupSettings()
