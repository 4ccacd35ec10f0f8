"""The plan's cost section: per hour running, per month idle, per month after destroy, from the dated table of list
prices (:mod:`fmcluster.prices`, no AWS call); with ``plan --prices``, the Price List's figures for the instances and
the file system laid over it (:func:`live_lookup`), and their per-hour and per-day table as before."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from fmcluster.cli.plantext import row, table
from fmcluster.plan import Plan
from fmcluster.plan.cost import (
    BY_USE,
    ESTIMATE,
    MISSING,
    PRICED,
    PURCHASE,
    CostItem,
    CostSummary,
)
from fmcluster.prices import PRICE_DATE, PRICE_REGION, ListPrice, PriceLookup, lookup

if TYPE_CHECKING:  # the Price List side path loads only with --prices
    from fmcluster.aws.pricing import Quote

LIVE_NOT_READ = f"live prices were not read, the cost shows {PRICE_REGION} list prices of {PRICE_DATE}"
"""The one line ``plan --prices`` prints (on stderr, after ``warning:``) when the Price List could not be read."""
MARKS = {MISSING: "?", PURCHASE: "offer", BY_USE: "by use"}

BLOCK_PRICED = ("capacity-block", "training-plan")
"""Capacity bought as an offering: its price is the offering's, not an hourly rate."""


def live_lookup(quote: Quote | None) -> PriceLookup | None:
    """The table's prices of the quoted Region, with the Price List's figures for the quoted instance types
    (EC2, SageMaker HyperPod) and file system over them; None without a quote (the plan's Region's table)."""
    if quote is None:
        return None
    table = lookup(quote.region)
    live: dict[str, ListPrice] = {}
    source = f"AWS Price List API, {quote.region}"
    for itype, price in quote.instances.items():
        if price is not None:
            live[f"ec2.{itype}"] = ListPrice(price.usd, "hour", f"{itype} on-demand (Linux)", source, price.fetched)
    for itype, price in quote.sagemaker.items():
        if price is not None:
            live[f"sagemaker.{itype}"] = ListPrice(price.usd, "hour", f"{itype} SageMaker HyperPod", source,
                                                   price.fetched)
    if quote.fsx is not None and quote.fsx_tier is not None:
        live[f"fsx.lustre.persistent2.{quote.fsx_tier}"] = ListPrice(
            quote.fsx.usd, "GB-month", f"FSx for Lustre PERSISTENT_2, {quote.fsx_tier} MB/s per TiB", source,
            quote.fsx.fetched)
    return lambda key: live.get(key) or table(key)


def _figure(item: CostItem | None, fmt: str = "{:,.2f}") -> str:
    if item is None:
        return "-"
    if item.usd is not None and item.status in (PRICED, ESTIMATE):
        return ("~" if item.status == ESTIMATE else "") + fmt.format(item.usd)
    return MARKS[item.status]


def _total(items: tuple[CostItem, ...]) -> str:
    more = "+" if CostSummary.unpriced(items) else ""
    about = "~" if CostSummary.estimated(items) else ""
    return f"{about}{CostSummary.total(items):,.2f}{more}"


