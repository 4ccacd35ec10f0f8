"""The generate stage's table of orchestrators (:mod:`fmcluster.orchestrators`): per ``orchestrator.type``, the
plan's scheduler section, its part of the diagram, and where each compute group's acceptance jobs go."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from fmcluster.generate import hyperpod, hyperpod_eks, parallelcluster, pcs, selfmanaged
from fmcluster.orchestrators import DiagramPart, SlurmTarget
from fmcluster.plan import ClusterPlan, Plan


@dataclass(frozen=True)
class Scheduler:
    data: Callable[[Plan], dict]
    """The plan's scheduler section as data (``plan -o json``); ``type`` is the orchestrator's name."""
    diagram: Callable[[Plan], DiagramPart]
    slurm_targets: Callable[[ClusterPlan], dict[str, SlurmTarget]]
    """Compute group -> its partition; empty without Slurm."""

    @classmethod
    def of(cls, module: ModuleType) -> Scheduler:
        return cls(module.scheduler_data, module.diagram_part, module.slurm_targets)


SCHEDULERS: dict[str, Scheduler] = {
    "none": Scheduler.of(selfmanaged),
    "parallelcluster": Scheduler.of(parallelcluster),
    "hyperpod": Scheduler.of(hyperpod),
    "pcs": Scheduler.of(pcs),
    "hyperpod-eks": Scheduler.of(hyperpod_eks),
}


def scheduler(cluster: ClusterPlan) -> Scheduler:
    return SCHEDULERS[cluster.orchestrator]
