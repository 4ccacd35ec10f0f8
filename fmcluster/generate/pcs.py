"""The plan's scheduler section of an AWS PCS project, as data (``plan -o json``); the text rows are
:func:`fmcluster.cli.planpcs.scheduler_rows`. What the cluster is made of lives in :mod:`fmcluster.plan.pcs`,
re-exported here for the stack and the diagram."""

from __future__ import annotations

from fmcluster.config.pcs import LOGIN, SIZE_NODES
from fmcluster.orchestrators import DiagramPart, SlurmTarget
from fmcluster.plan import ClusterPlan, Plan
from fmcluster.plan.pcs import (
    MAX_NODE_GROUPS,
    MAX_QUEUES,
    PURCHASE_OPTION,
    NodeGroup,
    Queue,
    image,
    min_count,
    name_prefix,
    node_count,
    node_groups,
    queues,
    size,
    smallest_size,
)


__all__ = ["MAX_NODE_GROUPS", "MAX_QUEUES", "PURCHASE_OPTION", "NodeGroup", "Queue", "image", "min_count",
           "name_prefix", "node_count", "node_groups", "queues", "scheduler_data", "size", "smallest_size",
           "diagram_part", "slurm_targets"]


def scheduler_data(plan: Plan) -> dict:
    """The plan's scheduler section for PCS (``plan -o json``)."""
    cluster = plan.cluster
    pcs = cluster.pcs
    login = pcs.login
    return {
        "type": "pcs", "cluster_name": f"{name_prefix(cluster)}-{size(cluster)[0].lower()}-<subnet ID>",
        "created_by_cdk_deploy": True, "slurm_version": pcs.slurm_version, "size": size(cluster),
        "nodes": node_count(cluster), "size_nodes": SIZE_NODES[size(cluster)],
        "scaledown_idle_seconds": pcs.scaledown_idle_seconds,
        "login_nodes": None if login is None else {"count": login.count, "instance_type": login.instance_type},
        "node_groups": [{"name": n.name, "instance_type": n.instance_type, "min_count": n.min_count,
                         "max_count": n.max_count, "purchase_option": n.purchase_option,
                         "ami_id": image(cluster, cluster.group(n.group) if n.group else None)}
                        for n in node_groups(cluster)],
        "queues": [{"name": q.name, "node_groups": list(q.groups)} for q in queues(cluster)],
    }


def diagram_part(plan: Plan) -> DiagramPart:
    """PCS's managed controller (in the services subnet) and the login node group."""
    cluster = plan.cluster
    pcs = cluster.pcs
    name = f"{name_prefix(cluster)}-{size(cluster)[0].lower()}-<subnet ID>"
    nodes = [("head", "head-node", f"AWS PCS controller (managed)\n{name}\nSlurm {pcs.slurm_version}, {size(cluster)}")]
    services = ["head"]
    edges = [("head", f"group:{g.name}", "slurm", "queue") for g in plan.groups]
    if pcs.login is not None:
        nodes.append(("login", "login", f"login node group\n{pcs.login.count} x {pcs.login.instance_type}"))
        services.append("login")
        edges.append(("login", "head", "slurm", "sbatch"))
    return DiagramPart(nodes, edges, services)


def slurm_targets(cluster: ClusterPlan) -> dict[str, SlurmTarget]:
    """Each compute group's queue (one node group each). PCS turns on Slurm's GPU autodetection on node groups with
    GPUs and merges a GPU record derived from the instance type into gres.conf (PCS user guide, "Release notes for
    Slurm versions in AWS PCS" and "Configuring custom GRES settings"; API ComputeNodeGroupSlurmConfiguration), so
    jobs ask for ``--gpus-per-node``."""
    return {q.groups[0]: SlurmTarget(q.name, None, True) for q in queues(cluster)
            if q.groups and q.groups[0] != LOGIN}
