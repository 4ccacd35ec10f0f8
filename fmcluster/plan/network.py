"""The network: how many addresses the compute subnet needs, and where the subnets go."""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass

from fmcluster.config.network import Network
from fmcluster.facts import LOCAL_ZONES, LocalZone
from fmcluster.plan.groups import GroupPlan

AWS_RESERVED_PER_SUBNET = 5
"""AWS keeps the first four and the last address of every subnet."""

MIN_DERIVED_COMPUTE_PREFIX = 22
"""A derived compute subnet is never smaller than /22, so modest growth never replaces it."""

PUBLIC_SUBNET_PREFIX = 24

DATABASE_SUBNET_PREFIX = 28
"""The two subnets of the Slurm accounting database: RDS needs a DB subnet group in at least two Availability Zones
(RDS User Guide, "Working with a DB instance in a VPC"), and one Aurora writer needs a handful of addresses."""
DATABASE_SUBNETS = 2


@dataclass(frozen=True)
class NetworkPlan:
    existing: bool
    vpc_cidr: str | None
    public_subnet_cidr: str | None
    compute_subnet_cidr: str | None
    compute_subnet_prefix: int | None
    ips_needed: int
    """Addresses the compute subnet must hold: nodes x IPs per node, plus headroom and reserved."""
    node_ips: int
    """Addresses the nodes take, before headroom and reserved: every group's nodes x IPs per node, plus what the
    orchestrator's other nodes take (HyperPod EKS's system group)."""
    ips_usable: int | None
    """Addresses a subnet of that size offers (AWS keeps 5); None for an imported subnet of unknown size."""
    smallest_prefix_that_fits: int
    services_zone_id: str
    """Where the NAT gateway, FSx, interface endpoints and a head node go: the compute zone itself, or the
    parent Availability Zone of a Local Zone (which does not offer them)."""
    services_subnet_cidr: str | None
    """A private subnet in the parent zone of a Local Zone for those services; None in a regular zone."""
    database_subnet_cidrs: tuple[str, ...] | None
    """The accounting database's two subnets (``orchestrator.accounting`` with ``store: database``): the VPC's last
    two /28s, so turning accounting on moves no existing subnet. Empty when no database is needed (or the network
    is imported); None when they do not fit beside the others (the ``accounting-database-subnets`` check)."""
    # What NAME-network builds besides the numbers (not in `plan -o json`).
    project: str
    availability_zone_id: str
    spec: Network
    """The ``network:`` section as validated."""
    address_notes: tuple[str, ...] = ()
    """How the orchestrator counted its nodes' addresses, with the sources of the figures (printed by the plan)."""

    @property
    def local_zone(self) -> LocalZone | None:
        return LOCAL_ZONES.get(self.availability_zone_id)

    @property
    def vpc_id(self) -> str | None:
        """The existing VPC's ID, or None when fmcluster creates the VPC."""
        return self.spec.existing.vpc_id if self.spec.existing else None

    @property
    def existing_subnet_id(self) -> str | None:
        return self.spec.existing.compute_subnet_id if self.spec.existing else None


def ips_needed(net: Network, groups: tuple[GroupPlan, ...], other_ips: int = 0) -> int:
    """``other_ips``: addresses nodes outside ``groups`` take (an orchestrator's system nodes)."""
    node_ips = sum(g.ips for g in groups) + other_ips
    headroom = math.ceil(node_ips * net.ip_headroom_percent / 100)
    return node_ips + headroom + net.reserved_ips


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


def carve_local_zone_subnets(vpc_cidr: str, compute_prefix: int) -> tuple[str | None, str | None, str | None]:
    """A Local Zone project: the public subnet and a services subnet (both in the parent zone) are the
    VPC's first two /24s; the compute subnet (in the Local Zone) is the first aligned block after them."""
    vpc = ipaddress.IPv4Network(vpc_cidr)
    if vpc.prefixlen > PUBLIC_SUBNET_PREFIX - 2 or compute_prefix <= vpc.prefixlen:
        return None, None, None
    public, services = list(vpc.subnets(new_prefix=PUBLIC_SUBNET_PREFIX))[:2]
    for block in vpc.subnets(new_prefix=compute_prefix):
        if not (block.overlaps(public) or block.overlaps(services)):
            return str(public), str(services), str(block)
    return str(public), str(services), None


