"""``fmcluster capacity search``: EC2 Capacity Block offerings (``DescribeCapacityBlockOfferings``), priced.

Offerings come sorted by start, then by price, each with its total (the upfront fee) and its price per
GPU-hour (fee / (GPUs x hours), GPUs from the catalog), and its zone ID: capacity is per zone, and a
project names its zone by ID. Nothing is bought here: the command prints how to buy an offering
(``aws ec2 purchase-capacity-block``) and the ``capacity:`` block to paste into the project file.

Durations (FACTS.md section 2): 1 to 14 days in 1-day steps, then 7-day steps up to 182 days.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from fmcluster import catalog
from fmcluster.aws.session import AwsSession, is_account_problem
from fmcluster.facts import LOCAL_ZONES

MAX_DAYS = 182


class CapacityError(RuntimeError):
    """The search could not be made (bad arguments, or the API refused what was asked)."""


def valid_days(days: int) -> bool:
    return 1 <= days <= 14 or (14 < days <= MAX_DAYS and days % 7 == 0)


@dataclass(frozen=True)
class Offer:
    offering_id: str
    instance_type: str
    instance_count: int
    zone: str
    zone_id: str | None
    start: datetime
    end: datetime
    hours: int
    upfront_fee: float
    currency: str
    ultraserver_type: str | None
    ultraserver_count: int | None
    gpus: int | None
    """GPUs in the offering (catalog GPUs per instance x instances); None for a type the catalog lacks."""

    @property
    def per_gpu_hour(self) -> float | None:
        return self.upfront_fee / (self.gpus * self.hours) if self.gpus and self.hours else None

    def purchase_command(self, region: str) -> str:
        return (f"aws ec2 purchase-capacity-block --region {region} --capacity-block-offering-id {self.offering_id} "
                "--instance-platform Linux/UNIX")

    def capacity_yaml(self, group: str = "train") -> str:
        """What to paste into the project file once the block is bought (its reservation ID comes from the purchase)."""
        zone = self.zone_id or f"<the zone ID of {self.zone}>"
        return (f"availability_zone_id: {zone}\n"
                "compute_groups:\n"
                f"  - name: {group}\n"
                f"    instance_type: {self.instance_type}\n"
                f"    count: {self.instance_count}\n"
                "    capacity:\n"
                "      type: capacity-block\n"
                "      reservation_id: cr-...   # CapacityReservationId from purchase-capacity-block\n")

    def as_dict(self, region: str) -> dict[str, Any]:
        return {"offering_id": self.offering_id, "instance_type": self.instance_type,
                "instance_count": self.instance_count, "availability_zone": self.zone, "availability_zone_id": self.zone_id,
                "start": self.start.isoformat(), "end": self.end.isoformat(), "hours": self.hours,
                "upfront_fee": self.upfront_fee, "currency": self.currency, "gpus": self.gpus,
                "per_gpu_hour": self.per_gpu_hour, "ultraserver_type": self.ultraserver_type,
                "ultraserver_count": self.ultraserver_count, "purchase": self.purchase_command(region),
                "capacity_yaml": self.capacity_yaml()}


def make_client(session: AwsSession) -> Any:
    """The EC2 client of the command's session (tests replace this with a Stubber-backed one)."""
    return session.client("ec2")


def zone_ids(ec2: Any) -> dict[str, str]:
    """Zone name -> zone ID for every zone of the Region, Local Zones included (names differ per account)."""
    zones = ec2.describe_availability_zones(AllAvailabilityZones=True)["AvailabilityZones"]
    return {z["ZoneName"]: z["ZoneId"] for z in zones}


def search(ec2: Any, instance_type: str, count: int, days: int, *, start_after: datetime | None = None,
           end_before: datetime | None = None, ultraserver_type: str | None = None,
           ultraserver_count: int | None = None) -> list[Offer]:
    """The offerings that match, earliest first, then cheapest."""
    if not valid_days(days):
        raise CapacityError(f"{days} days is not a capacity block duration (hint: 1 to 14 days, or a multiple of 7 "
                            f"up to {MAX_DAYS})")
    if (ultraserver_type is None) != (ultraserver_count is None):
        raise CapacityError("--ultraserver and --ultraserver-count go together")
    args: dict[str, Any] = {"CapacityDurationHours": days * 24}
    if ultraserver_type:
        args.update(UltraserverType=ultraserver_type, UltraserverCount=ultraserver_count)
    else:
        args.update(InstanceType=instance_type, InstanceCount=count)
    if start_after:
        args["StartDateRange"] = start_after
    if end_before:
        args["EndDateRange"] = end_before
    found: list[dict] = []
    try:
        while True:
            page = ec2.describe_capacity_block_offerings(**args)
            found += page.get("CapacityBlockOfferings", [])
            if not page.get("NextToken"):
                break
            args["NextToken"] = page["NextToken"]
        names = zone_ids(ec2) if found else {}
    except ClientError as exc:
        if is_account_problem(exc):
            raise  # credentials, permissions, throttling: the session's translation words it
        raise CapacityError(f"cannot search capacity blocks: {exc}") from None
    offers = [_offer(o, names) for o in found]
    return sorted(offers, key=lambda o: (o.start, o.upfront_fee, o.offering_id))


def _offer(o: dict, names: dict[str, str]) -> Offer:
    zone = o.get("AvailabilityZone", "")
    segment_ids = {s.get("AvailabilityZoneId") for s in o.get("CapacityBlockOfferingSegments", [])} - {None}
    local = next((z.zone_id for z in LOCAL_ZONES.values() if z.name == zone), None)
    zone_id = names.get(zone) or (segment_ids.pop() if len(segment_ids) == 1 else None) or local
    itype = o.get("InstanceType", "")
    known = catalog.CATALOG.get(itype)
    return Offer(
        offering_id=o["CapacityBlockOfferingId"], instance_type=itype, instance_count=o.get("InstanceCount", 0),
        zone=zone, zone_id=zone_id, start=o["StartDate"], end=o["EndDate"],
        hours=o.get("CapacityBlockDurationHours", 0), upfront_fee=float(o.get("UpfrontFee", "0") or 0),
        currency=o.get("CurrencyCode", "USD"), ultraserver_type=o.get("UltraserverType"),
        ultraserver_count=o.get("UltraserverCount"), gpus=known.gpus * o.get("InstanceCount", 0) if known else None,
    )
