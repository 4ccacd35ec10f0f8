"""The whole project file: one training effort, one set of stacks."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from fmcluster.config.accounting import Accounting
from fmcluster.config.base import AZ_ID, Model, located
from fmcluster.config.compute import ComputeGroup
from fmcluster.config.hyperpod import HyperPodSettings
from fmcluster.config.hyperpod_eks import HyperPodEksSettings
from fmcluster.config.network import Network
from fmcluster.config.observability import ObservabilityConfig as Observability
from fmcluster.config.parallelcluster import ParallelClusterSettings
from fmcluster.config.pcs import PcsSettings
from fmcluster.config.storage import Storage
from fmcluster.config.teams import Team, validate_team_names
from fmcluster.orchestrators import NAMES, ORCHESTRATORS
from fmcluster.facts import (
    MAX_USER_TAGS,
    TAGS_PER_RESOURCE,
    OperatingSystem,
    tag_problem,
)

DNS_NAME = r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$"
REGION = r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$"
MAX_GROUPS = 250
"""Past about 100 groups (with placement groups) or 248 (without) the cluster stack passes CloudFormation's
per-stack limits (the stack-limits check says which); beyond 250 the file is refused before planning."""


class Orchestrator(Model):
    """Who schedules jobs on the nodes."""

    type: Literal[NAMES] = Field(  # type: ignore[valid-type]
        default="none", description=", ".join(f"`{o.name}` ({o.summary})" for o in ORCHESTRATORS.values()) + "."
    )
    parallelcluster: ParallelClusterSettings | None = Field(
        default=None, description="ParallelCluster settings (orchestrator.type: parallelcluster); defaults apply when absent."
    )

    hyperpod: HyperPodSettings | None = Field(
        default=None, description="HyperPod settings (orchestrator.type: hyperpod); defaults apply when absent."
    )

    pcs: PcsSettings | None = Field(
        default=None, description="AWS PCS settings (orchestrator.type: pcs); defaults apply when absent."
    )

    hyperpod_eks: HyperPodEksSettings | None = Field(
        default=None, description="HyperPod on EKS settings (orchestrator.type: hyperpod-eks); defaults apply when "
                                  "absent."
    )

    accounting: Accounting = Field(
        default_factory=Accounting,
        description="Slurm accounting (off by default: its database is retained and billed).")

    @property
    def hp(self) -> HyperPodSettings:
        """The HyperPod settings; their defaults when the section is absent."""
        return self.hyperpod if self.hyperpod is not None else HyperPodSettings()

    @property
    def pcluster(self) -> ParallelClusterSettings:
        """The ParallelCluster settings; their defaults when the section is absent."""
        return self.parallelcluster if self.parallelcluster is not None else ParallelClusterSettings()

    @property
    def eks(self) -> HyperPodEksSettings:
        """The HyperPod-on-EKS settings; their defaults when the section is absent."""
        return self.hyperpod_eks if self.hyperpod_eks is not None else HyperPodEksSettings()

    @property
    def pcs_settings(self) -> PcsSettings:
        """The AWS PCS settings; their defaults when the section is absent."""
        return self.pcs if self.pcs is not None else PcsSettings()



class Health(Model):
    """Node health beyond what every GPU node always checks (at boot, and periodically while jobs run on Slurm)."""

    deep_dcgm_diagnostic: bool = Field(
        default=False,
        description="Run DCGM's medium diagnostic (`dcgmi diag -r 2`: PCIe, memory and compute tests under load) in "
                    "every GPU node's boot health check, failing the node on any failure. It adds about two minutes "
                    "to every GPU node's boot (NVIDIA DCGM documentation, `dcgmi diag`: level 2 \"normally lasting "
                    "approximately two minutes\"), inside the orchestrator's boot limit; it loads the GPUs, so it "
                    "never runs while jobs do.")


class Project(Model):
    """One training effort: one file under ``projects/``, one set of stacks."""

    name: str = Field(pattern=DNS_NAME, description="DNS-safe project name, 2 to 32 characters; prefixes every stack "
                                                    "and resource.")
    account: str | None = Field(default=None, pattern=r"^[0-9]{12}$", description="AWS account ID (optional).")
    region: str | None = Field(
        default=None, pattern=REGION, description="AWS Region (optional)."
    )
    availability_zone_id: str = Field(
        pattern=AZ_ID, description="AZ ID (e.g. `use1-az6`), the same in every account, where the capacity is."
    )
    os: OperatingSystem = Field(default="ubuntu-22.04", description="Operating system of the nodes.")
    network: Network = Field(default_factory=Network, description="VPC and subnets.")
    compute_groups: list[ComputeGroup] = Field(
        min_length=1, max_length=MAX_GROUPS,
        description=f"The GPU node groups (at most {MAX_GROUPS}; a group holds up to 2048 nodes).")
    storage: Storage = Field(default_factory=Storage, description="Shared storage.")
    orchestrator: Orchestrator = Field(default_factory=Orchestrator, description="Job scheduler.")
    observability: Observability = Field(default_factory=Observability, description="Metrics and alerts.")
    health: Health = Field(default_factory=Health, description="Node health checks beyond the defaults.")
    teams: list[Team] = Field(
        default_factory=list, max_length=100,
        description="Teams sharing the cluster: members, fair-share weight, and each team's guaranteed and "
                    "borrowable instances per compute group (enforced by the scheduler where it can).")
    tags: dict[str, str] = Field(default_factory=dict, description="Tags put on every resource.")
    suppress_warnings: list[str] = Field(
        default_factory=list, description="Names of warning checks to silence (errors cannot be silenced)."
    )

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_USER_TAGS:
            raise ValueError(f"{len(value)} tags; a resource holds at most {TAGS_PER_RESOURCE}, and fmcluster adds up "
                             f"to {TAGS_PER_RESOURCE - MAX_USER_TAGS} of its own, so at most {MAX_USER_TAGS} here")
        for key, val in value.items():
            problem = tag_problem(key, val)
            if problem:
                raise located(problem, key)
        return value

    @field_validator("teams")
    @classmethod
    def _unique_team_names(cls, value: list[Team]) -> list[Team]:
        return validate_team_names(value)

    @field_validator("compute_groups")
    @classmethod
    def _unique_group_names(cls, value: list[ComputeGroup]) -> list[ComputeGroup]:
        seen: set[str] = set()
        for i, group in enumerate(value):
            if group.name in seen:
                raise located(f"compute group name {group.name!r} is used twice; names must be unique", i, "name")
            seen.add(group.name)
        return value
