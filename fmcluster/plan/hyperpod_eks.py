"""What a HyperPod cluster on EKS keeps running besides its jobs: the EKS control plane (an hourly fee, AWS's list
price ``eks.cluster``, or ``eks.cluster.extended`` while the project's Kubernetes version is past its end of standard
support today: :mod:`fmcluster.eks_versions`), the system group, every GPU instance group at its count (HyperPod
keeps each group's instances up, jobs or not, as under Slurm), and the lifecycle-script bucket (retained)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from fmcluster import catalog, eks_versions
from fmcluster.catalog import HYPERPOD_PREFIX
from fmcluster.config.hyperpod_eks import SYSTEM
from fmcluster.plan.cluster import ClusterPlan
from fmcluster.plan.costparts import FixedNode, OrchestratorCost

EKS_FEE = "eks.cluster"
EKS_EXTENDED_FEE = "eks.cluster.extended"


def control_plane_fee(cluster: ClusterPlan, on: date | None = None) -> tuple[str, str]:
    """(what, price key) of the control plane's hourly fee on ``on`` (default today): the extended-support rate once
    the version left standard support (EKS bills it from that day, whatever the upgrade policy, until the cluster is
    on a version in standard support)."""
    version = cluster.hyperpod_eks.kubernetes_version
    if eks_versions.support(version, on) in ("extended", "ended"):
        return f"EKS control plane (Kubernetes {version}, extended support)", EKS_EXTENDED_FEE
    return f"EKS control plane (Kubernetes {version}, standard support)", EKS_FEE


def cost_parts(cluster: ClusterPlan) -> OrchestratorCost:
    system = cluster.hyperpod_eks.system_group
    nodes = (FixedNode("system group", f"sagemaker.{system.instance_type}", system.count, system.ebs_volume_gib),)
    return OrchestratorCost(nodes=nodes, fees=(control_plane_fee(cluster),),
                            static={g.name: g.count for g in cluster.groups},
                            instance_prefix=f"sagemaker.{HYPERPOD_PREFIX}", buckets=("HyperPod lifecycle scripts",))


# --- addresses: what a HyperPod EKS node takes from the compute subnet ---------------------------------------------

CNI_INTERFACES = 2
"""Interfaces on network card 0 whose addresses the Amazon VPC CNI holds on a node running pods, with its defaults:
``WARM_ENI_TARGET=1`` (``WARM_IP_TARGET`` and ``MINIMUM_IP_TARGET`` unset) keeps one whole interface of free addresses
beyond the pods' (aws/amazon-vpc-cni-k8s@b52188387f2e2f10bf289ace929d6a63b176a4fa README.md:277-287; docs/
eni-and-ip-target.md, example table: a p3dn.24xlarge with 3 pods holds 2 interfaces, 98 secondary addresses), so a
node whose pods fit in one interface's addresses holds two interfaces' worth, every address of each. The CNI manages
network card 0 only while ``ENABLE_MULTI_NIC`` is off, its default (pkg/ipamd/ipamd.go:292-302, 2080-2081), and
ignores efa-only interfaces, which have no address (pkg/awsutils/awsutils.go:771, 1756-1758)."""

SYSTEM_IPV4_PER_INTERFACE = {"ml.m5.large": 10, "ml.m5.xlarge": 15, "ml.m5.2xlarge": 15, "ml.m5.4xlarge": 30,
                             "ml.m5.8xlarge": 30, "ml.m5.12xlarge": 30, "ml.m5.16xlarge": 50, "ml.m5.24xlarge": 50}
"""IPv4 addresses per interface of the system group's usual types (EC2 DescribeInstanceTypes
``Ipv4AddressesPerInterface``, as moto's bundled copy has it: tests/plan/test_hyperpod_eks_addresses.py compares).
Another system type's pods are not counted, and the hyperpod-eks-addresses check says so."""


@dataclass(frozen=True)
class NodeAddresses:
    """The addresses one node of an instance group takes."""

    group: str
    nodes: int
    efa: int
    """EFA interfaces (type ``efa``) with an address outside card 0; efa-only interfaces take none (FACTS.md section
    1: AWS announcement of 2024-10-28)."""
    pods: int | None
    """Addresses the VPC CNI holds on card 0 (:data:`CNI_INTERFACES` interfaces, the node's own address among them);
    None when the type's addresses per interface are unknown: then only the node's own address is counted."""

    @property
    def per_node(self) -> int:
        return self.efa + (1 if self.pods is None else self.pods)


def node_addresses(cluster: ClusterPlan) -> tuple[NodeAddresses, ...]:
    """Every instance group's addresses per node: the GPU groups' (their EFA interfaces, the CNI's), the system
    group's (the CNI's)."""
    out = []
    for group in cluster.groups:
        kind = catalog.get(group.instance_type)
        efa_type = cluster.hyperpod_eks.group(group.name).interface_type == "efa"
        card0 = kind.max_enis_per_card[0] or CNI_INTERFACES
        efa_only_on_card0 = kind.card0_carries_efa and not efa_type  # a slot of card 0 without an address
        interfaces = min(CNI_INTERFACES, card0 - efa_only_on_card0)
        pods = None if kind.ipv4_per_interface is None else interfaces * kind.ipv4_per_interface
        # card 0's EFA interface (type efa) is one of the CNI's interfaces there, its address counted in `pods`
        efa = kind.max_efa_interfaces - kind.card0_carries_efa if efa_type else 0
        out.append(NodeAddresses(group.name, group.count, efa, pods))
    system = cluster.hyperpod_eks.system_group
    ipv4 = SYSTEM_IPV4_PER_INTERFACE.get(system.instance_type)
    out.append(NodeAddresses(SYSTEM, system.count, 0, None if ipv4 is None else CNI_INTERFACES * ipv4))
    return tuple(out)


def address_notes(addresses: tuple[NodeAddresses, ...]) -> tuple[str, ...]:
    """The plan's lines: per instance group, how its nodes' addresses add up."""
    lines = []
    for a in addresses:
        pods = "pods not counted (addresses per interface unknown), 1 node address" if a.pods is None else \
            f"{a.pods} held by the VPC CNI for pods ({CNI_INTERFACES} interfaces, its default warm pool)"
        efa = f" + {a.efa} EFA interfaces" if a.efa else ""
        lines.append(f"{a.group}: {a.nodes} x {a.per_node} ({pods}{efa}) = {a.nodes * a.per_node:,}")
    return tuple(lines)
