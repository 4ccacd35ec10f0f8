"""The plan: pure numbers derived from a project and the catalog. No CDK, no AWS.

Stacks take plan sections, never raw YAML, so what ``fmcluster plan`` prints is what
``cdk synth`` builds.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import asdict, dataclass
from typing import Literal

from fmcluster import catalog
from fmcluster.config import ComputeGroup, Project
from fmcluster.storage.planner import StoragePlan, plan_storage

AWS_RESERVED_PER_SUBNET = 5
"""AWS keeps the first four and the last address of every subnet."""

MIN_DERIVED_COMPUTE_PREFIX = 22
"""A derived compute subnet is never smaller than /22, so modest growth never replaces it."""

PUBLIC_SUBNET_PREFIX = 24

InterfaceType = Literal["interface", "efa", "efa-only"]


@dataclass(frozen=True)
class NetworkInterface:
    """One entry of a launch template's NetworkInterfaces."""

    card: int
    device: int
    type: InterfaceType

    @property
    def needs_ip(self) -> bool:
        # efa-only interfaces take no IPv4 address (AWS, 2024-10-28).
        return self.type != "efa-only"

    @property
    def carries_efa(self) -> bool:
        return self.type in ("efa", "efa-only")


def efa_layout(instance: catalog.InstanceType) -> tuple[NetworkInterface, ...]:
    """The interfaces that expose all of an instance's EFA bandwidth with one IP per node.

    ENA primary on card 0 device 0; ``efa-only`` on card 0 device 1 where card 0 carries
    EFA; ``efa-only`` on device 0 of every other card (FACTS.md section 1).
    """
    interfaces = [NetworkInterface(0, 0, "interface")]
    if instance.card0_carries_efa:
        interfaces.append(NetworkInterface(0, 1, "efa-only"))
    interfaces.extend(NetworkInterface(card, 0, "efa-only") for card in range(1, instance.network_cards))
    return tuple(interfaces)


@dataclass(frozen=True)
class GroupPlan:
    name: str
    instance_type: str
    count: int
    capacity: str
    reservation_id: str | None
    placement_group: bool
    interfaces: tuple[NetworkInterface, ...]
    ips_per_node: int
    gpus: int
    gpu_model: str
    bf16_pflops: float | None
    """Dense BF16 peak of the whole group; None when the catalog does not know the per-GPU figure."""
    hbm_gb: float | None
    efa_interfaces: int
    efa_gbps_exposed: float
    efa_gbps_spec: int
    architecture: str

    @property
    def efa_fraction(self) -> float:
        """Share of the instance's EFA bandwidth that the layout exposes (1.0 = all of it)."""
        return self.efa_gbps_exposed / self.efa_gbps_spec

    @property
    def ips(self) -> int:
        return self.ips_per_node * self.count


@dataclass(frozen=True)
class NetworkPlan:
    existing: bool
    vpc_cidr: str | None
    public_subnet_cidr: str | None
    compute_subnet_cidr: str | None
    compute_subnet_prefix: int | None
    ips_needed: int
    """Addresses the compute subnet must hold: nodes x IPs per node, plus headroom and reserved."""
    ips_usable: int | None
    """Addresses a subnet of that size offers (AWS keeps 5); None for an imported subnet of unknown size."""
    smallest_prefix_that_fits: int


@dataclass(frozen=True)
class Plan:
    project: str
    availability_zone_id: str
    groups: tuple[GroupPlan, ...]
    network: NetworkPlan
    storage: StoragePlan

    @property
    def nodes(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def gpus(self) -> int:
        return sum(g.gpus for g in self.groups)

    @property
    def bf16_pflops(self) -> float | None:
        values = [g.bf16_pflops for g in self.groups]
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)

    @property
    def hbm_gb(self) -> float | None:
        values = [g.hbm_gb for g in self.groups]
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)

    def group(self, name: str) -> GroupPlan:
        return next(g for g in self.groups if g.name == name)

    def as_dict(self) -> dict:
        data = asdict(self)
        for group, plan in zip(data["groups"], self.groups):
            group["efa_fraction"] = plan.efa_fraction
            group["ips"] = plan.ips
        data["storage"]["units"] = {"MB": "10^6 bytes", "GB": "10^9 bytes", "TB": "10^12 bytes",
                                    "GiB": "2^30 bytes", "TiB": "2^40 bytes"}
        data["totals"] = {"nodes": self.nodes, "gpus": self.gpus, "bf16_pflops": self.bf16_pflops, "hbm_gb": self.hbm_gb}
        return data


