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
from fmcluster.aws.stackstate import StackState, all_stacks, stack_states
from fmcluster.contracts import PROMETHEUS_WORKSPACE_OUTPUT, STACKS, stack_name
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
    cluster_not_read: str | None = None
    """Why the cluster was not read though its stack is deployed: its orchestrator and compute groups come from the
    project file, which is missing or does not validate (:mod:`fmcluster.cli.deployed`)."""

    @property
    def healthy(self) -> bool:
        stacks_ok = all(state.ok for state, built in self.stacks if built)
        return (stacks_ok and self.cluster is not None and self.cluster.healthy
                and (self.alerts is None or not self.alerts.firing))

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, "healthy": self.healthy, "project": self.project, "region": self.region,
                "stacks": [{**s.as_dict(), "in_project": built} for s, built in self.stacks],
                "cluster": self.cluster.as_dict() if self.cluster else None,
                "cluster_not_read": self.cluster_not_read,
                "alerts": self.alerts.as_dict() if self.alerts else None}


def project_status(clients: Callable[[str], Any], plan: Plan | None, region: str, alerts: alerts_api.AlertsReader,
                   project: str | None = None, why_no_plan: str = "") -> ProjectStatus:
    """Stacks, cluster and alerts of ``plan``'s project. ``alerts`` reads a workspace's firing alerts (signed HTTP:
    :func:`fmcluster.aws.alerts.reader`). Without a plan (``project`` names it; ``why_no_plan`` says why): the
    deployed stacks, read by name, and the alerts; the cluster is not read (its reader needs the plan)."""
    name = plan.project if plan is not None else str(project)
    cfn = clients("cloudformation")
    if plan is not None:
        stacks = all_stacks(cfn, plan)
    else:
        stacks = [(state, True) for state in stack_states(cfn, [stack_name(name, kind) for kind in STACKS])
                  if state.deployed]
    by_name = {state.name: state for state, _ in stacks}
    cluster_stack = by_name.get(stack_name(name, "cluster"))
    cluster, not_read = None, None
    if cluster_stack is not None and cluster_stack.deployed:
        if plan is not None:
            cluster = CLUSTERS[plan.cluster.orchestrator](clients, plan, cluster_stack)
        else:
            not_read = f"{cluster_stack.name} is {cluster_stack.status}; its nodes are not read: {why_no_plan}"
    observability = by_name.get(stack_name(name, "observability"))
    workspace = observability.outputs.get(PROMETHEUS_WORKSPACE_OUTPUT) if observability else None
    return ProjectStatus(name, region, stacks, cluster, alerts(workspace) if workspace else None, not_read)
