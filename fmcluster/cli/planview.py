"""``fmcluster plan`` for people: a plan that fits an 80-column terminal, or today's wide tables with ``--wide``.

Every table is built to fit 80 columns without cutting a number or a unit: short headers with
their units, one table per subject, and settings as ``key  value`` lines that wrap at words.
Figures come from the plan and the catalog; a figure FACTS.md marks unconfirmed is shown as
``unconfirmed``, never guessed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fmcluster import catalog
from fmcluster.config.parallelcluster import DEFAULT_HEAD_NODE, DEFAULT_LOGIN_NODE
from fmcluster.facts import AMP_ACTIVE_SERIES_QUOTA
from fmcluster.generate import hyperpod, metrics
from fmcluster.generate import parallelcluster as pcluster
from fmcluster.plan import Plan
from fmcluster.plan.associations import plan_associations
from fmcluster.plan.storage import SCRATCH_2_THROUGHPUT, duration_text, pin_advice

if TYPE_CHECKING:  # the Price List side path loads only with --prices
    from fmcluster.aws.pricing import Quote

UNITS = "MB = 10^6 B, GB = 10^9 B, TB = 10^12 B, GiB = 2^30 B, TiB = 2^40 B"
UNCONFIRMED = "unconfirmed"
BLOCK_PRICED = ("capacity-block", "training-plan")
"""Capacity bought as an offering: its price is the offering's, not an hourly rate."""


def _num(value: float | None, fmt: str = "{:,.1f}") -> str:
    return UNCONFIRMED if value is None else fmt.format(value)


def _table(title: str, *columns: str, left: tuple[str, ...] = ()) -> Table:
    table = Table(title=Text(title, style="bold"), title_justify="left", box=None, pad_edge=False, padding=(0, 1),
                  header_style="underline")
    for column in columns:
        table.add_column(column, justify="left" if column in left else "right", overflow="fold")
    return table


def _settings(title: str) -> Table:
    """Two columns, ``key  value``; a long value wraps at words under itself."""
    table = Table.grid(padding=(0, 2))
    table.title = Text(title, style="bold")
    table.title_justify = "left"
    table.add_column(no_wrap=True, style="dim")
    table.add_column(overflow="fold")
    return table


def _row(table: Table, *cells: str) -> None:
    table.add_row(*(Text(c) for c in cells))  # cells are text, never console markup


def _hbm_tb(gb: float | None) -> str:
    return _num(None if gb is None else gb / 1000, "{:,.2f}")


def print_plan(the_plan: Plan, console: Console, *, wide: bool = False, quote: Quote | None = None,
               capacity_offers: object = None) -> None:
    """The plan for a person; ``quote`` holds the prices that ``--prices`` read (None: offline)."""
    if wide:
        print_wide(the_plan, console)
    else:
        _headline(the_plan, console)
        _compute(the_plan, console)
        _nodes(the_plan, console)
        _network(the_plan, console)
        _storage(the_plan, console)
    _scheduler(the_plan, console)
    _monitoring(the_plan, console)
    _cost(the_plan, console, quote, capacity_offers)


def _headline(p: Plan, console: Console) -> None:
    console.print(Text(f"{p.project} in {p.availability_zone_id}", style="bold"))
    console.print(Text(f"{p.nodes:,} nodes, {p.gpus:,} GPUs, {_num(p.bf16_pflops)} PF BF16 dense, "
                       f"{_hbm_tb(p.hbm_gb)} TB HBM"))
    console.print()


def _compute(p: Plan, console: Console) -> None:
    table = _table("compute groups", "group", "type", "nodes", "capacity", "GPUs", "BF16 PF", "HBM TB",
                   left=("group", "type", "capacity"))
    for g in p.groups:
        _row(table, g.name, g.instance_type, f"{g.count:,}", g.capacity, f"{g.gpus:,} {g.gpu_model}",
             _num(g.bf16_pflops), _hbm_tb(g.hbm_gb))
    if len(p.groups) > 1:
        table.add_section()
        _row(table, "total", "", f"{p.nodes:,}", "", f"{p.gpus:,}", _num(p.bf16_pflops), _hbm_tb(p.hbm_gb))
    console.print(table)
    console.print()