def uses_placement_group(group: ComputeGroup) -> bool:
    """``auto`` means a cluster placement group, except for capacity blocks (already placed)."""
    if group.placement_group == "auto":
        return group.capacity.type != "capacity-block"
    return bool(group.placement_group)


def plan_group(group: ComputeGroup) -> GroupPlan:
    instance = catalog.get(group.instance_type)
    interfaces = efa_layout(instance)
    efa_count = sum(1 for i in interfaces if i.carries_efa)
    per_node_hbm = instance.gpu_memory_total_gb
    per_node_bf16 = instance.bf16_dense_pflops
    return GroupPlan(
        name=group.name,
        instance_type=group.instance_type,
        count=group.count,
        capacity=group.capacity.type,
        reservation_id=getattr(group.capacity, "reservation_id", None),
        placement_group=uses_placement_group(group),
        interfaces=interfaces,
        ips_per_node=sum(1 for i in interfaces if i.needs_ip),
        gpus=instance.gpus * group.count,
        gpu_model=instance.gpu_model,
        bf16_pflops=None if per_node_bf16 is None else per_node_bf16 * group.count,
        hbm_gb=None if per_node_hbm is None else per_node_hbm * group.count,
        efa_interfaces=efa_count,
        efa_gbps_exposed=efa_count * instance.efa_gbps_per_interface,
        efa_gbps_spec=instance.efa_aggregate_gbps,
        architecture=instance.architecture,
    )


def ips_needed(project: Project, groups: tuple[GroupPlan, ...]) -> int:
    node_ips = sum(g.ips for g in groups)
    headroom = math.ceil(node_ips * project.network.ip_headroom_percent / 100)
    return node_ips + headroom + project.network.reserved_ips


def smallest_prefix_for(ips: int) -> int:
    """The longest prefix (smallest subnet) whose usable addresses hold ``ips``; never below /28."""
    prefix = 28
    while prefix > 0 and 2 ** (32 - prefix) - AWS_RESERVED_PER_SUBNET < ips:
        prefix -= 1
    return prefix


def usable(prefix: int) -> int:
    return 2 ** (32 - prefix) - AWS_RESERVED_PER_SUBNET


def carve_subnets(vpc_cidr: str, compute_prefix: int) -> tuple[str | None, str | None]:
    """Public subnet: the VPC's first /24. Compute: the first aligned block of its size after it.

    Both depend only on the VPC CIDR and the compute prefix, so the addresses stay put as
    long as those do. Returns ``(None, None)`` when they do not fit in the VPC.
    """
    vpc = ipaddress.IPv4Network(vpc_cidr)
    public_prefix = max(PUBLIC_SUBNET_PREFIX, vpc.prefixlen + 1)
    if public_prefix > 28 or compute_prefix <= vpc.prefixlen:
        return None, None
    public = next(vpc.subnets(new_prefix=public_prefix))
    for block in vpc.subnets(new_prefix=compute_prefix):
        if not block.overlaps(public):
            return str(public), str(block)
    return str(public), None


def plan_network(project: Project, groups: tuple[GroupPlan, ...]) -> NetworkPlan:
    net = project.network
    needed = ips_needed(project, groups)
    fits = smallest_prefix_for(needed)
    if net.existing is not None:
        cidr = net.existing.compute_subnet_cidr
        prefix = ipaddress.IPv4Network(cidr).prefixlen if cidr else None
        return NetworkPlan(
            existing=True,
            vpc_cidr=None,
            public_subnet_cidr=None,
            compute_subnet_cidr=cidr,
            compute_subnet_prefix=prefix,
            ips_needed=needed,
            ips_usable=usable(prefix) if prefix is not None else None,
            smallest_prefix_that_fits=fits,
        )
    prefix = net.compute_subnet_prefix if net.compute_subnet_prefix is not None else min(fits, MIN_DERIVED_COMPUTE_PREFIX)
    public, compute = carve_subnets(net.vpc_cidr, prefix)
    return NetworkPlan(
        existing=False,
        vpc_cidr=net.vpc_cidr,
        public_subnet_cidr=public,
        compute_subnet_cidr=compute,
        compute_subnet_prefix=prefix,
        ips_needed=needed,
        ips_usable=usable(prefix),
        smallest_prefix_that_fits=fits,
    )


def make_plan(project: Project) -> Plan:
    """Everything the stacks need to know, computed once. Call after the checks pass."""
    groups = tuple(plan_group(g) for g in project.compute_groups)
    return Plan(
        project=project.name,
        availability_zone_id=project.availability_zone_id,
        groups=groups,
        network=plan_network(project, groups),
        storage=plan_storage(project.storage, sum(g.gpus for g in groups)),
    )