def print_summary(cost: CostSummary, console: Console, quote: Quote | None, live_note: str | None) -> None:
    """The three figures, itemised: one row per item, its hourly share while running, its month idle and after
    destroy; ``?`` where the table has no figure, ``offer`` where an offering sets the price."""
    t = table("cost (USD)", "item", "basis", "running /h", "idle /month", "destroyed /month",
              left=("item", "basis"))
    names = list(dict.fromkeys(i.item for i in (*cost.running_per_hour, *cost.idle_per_month,
                                                *cost.after_destroy_per_month)))
    running = {i.item: i for i in cost.running_per_hour}
    idle = {i.item: i for i in cost.idle_per_month}
    kept = {i.item: i for i in cost.after_destroy_per_month}
    for name in names:
        basis = (idle.get(name) or running.get(name) or kept[name]).basis
        row(t, name, basis, _figure(running.get(name)), _figure(idle.get(name)), _figure(kept.get(name)))
    t.add_section()
    row(t, "total", "~: estimates in it; +: and offers", _total(cost.running_per_hour), _total(cost.idle_per_month),
        _total(cost.after_destroy_per_month))
    console.print(t)
    notes = [f"prices: {cost.price_region} list prices of {cost.price_date} (fmcluster.prices, each with its source)"]
    estimated = sorted({i.key or i.item for items in (cost.running_per_hour, cost.idle_per_month,
                                                      cost.after_destroy_per_month)
                        for i in items if i.status == ESTIMATE})
    if estimated:
        notes.append(f"~: estimates (AWS's figure unconfirmed, or a quantity the plan estimates; "
                     f"fmcluster/prices.json says how): {', '.join(estimated)}")
    if cost.project_region != cost.price_region:
        where = (f"the project is in {cost.project_region}" if cost.project_region else
                 "the project names no region")
        notes.append(f"{where}: prices differ by Region; `plan --prices` reads the Region's own")
    if quote is not None:
        notes.append(f"instances (EC2, SageMaker) and FSx: the AWS Price List's {quote.region} prices where it has "
                     "them")
    elif live_note is None:
        notes.append("live prices: `plan --prices` reads the project Region's on-demand prices from the AWS Price List")
    missing = sorted({i.key or i.item for items in (cost.running_per_hour, cost.idle_per_month,
                                                    cost.after_destroy_per_month)
                      for i in items if i.status == MISSING})
    if missing:
        notes.append(f"?: not in the table: {', '.join(missing)}")
    notes.append(f"idle: what bills with no job running; running /h: every GPU node, plus the idle month over "
                 f"{cost.hours_per_month} h; destroyed: what `destroy` keeps (`destroy` prices what it finds the same "
                 "way); by use: billed by what is stored or sent, not added")
    for warning in cost.warnings:
        console.print(Text(f"warning: {warning}", style="yellow"))
    for note in notes:
        console.print(Text(note, style="dim"))
    console.print()


def print_cost(p: Plan, console: Console, quote: Quote | None, capacity_offers: object) -> None:
    """The Price List's per-hour and per-day table (``--prices`` only)."""
    if quote is None:
        return
    hours_per_month = quote.hours_per_month
    t = table(f"cost in {quote.region} (on-demand, USD)", "item", "billed as", "USD/hour", "USD/day",
                   left=("item", "billed as"))
    total: float | None = 0.0
    fetched: set[str] = set()
    notes: list[str] = []
    for g in p.groups:
        price = quote.sagemaker.get(f"ml.{g.instance_type}") or quote.instances.get(g.instance_type)
        if g.capacity in BLOCK_PRICED:
            row(t, g.name, f"{g.capacity} offering", "offering", "offering")
            notes.append(f"{g.name}: priced by its {g.capacity} offering, left out of the total")
            continue
        if price is None:
            row(t, g.name, f"{g.count} x {g.instance_type}", "not found", "not found")
            notes.append(f"{g.instance_type}: the Price List has no Linux on-demand price in {quote.region}")
            total = None
            continue
        fetched.add(price.fetched)
        hourly = price.usd * g.count
        basis = f"{g.count} x {price.usd:,.2f}/h" + (" (ODCR)" if g.capacity == "reservation" else "")
        row(t, g.name, basis, f"{hourly:,.2f}", f"{hourly * 24:,.2f}")
        total = None if total is None else total + hourly
    st = p.storage
    if st.created and st.capacity_gib:
        if quote.fsx is not None:
            fetched.add(quote.fsx.fetched)
            hourly = st.capacity_gib * quote.fsx.usd / hours_per_month
            row(t, "FSx", f"{st.capacity_gib:,} GiB x {quote.fsx.usd:g}/GB-month", f"{hourly:,.2f}",
                 f"{hourly * 24:,.2f}")
            total = None if total is None else total + hourly
        else:
            row(t, "FSx", "not found", "not found", "not found")
            notes.append(f"FSx: {quote.fsx_note}")
            total = None
    t.add_section()
    row(t, "total", "", "-" if total is None else f"{total:,.2f}", "-" if total is None else f"{total * 24:,.2f}")
    console.print(t)
    if any(g.capacity == "reservation" for g in p.groups):
        notes.append("ODCR: billed at the on-demand rate while active, used or not")
    notes.append(f"FSx per hour = GB-month price / {hours_per_month} h")
    notes.append("not included: metadata IOPS, backups, S3, data transfer, NAT, observability")
    if capacity_offers is None and any(g.capacity == "capacity-block" for g in p.groups):
        notes.append("capacity-block term: priced by its offering (`fmcluster capacity search`)")
    when = ", ".join(sorted(fetched)) or "-"
    notes.append(f"prices: AWS Price List API, read {when}")
    notes.append(f"cached in {quote.cache}")
    for note in notes:
        console.print(Text(note, style="dim"))
