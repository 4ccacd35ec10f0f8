"""``fmcluster plan`` for people: a plan that fits an 80-column terminal, or boxed tables with ``--wide``.

Both views show the same sections (compute, one node of each type, EFA and addresses with the network
lines, storage with its advice, scheduler, monitoring, cost); ``--wide`` draws the tables boxed, one line
per cell, and the FSx figures as one table. No cell is ever cut: columns fold rather than end in an
ellipsis, and ``--wide`` printed to something that is not a terminal (a pipe, a CI log) widens to its
widest table instead of folding. Figures come from the plan and the catalog; a figure FACTS.md marks
unconfirmed is shown as ``unconfirmed``, never guessed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from fmcluster import catalog
from fmcluster.cli.plancost import live_lookup, print_cost, print_summary
from fmcluster.cli.planservices import associations_data, print_services
from fmcluster.cli.plantext import (
    UNCONFIRMED,
    UNITS,
    hbm_tb,
    num,
    row,
    settings,
    share,
    table,
)
from fmcluster.generate.costs import project_cost
from fmcluster.plan import Plan
from fmcluster.plan.storage import SCRATCH_2_THROUGHPUT, duration_text, pin_advice

if TYPE_CHECKING:  # the Price List side path loads only with --prices
    from fmcluster.aws.pricing import Quote

_num, _row, _settings, _hbm_tb = num, row, settings, hbm_tb


def print_plan(the_plan: Plan, console: Console, *, wide: bool = False, quote: Quote | None = None,
               capacity_offers: object = None, live_note: str | None = None) -> None:
    """The plan for a person; ``quote`` holds the prices that ``--prices`` read (None: offline, and ``live_note``
    says why when ``--prices`` could not read them)."""
    parts: list[RenderableType] = []
    _headline(the_plan, parts)
    _compute(the_plan, parts, wide)
    _nodes(the_plan, parts, wide)
    _network(the_plan, parts, wide)
    _storage(the_plan, parts, wide)
    width = console.width
    if wide and not console.is_terminal:  # a pipe or a file: widen to the widest table, never fold a cell
        tables = [p for p in parts if isinstance(p, Table) and p.box is not None]
        console.width = max([width] + [console.measure(t, options=console.options.update_width(10_000)).maximum
                                       for t in tables])
    try:
        for part in parts:
            console.print(part)
        print_services(the_plan, console)
        print_summary(project_cost(the_plan, live_lookup(quote)), console, quote, live_note)
        print_cost(the_plan, console, quote, capacity_offers)
    finally:
        console.width = width


def _table(title: str, *columns: str, left: tuple[str, ...] = (), wide: bool = False) -> Table:
    return table(title, *columns, left=left, wide=wide)


def _headline(p: Plan, parts: list[RenderableType]) -> None:
    parts.append(Text(f"{p.project} in {p.availability_zone_id}", style="bold"))
    parts.append(Text(f"{p.nodes:,} nodes, {p.gpus:,} GPUs, {_num(p.bf16_pflops)} PF BF16 dense, "
                      f"{_hbm_tb(p.hbm_gb)} TB HBM; OS {p.cluster.driver.image_os or p.cluster.os_facts.name}"))
    parts.append(Text())


def _compute(p: Plan, parts: list[RenderableType], wide: bool) -> None:
    table = _table("compute groups", "group", "type", "nodes", "capacity", "GPUs", "BF16 PF", "HBM TB",
                   left=("group", "type", "capacity"), wide=wide)
    for g in p.groups:
        _row(table, g.name, g.instance_type, f"{g.count:,}", g.capacity, f"{g.gpus:,} {g.gpu_model}",
             _num(g.bf16_pflops), _hbm_tb(g.hbm_gb))
    if len(p.groups) > 1:
        table.add_section()
        _row(table, "total", "", f"{p.nodes:,}", "", f"{p.gpus:,}", _num(p.bf16_pflops), _hbm_tb(p.hbm_gb))
    parts += [table, Text()]


def _nodes(p: Plan, parts: list[RenderableType], wide: bool) -> None:
    table = _table("one node of each type", "type", "GPUs", "HBM GB", "TB/s/GPU", "vCPU / GiB", "NVMe TB",
                   left=("type",), wide=wide)
    unconfirmed = False
    for name in dict.fromkeys(g.instance_type for g in p.groups):
        t = catalog.get(name)
        host = (UNCONFIRMED if t.vcpus is None or t.memory_gib is None else f"{t.vcpus} / {t.memory_gib:,}")
        cells = (f"{t.gpus} {t.gpu_model}", _num(t.gpu_memory_total_gb, "{:,.0f}"),
                 _num(t.hbm_bandwidth_tbps_per_gpu, "{:,.2f}"), host,
                 _num(None if t.local_nvme_total_gb is None else t.local_nvme_total_gb / 1000, "{:,.2f}"))
        unconfirmed |= UNCONFIRMED in cells
        _row(table, name, *cells)
    parts.append(table)
    if unconfirmed:
        parts.append(Text("unconfirmed: FACTS.md has no source for it; see DescribeInstanceTypes", style="dim"))
    parts.append(Text())


def _network(p: Plan, parts: list[RenderableType], wide: bool) -> None:
    table = _table("EFA and addresses", "group", "interfaces/node", "EFA Gbps", "of spec", "IPs/node", "IPs",
                   "PG", left=("group", "PG"), wide=wide)
    for g in p.groups:
        placed = "new" if g.placement_group else ("own" if g.existing_placement_group else
                                                  "no" if p.cluster.driver.placement_groups else "-")
        _row(table, g.name, f"1 ENA + {g.efa_interfaces} EFA", f"{g.efa_gbps_exposed:,.0f}/{g.efa_gbps_spec:,}",
             f"{g.efa_fraction:.0%}", str(g.ips_per_node), f"{g.ips:,}", placed)
    parts.append(table)
    parts.append(Text("PG: cluster placement group. new: made for on-demand nodes; own: the reservation's own "
                      "group, by name; no: a capacity block (already placed) or a reservation made without one "
                      "(a new group would be unrelated to it)" if p.cluster.driver.placement_groups else
                      f"PG: {p.cluster.orchestrator} launches the instances and takes no placement group",
                      style="dim"))
    parts.append(Text())
    net = p.network
    lines = _settings("network")
    if net.vpc_cidr:
        public = f", public subnet {net.public_subnet_cidr} (NAT gateway)" if net.public_subnet_cidr else ""
        _row(lines, "VPC", f"{net.vpc_cidr}{public}")
    size = "size unknown" if net.ips_usable is None else f"{net.ips_usable:,} usable"
    _row(lines, "compute subnet", f"{net.compute_subnet_cidr or 'imported'}: {size}, {net.ips_needed:,} needed "
                                  f"(/{net.smallest_prefix_that_fits} would fit)")
    for note in net.address_notes:  # how the orchestrator counted its nodes' addresses (EKS: EFA and pod addresses)
        _row(lines, "addresses", note)
    zone = net.local_zone
    if zone is not None:
        _row(lines, "Local Zone", f"nodes in {zone.zone_id} ({zone.name}); the NAT gateway, FSx, the endpoints "
                                  f"and a head node in its parent zone {zone.parent_zone_id}")
        _row(lines, "services subnet", f"{net.services_subnet_cidr} in {zone.parent_zone_id}")
    if net.database_subnet_cidrs:
        _row(lines, "database subnets", f"{', '.join(net.database_subnet_cidrs)}: the accounting database, in the "
                                        "Region's first two Availability Zones (RDS needs two)")
    parts += [lines, Text()]


def _storage(p: Plan, parts: list[RenderableType], wide: bool) -> None:
    st = p.storage
    if not st.fsx:
        parts += [Text("storage: no FSx for Lustre"), Text()]
        return
    if not st.created:
        parts += [Text("storage: an existing FSx for Lustre file system (its size is not planned here); its "
                       "security groups must admit the nodes on TCP 988 and 1018-1023"), Text()]
        return
    lines = _settings("FSx for Lustre")
    if wide:
        parts.append(_storage_table(p))
        lines.title = None
    tier = f"{st.throughput_per_tib or SCRATCH_2_THROUGHPUT} MB/s per TiB"
    if not wide:
        _row(lines, "file system", f"{st.deployment_type}, {st.capacity_gib:,} GiB"
                                   + (" (sized by the planner)" if st.sized_by_planner else ""))
        _row(lines, "throughput", f"{tier} = {st.aggregate_mb_s / 1000:,.2f} GB/s; "
                                  f"{_num(st.per_gpu_mb_s, '{:,.1f}')} MB/s per GPU when all read at once")
    if st.sized_by_planner:
        _row(lines, "pin it", pin_advice(st.capacity_gib))
    bound = p.checkpoint_bound
    if st.checkpoint_bytes is not None and st.write_seconds is not None:
        if not wide:
            _row(lines, "checkpoint", f"{st.checkpoint_bytes / 10**12:,.2f} TB (storage.checkpoint)")
            met = "met" if st.meets_target else "missed"
            _row(lines, "write, restore", f"{duration_text(st.write_seconds)} each; target "
                                          f"{duration_text(st.target_write_seconds or 0)} ({met})")
        _goodput(p, lines)
    elif bound is not None:
        if not wide:
            _row(lines, "checkpoint", f"at most {bound.bytes / 10**12:,.2f} TB: all GPU memory, an upper bound "
                                      "(describe the model in storage.checkpoint for an estimate)")
            over = "over" if bound.too_slow else "within"
            _row(lines, "write, restore", f"up to {duration_text(bound.write_seconds)} each ({over} the "
                                          f"{duration_text(bound.limit_seconds)} limit)")
        if bound.too_slow or bound.per_gpu_low:
            if bound.suggested_capacity_gib is not None:
                tier = (f" at {bound.suggested_throughput_per_tib} MB/s per TiB"
                        if bound.suggested_throughput_per_tib else "")
                _row(lines, "would meet it", f"{bound.suggested_capacity_gib:,} GiB{tier} (the smallest; "
                                             "see warning fsx-throughput-low)")
            else:
                _row(lines, "would meet it", f"no size allowed: {bound.suggestion_unreachable}")
    for a in associations_data(st, p.project):
        _row(lines, "association", "\n".join(a["words"]))
    if lines.row_count:
        parts.append(lines)
    parts += [Text(UNITS, style="dim"), Text()]


def _storage_table(p: Plan) -> Table:
    """``--wide``: the FSx figures in one row, times as durations."""
    st = p.storage
    table = _table("FSx for Lustre", "type", "capacity GiB", "MB/s per TiB", "aggregate GB/s", "per GPU MB/s",
                   "checkpoint", "write", "restore", "target", left=("type",), wide=True)
    bound = p.checkpoint_bound
    target = "-" if st.target_write_seconds is None else duration_text(st.target_write_seconds)
    if st.checkpoint_bytes is not None and st.write_seconds is not None:
        checkpoint, write = f"{st.checkpoint_bytes / 10**12:,.2f} TB", st.write_seconds
        target += " (met)" if st.meets_target else " (missed)"
    elif bound is not None:  # no checkpoint section: the GPU-memory bound, marked as one
        checkpoint, write = f"<= {bound.bytes / 10**12:,.2f} TB (all HBM)", bound.write_seconds
        target = f"{duration_text(bound.limit_seconds)} limit ({'over' if bound.too_slow else 'within'})"
    else:
        checkpoint, write = "-", None
    _row(table, st.deployment_type or "", f"{st.capacity_gib:,}" + (" (planned)" if st.sized_by_planner else ""),
         str(st.throughput_per_tib or SCRATCH_2_THROUGHPUT), f"{st.aggregate_mb_s / 1000:,.2f}",
         _num(st.per_gpu_mb_s, "{:,.1f}"), checkpoint, "-" if write is None else duration_text(write),
         "-" if write is None else duration_text(write), target)
    return table


def _goodput(p: Plan, lines: Table) -> None:
    """With storage.checkpoint.interval_minutes: the share of wall time checkpoints take (fmcluster.plan.goodput)."""
    g = p.goodput
    if g is None:
        return
    _row(lines, "checkpoint time", f"{share(g.write_share)} of wall time writing: {duration_text(g.write_seconds)} "
                                   f"every {duration_text(g.interval_seconds)}")
    if g.failures_per_day is not None:
        assert g.restore_share is not None and g.redo_share is not None
        _row(lines, "after failures", f"{g.failures_per_day:,.2f} node failures a day over {p.nodes:,} nodes: "
                                      f"{share(g.restore_share)} restoring ({duration_text(g.restore_seconds)} "
                                      f"each), {share(g.redo_share)} redoing lost work (half an interval each)")
    limit = f"{g.limit:.0%}"
    verdict = f"over {limit}: see warning checkpoint-time-share" if g.over_limit else f"within {limit}"
    _row(lines, "checkpoint share", f"{share(g.share)} writing"
         + (" and restoring" if g.restore_share is not None else "") + f" ({verdict})")
    if g.suggested_capacity_gib is not None:
        tier = f" at {g.suggested_throughput_per_tib} MB/s per TiB" if g.suggested_throughput_per_tib else ""
        _row(lines, f"under {limit}", f"from {g.suggested_capacity_gib:,} GiB{tier} (the smallest file system)")
    else:
        _row(lines, f"under {limit}", f"no size allowed: {g.suggestion_unreachable}")
