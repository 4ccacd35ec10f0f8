"""The ``orchestrator.hyperpod`` section: a SageMaker HyperPod cluster with API-driven Slurm.

Facts (FACTS.md section 5; aws-cdk-lib 2.275.0 ``aws_sagemaker.CfnCluster``, cfn-lint 1.58's
``AWS::SageMaker::Cluster`` schema, boto3's ``CreateCluster``): instance types are ``ml.`` names,
``SlurmConfig.NodeType`` Controller | Login | Compute with at most one partition name,
``OnStartDeepHealthChecks`` InstanceStress | InstanceConnectivity, ``NodeRecovery`` Automatic | None,
``SlurmConfigStrategy`` Managed | Overwrite | Merge, ``ThreadsPerCore`` 1 | 2, an extra EBS volume of
1 to 16,384 GB mounted at ``/opt/sagemaker``, ``NetworkInterface.InterfaceType`` efa | efa-only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fmcluster.config.base import Int, Model
from fmcluster.config.compute import Capacity, OnDemand

ML_INSTANCE_TYPE = r"^ml\.[a-z][a-z0-9-]*\.[a-z0-9]+$"
CLUSTER_NAME = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
"""``AWS::SageMaker::Cluster`` ClusterName (cfn-lint schema): 1 to 63 letters, digits and inner hyphens."""
CLUSTER_NAME_PREFIX_MAX = 45
"""ClusterName takes 63 characters; fmcluster appends ``-`` and the compute subnet ID's 17 hex digits."""
PARTITION_NAME = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
"""``SlurmConfig.PartitionNames`` items (cfn-lint schema pattern; Slurm names kept to 63 characters)."""
BUCKET_NAME = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
"""An S3 bucket name: 3 to 63 lowercase letters, digits, dots and hyphens (S3 naming rules)."""

CONTROLLER = "controller"
LOGIN = "login"
"""Instance-group names of the controller and login groups (compute groups keep their own names)."""
BUCKET_PREFIX = "sagemaker-"
"""The lifecycle bucket's name must start with this: AmazonSageMakerClusterInstanceRolePolicy reaches only
``arn:aws:s3:::sagemaker-*`` (FACTS.md section 5)."""

DeepHealthCheck = Literal["InstanceStress", "InstanceConnectivity"]
DEEP_HEALTH_CHECKS: tuple[DeepHealthCheck, ...] = ("InstanceStress", "InstanceConnectivity")
"""Every check the CloudFormation schema takes (boto3 also lists MultiNodeTrainingValidation; the schema does not)."""

DEFAULT_CONTROLLER = "ml.m5.12xlarge"
"""48 vCPUs and 192 GiB run slurmctld; the controller type of AWS's HyperPod Slurm samples (awsome-distributed-training)."""
DEFAULT_LOGIN = "ml.m5.4xlarge"


def _on_demand() -> OnDemand:
    return OnDemand(type="on-demand")


class ControllerGroup(Model):
    """The Slurm controller (slurmctld): one instance."""

    instance_type: str = Field(default=DEFAULT_CONTROLLER, pattern=ML_INSTANCE_TYPE,
                               description=f"HyperPod `ml.` type of the controller. Default: {DEFAULT_CONTROLLER}.")
    count: Literal[1] = Field(default=1, description="Always 1: a HyperPod Slurm cluster has one controller.")
    capacity: Capacity = Field(default_factory=_on_demand,
                               description="Always on-demand: training plans cover the accelerated compute groups.")
    ebs_volume_gib: Int | None = Field(default=500, ge=1, le=16384,
                                       description="Extra encrypted EBS volume at /opt/sagemaker (GB); null for none.")


class LoginGroup(Model):
    """Login nodes (users' shells)."""

    instance_type: str = Field(default=DEFAULT_LOGIN, pattern=ML_INSTANCE_TYPE,
                               description=f"HyperPod `ml.` type of the login nodes. Default: {DEFAULT_LOGIN}.")
    count: Int = Field(default=1, ge=1, le=16, description="Number of login nodes.")
    capacity: Capacity = Field(default_factory=_on_demand,
                               description="Always on-demand: training plans cover the accelerated compute groups.")
    ebs_volume_gib: Int | None = Field(default=500, ge=1, le=16384,
                                       description="Extra encrypted EBS volume at /opt/sagemaker (GB); null for none.")


UltraServerType = Literal["u-p6e-gb200x36", "u-p6e-gb200x72"]


class GroupSettings(Model):
    """HyperPod settings of one compute group (its instance group)."""

    partition: str | None = Field(default=None, pattern=PARTITION_NAME,
                                  description="Slurm partition of the group (one). Default: the group's name.")
    deep_health_checks: list[DeepHealthCheck] | None = Field(
        default=None,
        description="Deep health checks before a node joins: InstanceStress, InstanceConnectivity. Default: both "
                    "(GPU groups); [] for none.")
    threads_per_core: Literal[1, 2] = Field(default=1, description="1 turns simultaneous multithreading off, 2 on.")
    ebs_volume_gib: Int | None = Field(
        default=500, ge=1, le=16384,
        description="Extra encrypted EBS volume at /opt/sagemaker (GB) for container images; null for none "
                    "(enroot's storage goes on the NVMe RAID either way).")
    interface_type: Literal["efa", "efa-only"] = Field(
        default="efa-only",
        description="EFA interfaces: efa-only takes no IP address (the subnet is sized for one per node); efa adds ENA.")
    ultraserver: UltraServerType | None = Field(
        default=None,
        description="GB200: the UltraServer type of the training plan (x36 = 9 instances, x72 = 18). Default: x72 "
                    "when the count is whole x72 UltraServers of usable instances (17 each with the plan's default "
                    "1 spare), else x36.")


class HyperPodSettings(Model):
    """How fmcluster builds the HyperPod cluster (``orchestrator.type: hyperpod``)."""

    cluster_name: str | None = Field(
        default=None, pattern=CLUSTER_NAME, max_length=CLUSTER_NAME_PREFIX_MAX,
        description="How the HyperPod cluster's name starts (up to 45 characters); fmcluster appends the compute "
                    "subnet's ID, so that a network change replaces the cluster instead of wedging the stack "
                    "(CloudFormation cannot replace a resource whose name stays the same). Default: "
                    "`<project>-hyperpod`. `fmcluster hyperpod status` reads the full name from the stack.")
    controller: ControllerGroup = Field(default_factory=ControllerGroup, description="The Slurm controller group.")
    login: LoginGroup | None = Field(default=None, description="Optional login group.")
    groups: dict[str, GroupSettings] = Field(
        default_factory=dict, description="Compute group name -> its HyperPod settings (defaults apply to the rest).")
    node_recovery: Literal["Automatic", "None"] = Field(
        default="Automatic", description="Automatic: HyperPod replaces or reboots a faulty node; None: labels it only.")
    slurm_config_strategy: Literal["Managed", "Overwrite", "Merge"] = Field(
        default="Managed", description="How HyperPod treats slurm.conf changes made outside the API (Managed: "
                                       "refuses updates that would lose them).")
    lifecycle_bucket_name: str | None = Field(
        default=None, pattern=BUCKET_NAME,
        description="Name of the bucket the stack creates for the lifecycle scripts; must start with `sagemaker-` "
                    "(the managed cluster policy reaches only those). Default: `sagemaker-<project>-<account>-<region>`.")

    def group(self, name: str) -> GroupSettings:
        """A compute group's settings; their defaults when ``groups`` does not name it."""
        return self.groups.get(name) or GroupSettings()
