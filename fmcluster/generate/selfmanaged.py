"""``orchestrator.type: none``: no scheduler. What the plan, the diagram and ``acceptance render`` say of it."""

from __future__ import annotations

from fmcluster.orchestrators import DiagramPart, SlurmTarget
from fmcluster.plan import ClusterPlan, Plan


def scheduler_data(plan: Plan) -> dict:
    """Launch templates only: their names."""
    return {"type": "none", "launch_templates": [f"{plan.project}-{g.name}" for g in plan.groups]}


def diagram_part(plan: Plan) -> DiagramPart:
    return DiagramPart([], [], [])


def slurm_targets(cluster: ClusterPlan) -> dict[str, SlurmTarget]:
    return {}  # no Slurm: the acceptance jobs are per-node scripts