def _nodes(p: Plan, console: Console) -> None:
    table = _table("one node of each type", "type", "GPUs", "HBM GB", "TB/s/GPU", "vCPU / GiB", "NVMe TB",
                   left=("type",))
    unconfirmed = False
    for name in dict.fromkeys(g.instance_type for g in p.groups):
        t = catalog.get(name)
        host = (UNCONFIRMED if t.vcpus is None or t.memory_gib is None else f"{t.vcpus} / {t.memory_gib:,}")
        cells = (f"{t.gpus} {t.gpu_model}", _num(t.gpu_memory_total_gb, "{:,.0f}"),
                 _num(t.hbm_bandwidth_tbps_per_gpu, "{:,.2f}"), host,
                 _num(None if t.local_nvme_total_gb is None else t.local_nvme_total_gb / 1000, "{:,.2f}"))
        unconfirmed |= UNCONFIRMED in cells
        _row(table, name, *cells)
    console.print(table)
    if unconfirmed:
        console.print(Text("unconfirmed: FACTS.md has no source for it; see DescribeInstanceTypes", style="dim"))
    console.print()


def _network(p: Plan, console: Console) -> None:
    table = _table("EFA and addresses", "group", "interfaces/node", "EFA Gbps", "of spec", "IPs/node", "IPs",
                   "PG", left=("group", "PG"))
    for g in p.groups:
        placed = "new" if g.placement_group else ("own" if g.existing_placement_group else "no")
        _row(table, g.name, f"1 ENA + {g.efa_interfaces} EFA", f"{g.efa_gbps_exposed:,.0f}/{g.efa_gbps_spec:,}",
             f"{g.efa_fraction:.0%}", str(g.ips_per_node), f"{g.ips:,}", placed)
    console.print(table)
    console.print(Text("PG: cluster placement group. new: made for on-demand nodes; own: the reservation's own "
                       "group, by name; no: a capacity block (already placed) or a reservation made without one "
                       "(a new group would be unrelated to it)", style="dim"))
    console.print()
    net = p.network
    lines = _settings("network")
    if net.vpc_cidr:
        public = f", public subnet {net.public_subnet_cidr} (NAT gateway)" if net.public_subnet_cidr else ""
        _row(lines, "VPC", f"{net.vpc_cidr}{public}")
    size = "size unknown" if net.ips_usable is None else f"{net.ips_usable:,} usable"
    _row(lines, "compute subnet", f"{net.compute_subnet_cidr or 'imported'}: {size}, {net.ips_needed:,} needed "
                                  f"(/{net.smallest_prefix_that_fits} would fit)")
    zone = net.local_zone
    if zone is not None:
        _row(lines, "Local Zone", f"nodes in {zone.zone_id} ({zone.name}); the NAT gateway, FSx, the endpoints "
                                  f"and a head node in its parent zone {zone.parent_zone_id}")
        _row(lines, "services subnet", f"{net.services_subnet_cidr} in {zone.parent_zone_id}")
    console.print(lines)
    console.print()


def _storage(p: Plan, console: Console) -> None:
    st = p.storage
    if not st.fsx:
        console.print(Text("storage: no FSx for Lustre"))
        console.print()
        return
    if not st.created:
        console.print(Text("storage: an existing FSx for Lustre file system (its size is not planned here); its "
                           "security groups must admit the nodes on TCP 988 and 1018-1023"))
        console.print()
        return
    lines = _settings("FSx for Lustre")
    tier = f"{st.throughput_per_tib or SCRATCH_2_THROUGHPUT} MB/s per TiB"
    _row(lines, "file system", f"{st.deployment_type}, {st.capacity_gib:,} GiB"
                               + (" (sized by the planner)" if st.sized_by_planner else ""))
    if st.sized_by_planner:
        _row(lines, "pin it", pin_advice(st.capacity_gib))
    for assoc in plan_associations(st.spec):
        _row(lines, "association", "\n".join(line.strip() for line in assoc.words(p.project)))
    _row(lines, "throughput", f"{tier} = {st.aggregate_mb_s / 1000:,.2f} GB/s; "
                              f"{_num(st.per_gpu_mb_s, '{:,.1f}')} MB/s per GPU when all read at once")
    bound = p.checkpoint_bound
    if st.checkpoint_bytes is not None and st.write_seconds is not None:
        _row(lines, "checkpoint", f"{st.checkpoint_bytes / 10**12:,.2f} TB (storage.checkpoint)")
        met = "met" if st.meets_target else "missed"
        _row(lines, "write, restore", f"{duration_text(st.write_seconds)} each; target "
                                      f"{duration_text(st.target_write_seconds or 0)} ({met})")
    elif bound is not None:
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
    console.print(lines)
    console.print(Text(UNITS, style="dim"))
    console.print()


