"""The plan text's scheduler rows of an AWS PCS project (the data: :func:`fmcluster.generate.pcs.scheduler_data`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fmcluster.cli.plantext import row

if TYPE_CHECKING:  # pragma: no cover
    from rich.table import Table

    from fmcluster.plan import Plan


def scheduler_rows(plan: Plan, data: dict, lines: Table) -> None:
    """The same section as text rows."""
    idle = data["scaledown_idle_seconds"]
    row(lines, "Slurm", f"AWS PCS cluster {data['cluster_name']}, Slurm {data['slurm_version']}, created by cdk "
                        f"deploy; size {data['size']} (up to {data['size_nodes']} nodes, {data['nodes']} planned)")
    row(lines, "idle nodes", f"stopped after {idle} s idle" if idle else "stopped after PCS's default idle time")
    if data["login_nodes"] is not None:
        row(lines, "login nodes", f"{data['login_nodes']['count']} x {data['login_nodes']['instance_type']}")
    groups = {n["name"]: n for n in data["node_groups"]}
    for queue in data["queues"]:
        nodes = ", ".join(f"{groups[g]['max_count']} x {groups[g]['instance_type']} ({groups[g]['min_count']} "
                          f"static, {groups[g]['purchase_option']})" for g in queue["node_groups"])
        row(lines, f"queue {queue['name']}", nodes)
