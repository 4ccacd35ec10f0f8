"""``fmcluster status``: a project's stacks as CloudFormation holds them, its cluster as its orchestrator reports it,
and the alerts firing in its Prometheus workspace. Read-only.

The stacks come from :mod:`fmcluster.aws.stackstate` (which ``destroy`` reads too); :data:`CLUSTERS` is the aws
stage's table of the orchestrators' cluster readers (:mod:`fmcluster.orchestrators`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fmcluster.aws import alerts as alerts_api
from fmcluster.aws import hyperpod, hyperpod_eks, parallelcluster, pcs, selfmanaged
from fmcluster.aws.nodes import ClusterStatus
from fmcluster.aws.stackstate import StackState, all_stacks
from fmcluster.contracts import PROMETHEUS_WORKSPACE_OUTPUT, stack_name
from fmcluster.plan import Plan

# --- the cluster, per orchestrator ----------------------------------------------------------------

ClusterReader = Callable[[Callable[[str], Any], Plan, StackState], ClusterStatus]
"""(clients: service name -> boto3 client, the plan, the ``NAME-cluster`` stack) -> the cluster's status."""

CLUSTERS: dict[str, ClusterReader] = {
    "none": selfmanaged.cluster_status,
    "parallelcluster": parallelcluster.cluster_status,
    "hyperpod": hyperpod.cluster_status,
    "pcs": pcs.cluster_status,
    "hyperpod-eks": hyperpod_eks.cluster_status,
}
"""The aws stage's table of orchestrators (:mod:`fmcluster.orchestrators`): how each reads its cluster."""


@dataclass(frozen=True)
class ProjectStatus:
    project: str
    region: str
    stacks: list[tuple[StackState, bool]]
    cluster: ClusterStatus | None
    """None when the cluster stack is not deployed."""
    alerts: alerts_api.AlertsStatus | None
    """None without a Prometheus workspace (observability off, or its stack not deployed)."""

    @property
    def healthy(self) -> bool:
        stacks_ok = all(state.ok for state, built in self.stacks if built)
        return (stacks_ok and self.cluster is not None and self.cluster.healthy
                and (self.alerts is None or not self.alerts.firing))

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, "healthy": self.healthy, "project": self.project, "region": self.region,
                "stacks": [{**s.as_dict(), "in_project": built} for s, built in self.stacks],
                "cluster": self.cluster.as_dict() if self.cluster else None,
                "alerts": self.alerts.as_dict() if self.alerts else None}


def project_status(clients: Callable[[str], Any], plan: Plan, region: str, alerts: alerts_api.AlertsReader,
                   ) -> ProjectStatus:
    """Stacks, cluster and alerts of ``plan``'s project. ``alerts`` reads a workspace's firing alerts (signed HTTP:
    :func:`fmcluster.aws.alerts.reader`)."""
    stacks = all_stacks(clients("cloudformation"), plan)
    by_name = {state.name: state for state, _ in stacks}
    cluster_stack = by_name[stack_name(plan.project, "cluster")]
    cluster = CLUSTERS[plan.cluster.orchestrator](clients, plan, cluster_stack) if cluster_stack.deployed else None
    observability = by_name.get(stack_name(plan.project, "observability"))
    workspace = observability.outputs.get(PROMETHEUS_WORKSPACE_OUTPUT) if observability else None
    return ProjectStatus(plan.project, region, stacks, cluster, alerts(workspace) if workspace else None)