def _scheduler(p: Plan, console: Console) -> None:
    cluster = p.cluster
    lines = _settings("scheduler")
    if cluster.orchestrator == "none":
        _row(lines, "none", "launch templates only: `cdk deploy` starts no node and no scheduler; launch "
                            f"instances from the {p.project}-GROUP templates with your own tooling")
    elif cluster.orchestrator == "parallelcluster":
        pc = cluster.pcluster
        arch = pcluster.architecture(cluster)
        created = "created by cdk deploy" if pc.create_cluster else "cluster.yaml only (create_cluster: false)"
        _row(lines, "Slurm", f"AWS ParallelCluster {pc.version}, cluster {cluster.pcluster_name}, {created}")
        _row(lines, "head node", f"{pc.head_node_instance_type or DEFAULT_HEAD_NODE[arch]}, "
                                 f"{pc.head_node_root_volume_gib} GiB root ({pc.os or cluster.os_facts.parallelcluster})")
        if pc.login_nodes is not None:
            _row(lines, "login nodes", f"{pc.login_nodes.count} x "
                                       f"{pc.login_nodes.instance_type or DEFAULT_LOGIN_NODE[arch]}")
        for queue in pcluster.queues(cluster):
            nodes = ", ".join(f"{g.count} x {g.instance_type} ({pcluster.min_count(cluster, g)} static)"
                              for g in queue.groups)
            _row(lines, f"queue {queue.name}", f"{nodes}; {queue.capacity_type}")
        _row(lines, "on destroy", "the cluster is deleted with its stack" if pc.deletion_policy == "Delete"
             else "the cluster is kept (Retain): delete it with pcluster delete-cluster")
    elif cluster.orchestrator == "hyperpod":
        hp = cluster.hyperpod
        _row(lines, "Slurm", f"SageMaker HyperPod cluster {cluster.hyperpod_name_prefix}-<subnet ID>, created by cdk deploy; "
                             f"node recovery {hp.node_recovery}, slurm.conf {hp.slurm_config_strategy}")
        for group in hyperpod.instance_groups(cluster):
            where = f"partition {group.partition}" if group.partition else group.node_type.lower()
            detail = f"{group.count} x {group.instance_type}, {where}"
            if group.deep_health_checks:
                detail += f"; deep health checks {', '.join(group.deep_health_checks)}"
            _row(lines, f"group {group.name}", detail)
            if group.training_plan_arn:
                _row(lines, "  training plan", group.training_plan_arn)
            if group.ultraserver:
                u = group.ultraserver
                _row(lines, "  UltraServers", f"{u.servers} x {u.type} ({u.instances_per_server} instances each, "
                                              "one NVLink domain per UltraServer)")
        _row(lines, "on destroy", "the cluster is deleted with its stack; the lifecycle bucket is kept")
    console.print(lines)
    console.print()


def _monitoring(p: Plan, console: Console) -> None:
    obs = p.observability
    if not obs.enabled:
        return
    spec = obs.spec
    lines = _settings("monitoring")
    alerts = f"alerts to {len(spec.alerts.emails)} e-mail address(es)" if spec.alerts.emails else "alerts to SNS"
    _row(lines, "Prometheus", f"Amazon Managed Prometheus workspace, GPU-health rules, {alerts}")
    if spec.grafana.enabled:
        # What AWS_SSO needs (IAM Identity Center) holds for every project: README says it once, preflight checks it.
        _row(lines, "Grafana", f"Amazon Managed Grafana workspace; {spec.grafana.authentication} sign-in")
    for role, gpu in (("GPU nodes", True), ("other nodes", False)):
        if gpu or p.cluster.orchestrator != "none":  # without a scheduler there are only the GPU nodes
            names = [e.name for e in metrics.EXPORTERS if (gpu or not e.gpu_only) and e is not metrics.PROMETHEUS]
            ports = sorted({port for _, port in metrics.scrape_targets(gpu=gpu)})
            port_list = f"port{'s' if len(ports) > 1 else ''} {', '.join(map(str, ports))}"
            _row(lines, role, f"{', '.join(names)} ({port_list}), and a Prometheus agent remote-writing to the "
                              "workspace")
    _series(p, lines)
    console.print(lines)
    console.print()


