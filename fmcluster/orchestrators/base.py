"""The seam where an orchestrator plugs into each stage: one :class:`Orchestrator` per ``orchestrator.type``.

Config, plan, checks, stacks, bootstrap, acceptance, preflight, diagram and the CLI never ask an orchestrator's
name: they ask the project's orchestrator (``plan.cluster.driver``) what it does. One module per orchestrator
(:mod:`.selfmanaged`, :mod:`.parallelcluster`, :mod:`.hyperpod`, :mod:`.pcs`) answers, and reaches into its own
modules of each stage (``fmcluster.config.X``, ``fmcluster.generate.X``, ``fmcluster.stacks.X`` ...).

Heavy stages (CDK, the bootstrap renderer, boto3) are imported inside the methods that need them, so that the
command line and the config layer stay light, and no import cycle runs through this package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from rich.table import Table

    from fmcluster.aws.account_checks import Clients
    from fmcluster.aws.preflight import Check as PreflightCheck
    from fmcluster.config.project import Project
    from fmcluster.contracts import MetricsContract, StorageContract
    from fmcluster.generate.diagram import Edge, Node
    from fmcluster.plan import ClusterPlan, GroupPlan, Plan
    from fmcluster.stacks.cluster import ClusterStack


@dataclass(frozen=True)
class SlurmTarget:
    """Where an acceptance job for one compute group goes: its partition, a node constraint within it, and
    whether Slurm knows the GPUs as a GRES (``--gres``/``--gpus-per-node`` then apply)."""

    partition: str | None
    constraint: str | None
    gres: bool


@dataclass(frozen=True)
class DiagramPart:
    """What an orchestrator adds to the diagram: nodes, edges, and which of its nodes sit in the services subnet."""

    nodes: list[Node]
    edges: list[Edge]
    services: list[str]


class Orchestrator:
    """What one ``orchestrator.type`` does at each stage. Subclasses set the class attributes and override what
    differs; the defaults are those of a cluster without a scheduler."""

    name: ClassVar[str]
    """The project file's ``orchestrator.type``."""
    summary: ClassVar[str]
    """One phrase for the key reference (``docs/project-file.md``)."""
    flavour: ClassVar[str]
    """The bootstrap flavour its nodes run (:mod:`fmcluster.bootstrap.flavours`)."""
    capacity_types: ClassVar[frozenset[str]] = frozenset({"on-demand", "reservation", "capacity-block"})
    """The ``capacity.type`` values its compute groups can use."""
    capacity_hint: ClassVar[str] = ""
    """What to do instead, when a group asks for a capacity type it cannot use."""

    # -- checks -------------------------------------------------------------------------------------------------
    def cluster_stack_counts(self, plan: Plan) -> tuple[int, int] | None:
        """Resources and outputs of ``NAME-cluster`` as it grows with the groups (CloudFormation allows 500 and 200);
        None when the groups' resources are built in stacks of the orchestrator's own."""
        return None

    def warns_ultraserver_multiple(self) -> bool:
        """Whether the generic "a count that is not a whole number of UltraServers" warning applies (an orchestrator
        with a check of its own in usable instances says it once, there)."""
        return True

    # -- stacks -------------------------------------------------------------------------------------------------
    def runs_slurm(self, cluster: ClusterPlan) -> bool:
        """Whether ``cdk deploy`` starts a Slurm cluster (the cluster stack is then termination-protected)."""
        return False

    def render_bundles(self, cluster: ClusterPlan, out_dir: Path, storage: StorageContract,
                       metrics: MetricsContract | None) -> Any:
        """Render the nodes' bootstrap bundles under ``out_dir`` before the cluster stack is built."""
        raise NotImplementedError

    def build(self, stack: ClusterStack, bundles: Any, metrics: MetricsContract | None) -> None:
        """Add the orchestrator's resources to the cluster stack (which holds plan, network and storage)."""
        raise NotImplementedError

    # -- bootstrap and acceptance ---------------------------------------------------------------------------------
    def acceptance_targets(self, cluster: ClusterPlan) -> dict[str, SlurmTarget]:
        """Compute group name -> where its acceptance jobs go. Empty without Slurm."""
        return {}

    def deployed_fsx_for_acceptance(self) -> bool:
        """Whether ``acceptance render`` mounts the project's FSx itself (the nodes do not have it otherwise)."""
        return False

    # -- plan, diagram, preflight --------------------------------------------------------------------------------
    def scheduler_data(self, plan: Plan) -> dict:
        """The plan's scheduler section as data (``plan -o json``); ``type`` is :attr:`name`."""
        raise NotImplementedError

    def scheduler_rows(self, plan: Plan, data: dict, lines: Table) -> None:
        """The same section as text rows (:func:`fmcluster.cli.plantext.row`)."""
        raise NotImplementedError

    def has_other_nodes(self) -> bool:
        """Whether the cluster has nodes besides the GPU nodes (a head, controller or login node) that run exporters."""
        return True

    def diagram(self, plan: Plan) -> DiagramPart:
        """The scheduler's part of the diagram."""
        return DiagramPart([], [], [])

    def preflight_checks(self, project: Project, plan: Plan, clients: Clients) -> list[PreflightCheck]:
        """The orchestrator's own account checks (quotas, clusters in progress)."""
        return []
