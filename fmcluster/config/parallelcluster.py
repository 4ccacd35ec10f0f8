"""The ``orchestrator.parallelcluster`` section of a project file."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from fmcluster import pcluster_facts as support
from fmcluster.config.base import Int, Model
from fmcluster.facts import OPERATING_SYSTEMS

IAM_POLICY_ARN = r"^arn:aws[a-z-]*:iam::(aws|[0-9]{12}):policy/[\w+=,.@/-]+$"
INSTANCE_TYPE = r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$"

DEFAULT_HEAD_NODE = {"x86_64": "m7i.4xlarge", "arm64": "m7g.4xlarge"}
"""Head node by the compute nodes' architecture (ParallelCluster needs them to match): 16 vCPUs and
64 GiB run slurmctld and the NFS exports for clusters of a few hundred nodes."""

DEFAULT_LOGIN_NODE = {"x86_64": "m7i.2xlarge", "arm64": "m7g.2xlarge"}

PcOs = Literal[tuple(os.parallelcluster for os in OPERATING_SYSTEMS.values())]  # type: ignore[valid-type]
"""ParallelCluster's names of the operating systems fmcluster builds bootstrap bundles for."""


class LoginNodes(Model):
    """A pool of login nodes (users' shells), behind a network load balancer ParallelCluster creates."""

    count: Int = Field(default=1, ge=1, le=100, description="Number of login nodes.")
    instance_type: str | None = Field(
        default=None, pattern=INSTANCE_TYPE,
        description="EC2 type of the login nodes. Default: m7i.2xlarge (m7g.2xlarge for arm64 clusters).",
    )


class SlurmSettings(Model):
    """Slurm options ParallelCluster passes through."""

    queue_update_strategy: Literal["DRAIN", "COMPUTE_FLEET_STOP", "TERMINATE"] = Field(
        default="DRAIN",
        description="How running nodes are treated when a queue changes in an update: DRAIN lets jobs finish.",
    )
    scaledown_idletime_minutes: Int = Field(
        default=10, ge=-1, le=43200, description="Minutes an idle dynamic node waits before it is terminated.",
    )
    custom_settings: dict[str, str | int | bool] = Field(
        default_factory=dict,
        description="Extra slurm.conf settings (`CustomSlurmSettings`), e.g. `{SchedulerParameters: ...}`.",
    )


class ParallelClusterSettings(Model):
    """How fmcluster builds the ParallelCluster 3 cluster (`orchestrator.type: parallelcluster`)."""

    version: Literal[support.PCLUSTER_VERSION] = Field(
        default=support.PCLUSTER_VERSION,
        description="ParallelCluster release; the configuration is validated against this release's schema.",
    )
    cluster_name: str | None = Field(
        default=None, pattern=support.CLUSTER_NAME_REGEX,
        description="Name of the cluster. Default: `<project>-slurm` (must differ from the `<project>-cluster` stack).",
    )
    os: PcOs | None = Field(
        default=None,
        description="ParallelCluster `Image.Os`. Default: the project's `os` (ubuntu-22.04 -> ubuntu2204, "
                    "ubuntu-24.04 -> ubuntu2404, al2023 -> alinux2023).",
    )
    head_node_instance_type: str | None = Field(
        default=None, pattern=INSTANCE_TYPE,
        description="EC2 type of the head node (slurmctld). Default: m7i.4xlarge (m7g.4xlarge for arm64 clusters).",
    )
    head_node_root_volume_gib: Int = Field(
        default=200, ge=40, le=16384, description="Size of the head node's encrypted gp3 root volume (/home lives on it).",
    )
    login_nodes: LoginNodes | None = Field(default=None, description="Optional pool of login nodes.")
    queues: dict[str, list[str]] | None = Field(
        default=None,
        description="Slurm queue name -> compute group names. Default: one queue per compute group, named after it.",
    )
    static_nodes: dict[str, Int] = Field(
        default_factory=dict,
        description="Compute group name -> nodes kept running (Slurm static nodes, ParallelCluster `MinCount`). "
                    "Default: every node of a reservation or capacity block (a block needs all), 0 for on-demand.",
    )
    slurm: SlurmSettings = Field(default_factory=SlurmSettings, description="Slurm settings.")
    extra_iam_policy_arns: list[str] = Field(
        default_factory=list,
        description="Managed IAM policies attached to the head, login and compute nodes, besides fmcluster's own.",
    )
    create_cluster: bool = Field(
        default=True,
        description="true: `cdk deploy` creates the cluster (ParallelCluster's CloudFormation provider). "
                    "false: only write cluster.yaml (`fmcluster parallelcluster config`) for `pcluster create-cluster`.",
    )
    deletion_policy: Literal["Retain", "Delete"] = Field(
        default="Delete",
        description="What happens to the cluster when NAME-cluster is deleted: Delete (the default; the data stays in "
                    "FSx and S3, which are retained) or Retain (needs `network.existing`: ParallelCluster requires a "
                    "retained cluster's network to be kept).",
    )

    def queue_mapping(self, group_names: list[str]) -> dict[str, list[str]]:
        """Queue name -> compute group names: ``queues``, or one queue per compute group named after it."""
        return self.queues or {name: [name] for name in group_names}

    @field_validator("extra_iam_policy_arns")
    @classmethod
    def _policy_arns(cls, value: list[str]) -> list[str]:
        for arn in value:
            if not re.match(IAM_POLICY_ARN, arn):
                raise ValueError(f"{arn!r} is not an IAM policy ARN (arn:aws:iam::ACCOUNT:policy/NAME)")
        return value

    @field_validator("static_nodes")
    @classmethod
    def _static_nodes(cls, value: dict[str, int]) -> dict[str, int]:
        for group, count in value.items():
            if not 0 <= count <= 2048:
                raise ValueError(f"static_nodes.{group}: {count} is not 0 to 2048 (a group has at most 2048 nodes)")
        return value

    @field_validator("queues")
    @classmethod
    def _queue_lists(cls, value: dict[str, list[str]] | None) -> dict[str, list[str]] | None:
        if value is not None:
            if not value:
                raise ValueError("name at least one queue, or leave `queues` out for one queue per compute group")
            for queue, groups in value.items():
                if not groups:
                    raise ValueError(f"queue {queue!r} lists no compute groups")
                dupes = sorted({g for g in groups if groups.count(g) > 1})
                if dupes:
                    raise ValueError(f"queue {queue!r} lists {', '.join(dupes)} more than once")
        return value