def last_blocks(vpc: ipaddress.IPv4Network, prefix: int, count: int) -> list[ipaddress.IPv4Network]:
    """The last ``count`` aligned /``prefix`` blocks of ``vpc`` (fewer if it holds fewer), as
    ``list(vpc.subnets(new_prefix=prefix))[-count:]`` gives them, without making every block before them (4,096 /28s
    in a /16)."""
    if prefix < vpc.prefixlen or prefix > vpc.max_prefixlen:
        return list(vpc.subnets(new_prefix=prefix))[-count:]  # ipaddress's own error for a prefix that cannot be
    size = 2 ** (vpc.max_prefixlen - prefix)
    total = 2 ** (prefix - vpc.prefixlen)
    start = int(vpc.network_address)
    return [ipaddress.IPv4Network((start + i * size, prefix)) for i in range(max(total - count, 0), total)]


def carve_database_subnets(vpc_cidr: str, taken: tuple[str | None, ...]) -> tuple[str, ...] | None:
    """The VPC's last two /28s, for the accounting database. Carved from the end so that neither the public, services
    nor compute subnet (carved from the start) moves when accounting is turned on or off; None if one of them
    reaches that far (or is itself uncarved)."""
    if any(cidr is None for cidr in taken):
        return None
    vpc = ipaddress.IPv4Network(vpc_cidr)
    blocks = last_blocks(vpc, DATABASE_SUBNET_PREFIX, DATABASE_SUBNETS)
    used = [ipaddress.IPv4Network(cidr) for cidr in taken if cidr is not None]
    if any(block.overlaps(other) for block in blocks for other in used):
        return None
    return tuple(str(block) for block in blocks)


def plan_network(project: str, availability_zone_id: str, net: Network, groups: tuple[GroupPlan, ...],
                 database: bool = False, other_ips: int = 0, address_notes: tuple[str, ...] = ()) -> NetworkPlan:
    """``database``: the project's Slurm accounting records live in a database fmcluster creates (two more subnets).
    ``other_ips``, ``address_notes``: see :func:`ips_needed` and :attr:`NetworkPlan.address_notes`."""
    needed = ips_needed(net, groups, other_ips)
    fits = smallest_prefix_for(needed)
    local_zone = LOCAL_ZONES.get(availability_zone_id)
    services_zone = local_zone.parent_zone_id if local_zone else availability_zone_id
    common = dict(ips_needed=needed, node_ips=sum(g.ips for g in groups) + other_ips, smallest_prefix_that_fits=fits,
                  services_zone_id=services_zone, project=project, availability_zone_id=availability_zone_id, spec=net,
                  address_notes=address_notes)
    if net.existing is not None:
        cidr = net.existing.compute_subnet_cidr
        prefix = ipaddress.IPv4Network(cidr).prefixlen if cidr else None
        return NetworkPlan(
            existing=True,
            vpc_cidr=None,
            public_subnet_cidr=None,
            compute_subnet_cidr=cidr,
            compute_subnet_prefix=prefix,
            ips_usable=usable(prefix) if prefix is not None else None,
            services_subnet_cidr=None,
            database_subnet_cidrs=(),  # network.existing.database_subnet_ids names them
            **common,
        )
    prefix = net.compute_subnet_prefix if net.compute_subnet_prefix is not None else min(fits, MIN_DERIVED_COMPUTE_PREFIX)
    services = None
    if local_zone is not None:
        public, services, compute = carve_local_zone_subnets(net.vpc_cidr, prefix)
    else:
        public, compute = carve_subnets(net.vpc_cidr, prefix)
    taken = (public, compute) + ((services,) if local_zone is not None else ())
    databases = carve_database_subnets(net.vpc_cidr, taken) if database else ()
    return NetworkPlan(
        existing=False,
        vpc_cidr=net.vpc_cidr,
        public_subnet_cidr=public,
        compute_subnet_cidr=compute,
        compute_subnet_prefix=prefix,
        ips_usable=usable(prefix),
        services_subnet_cidr=services,
        database_subnet_cidrs=databases,
        **common,
    )
