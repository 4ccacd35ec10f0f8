"""What ``NAME-cluster`` builds and what its nodes' bootstrap needs: the groups, the OS, the
orchestrator and its settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from fmcluster.config.accounting import Accounting, SlurmPolicy, slurm_policy
from fmcluster.config.hyperpod import HyperPodSettings
from fmcluster.config.hyperpod_eks import HyperPodEksSettings
from fmcluster.config.parallelcluster import ParallelClusterSettings
from fmcluster.config.pcs import PcsSettings
from fmcluster.config.teams import Team
from fmcluster.facts import OPERATING_SYSTEMS, OperatingSystem, OsFacts
from fmcluster.orchestrators import Orchestrator as OrchestratorTraits
from fmcluster.orchestrators import get as get_orchestrator
from fmcluster.plan.groups import GroupPlan


Orchestrator = str
"""An ``orchestrator.type`` (:data:`fmcluster.orchestrators.NAMES`)."""


@dataclass(frozen=True)
class ClusterPlan:
    project: str
    region: str | None
    os: OperatingSystem
    orchestrator: Orchestrator
    groups: tuple[GroupPlan, ...]
    scratch: bool
    """Assemble the instance-store NVMe drives into a RAID 0 (``storage.scratch.enabled``)."""
    scratch_path: str
    """Where that RAID 0 is mounted (container storage goes there too)."""
    fsx_mount_path: str | None
    """Where the project's FSx for Lustre is mounted; None without one."""
    pcluster: ParallelClusterSettings
    """ParallelCluster settings (their defaults unless ``orchestrator.parallelcluster`` sets them)."""
    tags: dict[str, str] = field(default_factory=dict)
    """The project's own tags, in file order."""
    hyperpod: HyperPodSettings = field(default_factory=HyperPodSettings)
    """HyperPod settings (their defaults unless ``orchestrator.hyperpod`` sets them)."""
    account: str | None = None
    pcs: PcsSettings = field(default_factory=PcsSettings)
    """AWS PCS settings (their defaults unless ``orchestrator.pcs`` sets them)."""
    accounting: Accounting = field(default_factory=Accounting)
    """Slurm accounting (``orchestrator.accounting``; off unless the project turns it on)."""
    hyperpod_eks: HyperPodEksSettings = field(default_factory=HyperPodEksSettings)
    """HyperPod-on-EKS settings (their defaults unless ``orchestrator.hyperpod_eks`` sets them)."""
    teams: tuple[Team, ...] = ()
    """The project's teams (``teams``), in file order."""
    deep_dcgm_diagnostic: bool = False
    """Every GPU node's boot health check runs DCGM's medium diagnostic (``health.deep_dcgm_diagnostic``)."""
    control_plane_subnet_cidrs: tuple[str, ...] | None = ()
    """The control plane's two /28s where the orchestrator has one (:attr:`fmcluster.orchestrators.Orchestrator.
    control_plane_subnets`): the VPC's last two, as the accounting database's. Empty without; None where they
    cannot be carved (an existing network, or no room: the hyperpod-eks-network check)."""
    control_plane_zone_ids: tuple[str, ...] = ()
    """The zone ID of each control-plane subnet, in order (:meth:`fmcluster.config.hyperpod_eks.HyperPodEksSettings.
    control_plane_zones`): chosen by zone ID, never by a zone name's position in the Region (EKS refuses some)."""

    @property
    def accounting_store(self) -> str | None:
        """Where the accounting records live (:mod:`fmcluster.config.accounting`), or None when accounting is off
        or the orchestrator offers none (the accounting-supported check refuses that)."""
        offered = self.driver.accounting
        if not self.accounting.enabled or not offered:
            return None
        return self.accounting.store or offered[0]

    @property
    def slurm_policy(self) -> SlurmPolicy:
        """The Slurm policies accounting applies here: fair share, a QoS per partition, tracked resources (off
        without accounting, and where the orchestrator cannot apply them)."""
        if self.accounting_store is None:
            return SlurmPolicy()
        return slurm_policy(self.accounting, self.driver.accounting_defaults)

    @property
    def needs_imex(self) -> bool:
        """Some group's nodes share an NVLink domain through IMEX (GB200 UltraServers: the catalog's ``needs_imex``):
        the cluster then needs IMEX's node permissions, Slurm's IMEX settings and, under ParallelCluster, the prolog."""
        return any(g.needs_imex for g in self.groups)

    @property
    def os_facts(self) -> OsFacts:
        return OPERATING_SYSTEMS[self.os]

    @property
    def pcluster_name(self) -> str:
        """The ParallelCluster cluster name: never the ``NAME-cluster`` stack's name."""
        return self.pcluster.cluster_name or f"{self.project}-slurm"

    @property
    def hyperpod_name_prefix(self) -> str:
        """How the HyperPod cluster name starts; the stack appends the compute subnet's ID (known at deploy time)
        so that a change of ``VpcConfig`` (create-only) comes with a new name and CloudFormation can replace it."""
        return self.hyperpod.cluster_name or f"{self.project}-hyperpod"

    @property
    def eks_name_prefix(self) -> str:
        """How the HyperPod-on-EKS cluster name (and the EKS cluster's) starts; the stack appends the compute
        subnet's ID as for :attr:`hyperpod_name_prefix`."""
        return self.hyperpod_eks.cluster_name or f"{self.project}-hyperpod"

    @property
    def driver(self) -> OrchestratorTraits:
        """What the project's orchestrator does at each stage (:mod:`fmcluster.orchestrators`)."""
        return get_orchestrator(self.orchestrator)

    def group(self, name: str) -> GroupPlan:
        return next(g for g in self.groups if g.name == name)