def _series(p: Plan, lines: Table) -> None:
    """Active series per GPU node and for the GPU nodes together, against the workspace's quota."""
    total, unknown = 0, set()
    for g in p.groups:
        itype = catalog.CATALOG[g.instance_type]
        est = metrics.node_series(gpus=itype.gpus, efa_devices=g.efa_interfaces, vcpus=itype.vcpus,
                                  nvme_drives=g.local_nvme_drives)
        total += est.total * g.count
        unknown.update(est.unknown)
        missing = (f", plus its {' and '.join(est.unknown)} series (unconfirmed for {g.instance_type})"
                   if est.unknown else "")
        _row(lines, f"series, {g.name}", f"~{est.total:,} active series per node{missing}")
    other = metrics.node_series(gpus=0, efa_devices=0, vcpus=0, nvme_drives=0).total
    share = total / AMP_ACTIVE_SERIES_QUOTA
    verdict = ("OVER the quota: ask for an increase (Service Quotas, Amazon Managed Service for Prometheus, "
               "'Active series per workspace') before deploying" if share > 1 else f"{share:.1%} of it")
    _row(lines, "series, cluster",
         f"~{total:,}{' + unconfirmed parts' if unknown else ''} from the GPU nodes (+ ~{other:,} and "
         f"{metrics.CPU_MODES} per vCPU for each other node); the workspace's default quota is "
         f"{AMP_ACTIVE_SERIES_QUOTA:,} active series: {verdict}. Mounts, network devices and disks are "
         "assumed (fmcluster.generate.metrics)")



# --- cost -----------------------------------------------------------------------------------------

def _cost(p: Plan, console: Console, quote: Quote | None, capacity_offers: object) -> None:
    if quote is None:
        console.print(Text("cost: prices need --prices (reads on-demand prices from the AWS Price List API)"))
        return
    hours_per_month = quote.hours_per_month
    table = _table(f"cost in {quote.region} (on-demand, USD)", "item", "billed as", "USD/hour", "USD/day",
                   left=("item", "billed as"))
    total: float | None = 0.0
    fetched: set[str] = set()
    notes: list[str] = []
    for g in p.groups:
        price = quote.instances.get(g.instance_type)
        if g.capacity in BLOCK_PRICED:
            _row(table, g.name, f"{g.capacity} offering", "offering", "offering")
            notes.append(f"{g.name}: priced by its {g.capacity} offering, left out of the total")
            continue
        if price is None:
            _row(table, g.name, f"{g.count} x {g.instance_type}", "not found", "not found")
            notes.append(f"{g.instance_type}: the Price List has no Linux on-demand price in {quote.region}")
            total = None
            continue
        fetched.add(price.fetched)
        hourly = price.usd * g.count
        basis = f"{g.count} x {price.usd:,.2f}/h" + (" (ODCR)" if g.capacity == "reservation" else "")
        _row(table, g.name, basis, f"{hourly:,.2f}", f"{hourly * 24:,.2f}")
        total = None if total is None else total + hourly
    st = p.storage
    if st.created and st.capacity_gib:
        if quote.fsx is not None:
            fetched.add(quote.fsx.fetched)
            hourly = st.capacity_gib * quote.fsx.usd / hours_per_month
            _row(table, "FSx", f"{st.capacity_gib:,} GiB x {quote.fsx.usd:g}/GB-month", f"{hourly:,.2f}",
                 f"{hourly * 24:,.2f}")
            total = None if total is None else total + hourly
        else:
            _row(table, "FSx", "not found", "not found", "not found")
            notes.append(f"FSx: {quote.fsx_note}")
            total = None
    table.add_section()
    _row(table, "total", "", "-" if total is None else f"{total:,.2f}", "-" if total is None else f"{total * 24:,.2f}")
    console.print(table)
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


