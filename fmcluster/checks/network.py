"""Network checks: the zone is in the Region, the subnets fit the VPC and hold the nodes' addresses."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

import ipaddress

from fmcluster.checks.registry import Finding, check
from fmcluster.config import neighbours
from fmcluster.config.loader import LoadedProject, projects_dir
from fmcluster.facts import AZ_ID_REGIONS, az_id_prefix, zone_region_prefix
from fmcluster.plan import Plan


@check("compute-subnet-fits-vpc", "error")
def _subnet_in_vpc(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    net = plan.network
    if not net.existing and net.compute_subnet_cidr is None:
        loc = ("network", "compute_subnet_prefix") if loaded.project.network.compute_subnet_prefix else ("network", "vpc_cidr")
        yield Finding(loc,
            f"a /{net.compute_subnet_prefix} compute subnet and a public subnet do not both fit in {net.vpc_cidr}",
            f"use a larger vpc_cidr (e.g. a /{max(16, (net.compute_subnet_prefix or 17) - 1)}) or a smaller compute subnet",
        )


@check("compute-subnet-size", "error")
def _subnet_size(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    net = plan.network
    if net.ips_usable is None or net.ips_needed <= net.ips_usable:
        return
    p = loaded.project.network
    node_ips = net.node_ips
    loc = ("network", "existing", "compute_subnet_cidr") if net.existing else ("network", "compute_subnet_prefix")
    what = "the existing subnet" if net.existing else "the compute subnet"
    yield Finding(loc,
        f"{what} (/{net.compute_subnet_prefix}) has {net.ips_usable} usable addresses but the plan needs "
        f"{net.ips_needed} ({node_ips} node IPs + {p.ip_headroom_percent}% headroom + {p.reserved_ips} reserved)",
        f"a /{net.smallest_prefix_that_fits} would fit: set compute_subnet_prefix: {net.smallest_prefix_that_fits}"
        if not net.existing else f"use a subnet of /{net.smallest_prefix_that_fits} or larger, or fewer nodes",
    )


@check("existing-subnet-size-unknown", "warning")
def _existing_size_unknown(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if plan.network.existing and plan.network.ips_usable is None:
        yield Finding(("network", "existing"),
            f"cannot check that the existing subnet holds the {plan.network.ips_needed} addresses the plan needs",
            "add compute_subnet_cidr to the existing network so the plan can check it",
        )



@check("availability-zone-id-known", "error")
def _zone_id_known(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """The AZ ID's prefix names a Region (``use1`` in use1-az6); a typo would find no capacity anywhere."""
    zone = loaded.project.availability_zone_id
    prefix = zone_region_prefix(zone)
    if prefix not in AZ_ID_REGIONS:
        near = difflib.get_close_matches(prefix, AZ_ID_REGIONS, n=3, cutoff=0.5)
        suggestion = f"did you mean {', '.join(f'{n}-az… ({AZ_ID_REGIONS[n]})' for n in near)}? " if near else ""
        yield Finding(("availability_zone_id",),
                      f"{zone!r}: {prefix!r} is the AZ-ID prefix of no AWS Region",
                      f"{suggestion}`aws ec2 describe-availability-zones --region REGION` lists the ZoneId of each zone")


@check("availability-zone-in-region", "error")
def _zone_in_region(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """With both set, the zone must be one of the Region's: stacks deploy to the Region, the nodes to the zone."""
    project = loaded.project
    zone_region = AZ_ID_REGIONS.get(zone_region_prefix(project.availability_zone_id))
    if project.region and zone_region and zone_region != project.region:
        yield Finding(("region",),
                      f"Region {project.region} does not contain availability_zone_id {project.availability_zone_id}, "
                      f"which is in {zone_region}",
                      f"set region: {zone_region}, or an AZ ID of {project.region} "
                      f"({az_id_prefix(project.region)}-az1, ...)")


@check("vpc-cidr-shared", "warning")
def _vpc_cidr_shared(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Two projects of one projects folder whose VPCs overlap cannot be peered or routed to each other (and
    ``fmcluster new`` never makes them so). Only the projects folder counts: examples share CIDRs on purpose."""
    network = loaded.project.network
    if network.existing is not None or loaded.file is None or loaded.file.parent.resolve() != projects_dir().resolve():
        return
    mine = ipaddress.IPv4Network(network.vpc_cidr)
    others = [name for name, cidr in neighbours.vpc_cidrs(loaded.file.parent, loaded.file) if cidr.overlaps(mine)]
    if others:
        yield Finding(("network", "vpc_cidr"),
                      f"{network.vpc_cidr} overlaps the VPC of {', '.join(others)} in {loaded.file.parent}: the two "
                      "networks cannot be peered or routed to each other later",
                      "give each project its own range (`fmcluster new` picks a free one), or ignore this if they "
                      "never meet (suppress_warnings: [vpc-cidr-shared])")
