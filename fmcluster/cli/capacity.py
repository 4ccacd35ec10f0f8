"""``fmcluster capacity search``: capacity block offerings, earliest then cheapest, with the purchase command
and the ``capacity:`` block to paste. Calls EC2 (``DescribeCapacityBlockOfferings``); buys nothing."""

from __future__ import annotations

import difflib
import json
from datetime import datetime, timezone

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from fmcluster import catalog
from fmcluster.aws import INPUT_EXIT  # a bad argument: refused before any AWS call, like a bad project file
from fmcluster.cli.awserrors import account_errors
from fmcluster.cli.project import OUTPUT_OPT, Output

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
out = Console()
err = Console(stderr=True)



def _date(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a date like 2026-12-01 or 2026-12-01T12:00", param_hint=option) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def argument_problems(instance_type: str, start: datetime | None, end: datetime | None, ultraserver: str | None,
                      now: datetime, days: int | None = None) -> list[str]:
    """What is wrong with the arguments, in the user's words with a hint; checked before any AWS call."""
    problems = []
    if instance_type not in catalog.CATALOG:
        # A prefix (p6-b200) or a near spelling (p5.48xlarg); 0.78 keeps m5.large or trn2.48xlarge from being "near".
        near = [name for name in catalog.CATALOG if instance_type and name.startswith(instance_type + ".")] or \
            difflib.get_close_matches(instance_type, catalog.CATALOG, n=1, cutoff=0.78)
        hint = f"did you mean {near[0]!r}? " if near else ""
        problems.append(f"--instance-type {instance_type[:60]!r} is not in the catalog (hint: {hint}known types: "
                        f"{', '.join(catalog.CATALOG)})")
    elif ultraserver is not None:
        offered = [u.name for u in catalog.get(instance_type).ultraservers]
        if ultraserver not in offered:
            problems.append(f"--ultraserver {ultraserver[:60]!r} is not an UltraServer of {instance_type} (hint: "
                            + (f"one of {', '.join(offered)})" if offered else "leave --ultraserver out)"))
    from fmcluster.aws.capacity import MAX_DAYS, valid_days  # the durations' one statement (botocore loads here)

    if days is not None and not valid_days(days):
        near = sorted({d for d in (days - days % 7, days - days % 7 + 7, 14) if valid_days(d)},
                      key=lambda d: (abs(d - days), d))[:2]
        problems.append(f"--days {days} is not a capacity block duration (hint: 1 to 14 days, or a multiple of 7 up "
                        f"to {MAX_DAYS}; nearest: {' or '.join(map(str, sorted(near)))})")
    today = now.date().isoformat()
    for option, when in (("--start-after", start), ("--end-before", end)):
        if when is not None and when < now and when.date() < now.date():
            problems.append(f"{option} {when.date().isoformat()} is in the past (hint: today is {today} UTC; "
                            "give a later date, or leave --start-after out to search from now)")
    if start is not None and end is not None and end <= start:
        problems.append(f"--end-before {end:%Y-%m-%d %H:%M} is not after --start-after {start:%Y-%m-%d %H:%M} "
                        "(hint: the block must fit between them)")
    return problems


@app.command()
def search(
    instance_type: str = typer.Option(..., "--instance-type", help="e.g. p5en.48xlarge"),
    count: int = typer.Option(..., "--count", min=1, max=64, help="Instances in the block (up to 64)."),
    days: int = typer.Option(..., "--days", min=1, help="Length: 1 to 14 days, or a multiple of 7 up to 182."),
    start_after: str | None = typer.Option(None, "--start-after", help="Earliest start (ISO date, UTC)."),
    end_before: str | None = typer.Option(None, "--end-before", help="Latest end (ISO date, UTC)."),
    ultraserver: str | None = typer.Option(None, "--ultraserver", help="UltraServer type, e.g. u-p6e-gb200x72."),
    ultraserver_count: int | None = typer.Option(None, "--ultraserver-count", min=1, help="UltraServers in the block."),
    region: str | None = typer.Option(None, "--region", help="Default: AWS_REGION, AWS_DEFAULT_REGION, then your "
                                      "profile's region."),
    output: Output = OUTPUT_OPT,
) -> None:
    """Search EC2 Capacity Block offerings, earliest first, then cheapest, with total and per GPU-hour price.

    Prints the command that buys the first offering and the capacity: block to paste into the project file.
    Nothing is bought. Needs credentials. An instance type not in the catalog, or a date in the past, is
    refused first (exit 2), without calling AWS.

    Example: fmcluster capacity search --instance-type p5.48xlarge --count 4 --days 7 --start-after 2026-12-01
    """
    start, end = _date(start_after, "--start-after"), _date(end_before, "--end-before")
    problems = argument_problems(instance_type, start, end, ultraserver, _now(), days)
    for problem in problems:
        err.print(f"error: {problem}", highlight=False, markup=False, soft_wrap=True)
    if problems:
        raise typer.Exit(INPUT_EXIT)
    with account_errors(as_json=output is Output.json):
        # boto3 loads only for the commands that call AWS.
        from fmcluster.aws import capacity
        from fmcluster.aws.session import aws_session  # boto3, as above

        session = aws_session(region=region, command="capacity search")
        region = session.region
        try:
            with session.errors():
                offers = capacity.search(capacity.make_client(session), instance_type, count, days,
                                         start_after=start, end_before=end, ultraserver_type=ultraserver,
                                         ultraserver_count=ultraserver_count)
        except capacity.CapacityError as exc:
            err.print(f"error: {exc}", highlight=False, markup=False, soft_wrap=True)
            raise typer.Exit(1) from None
    if output is Output.json:
        print(json.dumps({"region": region, "offerings": [o.as_dict(region) for o in offers]}, indent=2))
        return
    if not offers:
        out.print(f"no capacity block offerings for {count} x {instance_type} for {days} days in {region} "
                  "(hint: move the dates, shorten the block, or try fewer instances or another Region)",
                  highlight=False, markup=False, soft_wrap=True)
        return
    table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="underline")
    for column in ("start (UTC)", "end (UTC)", "zone ID", "instances", "total", "per GPU-h", "offering"):
        table.add_column(column, justify="right" if column in ("instances", "total", "per GPU-h") else "left",
                         overflow="fold")
    for o in offers:
        per = "" if o.per_gpu_hour is None else f"{o.per_gpu_hour:,.2f}"
        kind = f"{o.instance_count} x {o.instance_type}"
        if o.ultraserver_type:
            kind += f" ({o.ultraserver_count} x {o.ultraserver_type})"
        table.add_row(*(Text(c) for c in (f"{o.start:%Y-%m-%d %H:%M}", f"{o.end:%Y-%m-%d %H:%M}",
                                          f"{o.zone_id or '?'} ({o.zone})", kind, f"{o.upfront_fee:,.2f} {o.currency}",
                                          per, o.offering_id)))
    out.print(table)
    first = offers[0]
    out.print("\nto buy the first (this charges the upfront fee):", highlight=False, markup=False)
    out.print(first.purchase_command(region), highlight=False, markup=False, soft_wrap=True)
    out.print("\nthen in the project file:", highlight=False, markup=False)
    out.print(first.capacity_yaml(), highlight=False, markup=False, end="")