# --- --wide: the tables as they were -------------------------------------------------------------

def print_wide(the_plan: Plan, console: Console) -> None:
    """Today's layout, one row per group and every column at once (for terminals wider than 80)."""
    compute = Table(title=f"{the_plan.project} in {the_plan.availability_zone_id}: compute", title_justify="left")
    for column in ("group", "type", "nodes", "capacity", "GPUs", "BF16 PF", "HBM TB"):
        compute.add_column(column, justify="left" if column in ("group", "type", "capacity") else "right")
    network = Table(title="EFA and addresses (per node)", title_justify="left")
    for column in ("group", "interfaces", "EFA Gbps", "of spec", "IPs/node", "IPs"):
        network.add_column(column, justify="left" if column == "group" else "right")
    for g in the_plan.groups:
        compute.add_row(*_texts(
            g.name, g.instance_type, str(g.count), g.capacity + ("" if g.placement_group else " (no PG)"),
            f"{g.gpus:,} {g.gpu_model}", _num(g.bf16_pflops), _hbm_tb(g.hbm_gb)))
        network.add_row(*_texts(
            g.name, f"1 ENA + {g.efa_interfaces} EFA", f"{g.efa_gbps_exposed:,.0f}/{g.efa_gbps_spec:,}",
            f"{g.efa_fraction:.0%}", str(g.ips_per_node), f"{g.ips:,}"))
    compute.add_section()
    compute.add_row(*_texts("total", "", str(the_plan.nodes), "", f"{the_plan.gpus:,}", _num(the_plan.bf16_pflops),
                            _hbm_tb(the_plan.hbm_gb)))
    console.print(compute)
    console.print(network)
    net = the_plan.network
    subnet = net.compute_subnet_cidr or "imported subnet"
    size = "unknown size" if net.ips_usable is None else f"{net.ips_usable:,} usable"
    console.print(Text(f"compute subnet {subnet} ({size}); needs {net.ips_needed:,} addresses "
                       f"(smallest that fits: /{net.smallest_prefix_that_fits})"))
    if net.public_subnet_cidr:
        console.print(Text(f"VPC {net.vpc_cidr}, public subnet {net.public_subnet_cidr} (NAT gateway)"))
    _wide_storage(the_plan, console)


def _texts(*cells: str) -> list[Text]:
    return [Text(c) for c in cells]


def _wide_storage(the_plan: Plan, console: Console) -> None:
    st = the_plan.storage
    if not st.fsx:
        console.print(Text("storage: no FSx for Lustre"))
        return
    if not st.created:
        console.print(Text("storage: an existing FSx for Lustre file system (its size is not planned here)"))
        return
    table = Table(title="FSx for Lustre (MB = 10^6 B, GiB = 2^30 B, TiB = 2^40 B)", title_justify="left")
    for column in ("type", "capacity GiB", "MB/s per TiB", "aggregate GB/s", "per GPU MB/s", "checkpoint",
                   "write s", "restore s", "target s"):
        table.add_column(column, justify="left" if column == "type" else "right")
    bound = the_plan.checkpoint_bound
    if st.checkpoint_bytes is not None:
        checkpoint, write = f"{st.checkpoint_bytes / 10**12:,.2f} TB", st.write_seconds
    elif bound is not None:  # no checkpoint section: the GPU-memory bound, marked as one
        checkpoint, write = f"<= {bound.bytes / 10**12:,.2f} TB", bound.write_seconds
    else:
        checkpoint, write = "-", None
    table.add_row(*_texts(
        st.deployment_type or "", f"{st.capacity_gib:,}" + (" (planned)" if st.sized_by_planner else ""),
        str(st.throughput_per_tib or SCRATCH_2_THROUGHPUT), f"{st.aggregate_mb_s / 1000:,.2f}", _num(st.per_gpu_mb_s, "{:,.0f}"),
        checkpoint, "-" if write is None else f"{write:,.0f}", "-" if write is None else f"{write:,.0f}",
        "-" if st.target_write_seconds is None else f"{st.target_write_seconds:g}"))
    console.print(table)
    if bound is not None and st.checkpoint_bytes is None:
        console.print(Text("<=: no checkpoint section; all GPU memory is the upper bound of one checkpoint"))
