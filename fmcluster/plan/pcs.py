"""What an AWS PCS cluster is made of: its name, size, node groups and queues. The checks, the stack
(:mod:`fmcluster.stacks.pcs`, through :mod:`fmcluster.generate.pcs`), the plan text and the diagram read these.

- one compute node group per compute group, named after it, launched from the group's own EFA launch template;
  its queue (the Slurm partition) has the same name;
- a login node group (``login``), in no queue;
- the cluster's ``Size`` is the smallest that manages every node (FACTS.md section 5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fmcluster.config.pcs import LOGIN, NAME_PREFIX_MAX, SIZE_NODES
from fmcluster.plan.costparts import FixedNode, OrchestratorCost

if TYPE_CHECKING:  # pragma: no cover
    from fmcluster.plan.cluster import ClusterPlan
    from fmcluster.plan.groups import GroupPlan

MAX_NODE_GROUPS = 10
MAX_QUEUES = 10
"""AWS PCS quotas per cluster, not adjustable (FACTS.md section 5, PCS user guide "Service quotas"); the login
node group counts as a node group."""

PURCHASE_OPTION = {"on-demand": "ONDEMAND", "reservation": "ONDEMAND", "capacity-block": "CAPACITY_BLOCK"}
"""``PurchaseOption`` by ``capacity.type``. A reservation is on-demand capacity that the launch template targets
(``CapacityReservationSpecification``); a capacity block also needs ``MarketType: capacity-block`` in the launch
template (PCS user guide "Configure an AWS PCS compute node group to use a Capacity Block")."""


@dataclass(frozen=True)
class NodeGroup:
    """One ``AWS::PCS::ComputeNodeGroup``."""

    name: str
    instance_type: str
    min_count: int
    max_count: int
    purchase_option: str
    group: str | None
    """The compute group it launches (None for the login group)."""


@dataclass(frozen=True)
class Queue:
    """One ``AWS::PCS::Queue`` (a Slurm partition) and the node groups it sends jobs to."""

    name: str
    groups: tuple[str, ...]


def name_prefix(cluster: ClusterPlan) -> str:
    """How the cluster's name starts: ``cluster_name``, or the project name cut to fit (no trailing hyphen)."""
    return cluster.pcs.cluster_name or cluster.project[:NAME_PREFIX_MAX].rstrip("-")


def name_start(cluster: ClusterPlan) -> str:
    """The cluster's name up to the compute subnet's ID, which the stack appends: ``PREFIX-<size letter>-``. A change
    of Size or subnet (both create-only) so comes with a new name."""
    return f"{name_prefix(cluster)}-{size(cluster)[0].lower()}-"


def node_count(cluster: ClusterPlan) -> int:
    """Every node PCS manages: the compute groups at full size and the login nodes."""
    login = cluster.pcs.login
    return sum(g.count for g in cluster.groups) + (login.count if login is not None else 0)


def smallest_size(nodes: int) -> str | None:
    """The smallest ``Size`` that manages ``nodes``; None beyond the largest."""
    return next((size for size, most in SIZE_NODES.items() if nodes <= most), None)


def size(cluster: ClusterPlan) -> str:
    """The cluster's ``Size``: as set, or the smallest that manages every node (LARGE when none does: the
    ``pcs-size`` check refuses that project before synthesis)."""
    return cluster.pcs.size or smallest_size(node_count(cluster)) or "LARGE"


def min_count(cluster: ClusterPlan, group: GroupPlan) -> int:
    """Static nodes of a compute group: as set, else 0 on demand and the whole group on reserved capacity."""
    wanted = cluster.pcs.group(group.name).min_count
    if wanted is not None:
        return wanted
    return 0 if group.capacity == "on-demand" else group.count


def node_groups(cluster: ClusterPlan) -> list[NodeGroup]:
    """The compute groups' node groups in file order, then the login group."""
    out = [NodeGroup(g.name, g.instance_type, min_count(cluster, g), g.count,
                     PURCHASE_OPTION.get(g.capacity, "ONDEMAND"), g.name) for g in cluster.groups]
    login = cluster.pcs.login
    if login is not None:
        out.append(NodeGroup(LOGIN, login.instance_type, login.count, login.count, "ONDEMAND", None))
    return out


def queues(cluster: ClusterPlan) -> list[Queue]:
    """One queue per compute group, named after it (the login group is in none)."""
    return [Queue(g.name, (g.name,)) for g in cluster.groups]


def image(cluster: ClusterPlan, group: GroupPlan | None) -> str | None:
    """A node group's image: the compute group's own, else ``ami_id``; the login group's ``login_ami_id``, else
    ``ami_id``. None when there is none (the ``pcs-ami`` check refuses that)."""
    pcs = cluster.pcs
    if group is None:
        return pcs.login_ami_id or pcs.ami_id
    return group.ami_id or pcs.ami_id


def cost_parts(cluster: ClusterPlan) -> OrchestratorCost:
    """The login node group (always at its count), the static nodes, and PCS's fee for the cluster's controller,
    by ``Size`` (AWS PCS pricing page), billed while the cluster exists."""
    login = cluster.pcs.login
    nodes = () if login is None else (FixedNode("login nodes", f"ec2.{login.instance_type}", login.count),)
    return OrchestratorCost(nodes=nodes, fees=((f"PCS {size(cluster)} controller", f"pcs.{size(cluster).lower()}"),),
                            static={g.name: min_count(cluster, g) for g in cluster.groups})
