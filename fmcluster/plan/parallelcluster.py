"""What a ParallelCluster cluster keeps running besides its jobs: the head node, the login pool, static nodes.

The cost of the plan (:mod:`fmcluster.plan.cost`) reads it through :data:`fmcluster.plan.cost.ORCHESTRATORS`;
``cluster.yaml`` (:mod:`fmcluster.generate.parallelcluster`) writes the same figures."""

from __future__ import annotations

from fmcluster.config.parallelcluster import DEFAULT_HEAD_NODE, DEFAULT_LOGIN_NODE
from fmcluster.plan.cluster import ClusterPlan
from fmcluster.plan.costparts import FixedNode, OrchestratorCost
from fmcluster.plan.groups import GroupPlan


def min_count(cluster: ClusterPlan, group: GroupPlan) -> int:
    """Static nodes: all of a capacity block or reservation (paid for anyway), none for on-demand,
    unless ``orchestrator.parallelcluster.static_nodes`` says otherwise (the parallelcluster-capacity
    check refuses fewer than all of a capacity block)."""
    if group.capacity == "capacity-block":
        return group.count
    override = cluster.pcluster.static_nodes.get(group.name)
    if override is not None:
        return override
    return group.count if group.capacity == "reservation" else 0


def head_node_type(cluster: ClusterPlan) -> str:
    """``HeadNode.InstanceType``: as set, else the default for the compute groups' one architecture."""
    return cluster.pcluster.head_node_instance_type or DEFAULT_HEAD_NODE[cluster.groups[0].architecture]


def login_node_type(cluster: ClusterPlan) -> str | None:
    """The login pool's ``InstanceType``; None without login nodes."""
    login = cluster.pcluster.login_nodes
    if login is None:
        return None
    return login.instance_type or DEFAULT_LOGIN_NODE[cluster.groups[0].architecture]


def cost_parts(cluster: ClusterPlan) -> OrchestratorCost:
    """The head node (and its root volume), the login pool and the static nodes; nothing when ``cdk deploy`` writes
    only cluster.yaml (``create_cluster: false``)."""
    if not cluster.driver.runs_slurm(cluster):
        return OrchestratorCost()
    pc = cluster.pcluster
    nodes = [FixedNode("head node", f"ec2.{head_node_type(cluster)}", 1, pc.head_node_root_volume_gib)]
    login_type = login_node_type(cluster)
    if pc.login_nodes is not None and login_type is not None:
        nodes.append(FixedNode("login nodes", f"ec2.{login_type}", pc.login_nodes.count))
    return OrchestratorCost(nodes=tuple(nodes), static={g.name: min_count(cluster, g) for g in cluster.groups})
