"""Zone checks: Local Zones fmcluster knows how to lay out, and capacity offered where the project puts it."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.facts import LOCAL_ZONES
from fmcluster.plan import Plan

ULTRASERVER_ZONES = {"p6e-gb200.36xlarge": ("use1-dfw2-az1",)}
"""Zones where capacity blocks of an UltraServer type are known to be offered (FACTS.md section 1: the
Dallas Local Zone). A capacity block launches only in its own zone."""


def _is_local_zone_id(zone_id: str) -> bool:
    return zone_id.count("-") == 2


@check("local-zone-known", "error")
def _local_zone_known(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    zone = loaded.project.availability_zone_id
    if _is_local_zone_id(zone) and zone not in LOCAL_ZONES:
        yield Finding(("availability_zone_id",),
                      f"{zone!r} is a Local Zone fmcluster does not know: it cannot tell which parent zone holds the "
                      "NAT gateway, FSx and the endpoints",
                      f"known Local Zones: {', '.join(LOCAL_ZONES)}; or use the parent Availability Zone")


@check("local-zone-network", "error")
def _local_zone_network(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    project = loaded.project
    zone = LOCAL_ZONES.get(project.availability_zone_id)
    if zone is None:
        return
    if project.network.existing is not None:
        yield Finding(("network", "existing"),
                      f"in a Local Zone ({zone.name}) FSx and the endpoints need a subnet in the parent zone "
                      f"{zone.parent_zone_id}; an existing network gives fmcluster only the compute subnet",
                      "let fmcluster create the network (vpc_cidr), or deploy the compute nodes in a regular zone")
    if plan.storage.efa_field is not None:
        yield Finding(plan.storage.efa_field,
                      f"FSx lives in the parent zone {zone.parent_zone_id} and EFA traffic does not leave a zone: "
                      "the nodes in the Local Zone could only reach it over TCP",
                      "leave efa_enabled off for a Local Zone project")


@check("ultraserver-zone", "warning")
def _ultraserver_zone(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    zone = loaded.project.availability_zone_id
    for i, group in enumerate(loaded.project.compute_groups):
        offered = ULTRASERVER_ZONES.get(group.instance_type)
        if offered and group.capacity.type == "capacity-block" and zone not in offered:
            yield Finding(("availability_zone_id",),
                          f"{group.instance_type} capacity blocks are offered in {', '.join(offered)}, not {zone}; "
                          "a capacity block launches only in its own zone",
                          f"set availability_zone_id: {offered[0]} (a Local Zone: opt in to it first), or check "
                          "`aws ec2 describe-capacity-block-offerings` and suppress this warning")
