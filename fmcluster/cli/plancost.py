"""The plan's cost section: on-demand prices that ``plan --prices`` read from the AWS Price List API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from fmcluster.cli.plantext import row, table
from fmcluster.plan import Plan

if TYPE_CHECKING:  # the Price List side path loads only with --prices
    from fmcluster.aws.pricing import Quote

BLOCK_PRICED = ("capacity-block", "training-plan")
"""Capacity bought as an offering: its price is the offering's, not an hourly rate."""


def print_cost(p: Plan, console: Console, quote: Quote | None, capacity_offers: object) -> None:
    if quote is None:
        console.print(Text("cost: prices need --prices (reads on-demand prices from the AWS Price List API)"))
        return
    hours_per_month = quote.hours_per_month
    t = table(f"cost in {quote.region} (on-demand, USD)", "item", "billed as", "USD/hour", "USD/day",
                   left=("item", "billed as"))
    total: float | None = 0.0
    fetched: set[str] = set()
    notes: list[str] = []
    for g in p.groups:
        price = quote.instances.get(g.instance_type)
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
