"""Capacity checks: reservations, capacity blocks, training plans, placement groups, UltraServers."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster import catalog
from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.facts import AZ_ID_REGIONS, zone_region_prefix
from fmcluster.orchestrators import ORCHESTRATORS
from fmcluster.plan import Plan

CAPACITY_BLOCK_MAX_INSTANCES = 64
"""EC2 Capacity Blocks hold up to 64 instances (FACTS.md section 2)."""
CAPACITY_BLOCK_SIZES = (1, 2, 4, 8, 16, 32, 64)
"""The instance counts a capacity block is sold in (EC2 User Guide, "Find and purchase Capacity Blocks":
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html, "For instance count 1, 2, 4, 8,
16, 32, or 64 instances"). UltraServer blocks are sold by the UltraServer (ultraserver-multiple says those)."""


@check("training-plan-needs-hyperpod", "error")
def _training_plan(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    able = [o.name for o in ORCHESTRATORS.values() if "training-plan" in o.capacity_types]
    for i, group in enumerate(loaded.project.compute_groups):
        if group.capacity.type == "training-plan" and "training-plan" not in plan.cluster.driver.capacity_types:
            yield Finding(("compute_groups", i, "capacity"),
                "a SageMaker training plan can only be used by a HyperPod cluster",
                f"set orchestrator.type: {' or '.join(able)}, or use a capacity-block or reservation",
            )


@check("placement-group-with-capacity-block", "warning")
def _pg_with_block(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    for i, group in enumerate(loaded.project.compute_groups):
        if group.capacity.type == "capacity-block" and group.placement_group is True:
            yield Finding(("compute_groups", i, "placement_group"),
                "a placement group with a capacity block can keep instances from launching; the block is already placed",
                "remove placement_group (auto leaves it off for capacity blocks)",
            )


@check("placement-group-with-reservation", "error")
def _pg_with_reservation(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    for i, group in enumerate(loaded.project.compute_groups):
        if group.capacity.type == "reservation" and group.placement_group is True:
            yield Finding(("compute_groups", i, "placement_group"),
                          "a reservation's instances launch into the placement group the reservation was made in, "
                          "not into a new one (ParallelCluster: PlacementGroupCapacityReservationValidator)",
                          "remove placement_group; if the reservation is in a cluster placement group, name it in "
                          "capacity.placement_group")


@check("capacity-block-size", "error")
def _block_size(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    for i, group in enumerate(loaded.project.compute_groups):
        if group.capacity.type == "capacity-block" and group.count > CAPACITY_BLOCK_MAX_INSTANCES:
            yield Finding(("compute_groups", i, "count"),
                f"a capacity block holds at most {CAPACITY_BLOCK_MAX_INSTANCES} instances, not {group.count}",
                "split the nodes into several groups, one per capacity block",
            )


@check("ultraserver-multiple", "warning")
def _ultraserver(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if not plan.cluster.driver.ultraserver_warning:
        return  # the orchestrator's own check says it once, in usable instances
    for i, group in enumerate(loaded.project.compute_groups):
        sizes = catalog.get(group.instance_type).ultraservers
        if sizes and all(group.count % u.instances for u in sizes):
            offers = ", ".join(f"{u.name} = {u.instances} instances" for u in sizes)
            yield Finding(("compute_groups", i, "count"),
                f"{group.instance_type} comes in UltraServers; {group.count} is not a whole number of them",
                f"use a multiple of an UltraServer ({offers})",
            )



@check("capacity-block-count", "warning")
def _block_count(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """A count no block is sold in: the block bought is larger, and the instances beyond the count are paid idle."""
    for i, group in enumerate(loaded.project.compute_groups):
        if (group.capacity.type != "capacity-block" or catalog.get(group.instance_type).ultraservers
                or group.count in CAPACITY_BLOCK_SIZES or group.count > CAPACITY_BLOCK_MAX_INSTANCES):
            continue
        larger = next(size for size in CAPACITY_BLOCK_SIZES if size > group.count)
        smaller = max(size for size in CAPACITY_BLOCK_SIZES if size < group.count)
        yield Finding(("compute_groups", i, "count"),
                      f"capacity blocks are sold in {', '.join(map(str, CAPACITY_BLOCK_SIZES))} instances, not "
                      f"{group.count}: a block of {larger} leaves {larger - group.count} paid instances idle",
                      f"set count: {larger} (the whole block) or {smaller}, or say why in suppress_warnings")


@check("training-plan-region", "error")
def _training_plan_region(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """A training plan's capacity is in its own Region: an instance group elsewhere cannot use it."""
    region = AZ_ID_REGIONS.get(zone_region_prefix(loaded.project.availability_zone_id))
    for i, group in enumerate(loaded.project.compute_groups):
        if group.capacity.type != "training-plan" or region is None:
            continue
        arn_region = group.capacity.arn.split(":")[3]
        if arn_region != region:
            yield Finding(("compute_groups", i, "capacity", "arn"),
                          f"the training plan is in {arn_region}, the project's zone "
                          f"{loaded.project.availability_zone_id} in {region}",
                          f"use a plan bought in {region} (`aws sagemaker list-training-plans --region {region}`), "
                          f"or an availability_zone_id of {arn_region}")
