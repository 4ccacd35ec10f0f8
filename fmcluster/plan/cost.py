"""What a project costs, from the plan and a table of list prices: per hour while it runs, per month when no job
runs, per month after ``fmcluster destroy`` (what it keeps). Pure arithmetic: no AWS.

Three lists of itemised lines (:class:`CostItem`), each line with its basis in words. A line's status says whether
its figure is in the total: ``priced`` (USD, from the table), ``not in the table`` (the table has no figure for its
key), ``estimate`` (in the total, marked ``~``: an estimated price (the table's ``estimate``), or a quantity the
plan estimates, as Prometheus's samples from the series and scrape interval it generates), ``set at purchase`` (a
capacity block or training plan: priced by its offering), ``by use`` (billed by what is stored or sent, which the
plan cannot count: the line gives the unit price, no total). The prices come from the table of the project's Region
(:func:`fmcluster.prices.lookup`) unless the caller passes another lookup (``plan --prices`` lays the Price List's
figures over the table).

- **running, per hour**: every GPU node of every group, plus everything of the idle month spread over its hours;
- **idle, per month**: what runs or is kept with no job: the nodes the orchestrator keeps up (head, controller,
  login, static GPU nodes, a reservation's nodes), its fees, the NAT gateway, the file system, the monitoring
  basis, the accounting database's minimum capacity;
- **after destroy, per month**: what ``destroy`` keeps (each retained resource of the stacks): the file system,
  the buckets, the Prometheus workspace, the alerts key, the log groups, the accounting database and its secret;
  and the network with its NAT gateway and the gateway's public IPv4 address when a kept file system or database
  lives in it (``destroy`` cannot delete the network under them).

``destroy`` prices what it finds kept with the same functions (:func:`fsx_month`, :func:`nat_month`,
:func:`monthly`), so its kept total and this column agree for the same project.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from fmcluster.facts import HOURS_PER_MONTH
from fmcluster.plan import Plan
from fmcluster.plan import hyperpod as _hyperpod
from fmcluster.plan import hyperpod_eks as _hyperpod_eks
from fmcluster.plan import parallelcluster as _parallelcluster
from fmcluster.plan import pcs as _pcs
from fmcluster.plan.cluster import ClusterPlan
from fmcluster.plan.costparts import OrchestratorCost
from fmcluster.prices import (
    PRICE_DATE,
    PRICE_REGION,
    REGIONS,
    ListPrice,
    PriceLookup,
    lookup,
)

PRICED, MISSING, PURCHASE, BY_USE, ESTIMATE = "priced", "not in the table", "set at purchase", "by use", "estimate"
OFFERING_PRICED = ("capacity-block", "training-plan")
"""Capacity bought as an offering: its price is set when it is bought, not by an hourly list price."""

FSX_ITEM = "FSx for Lustre"
FSX_WARNING_SHARE = 0.5
"""The plan warns when the file system is more than this share of the idle month (it also stays after destroy)."""


def _none(cluster: ClusterPlan) -> OrchestratorCost:
    """Launch templates only: nothing runs until the user launches instances."""
    return OrchestratorCost()


ORCHESTRATORS: dict[str, Callable[[ClusterPlan], OrchestratorCost]] = {
    "none": _none,
    "parallelcluster": _parallelcluster.cost_parts,
    "hyperpod": _hyperpod.cost_parts,
    "pcs": _pcs.cost_parts,
    "hyperpod-eks": _hyperpod_eks.cost_parts,
}
"""The plan stage's table of orchestrators (:mod:`fmcluster.orchestrators`): what each adds to the bill."""



@dataclass(frozen=True)
class CostItem:
    item: str
    basis: str
    """How the figure is made, in words (``4 x 55.04 USD/hour``)."""
    usd: float | None
    """USD per hour (running) or per month (idle, after destroy); None unless :attr:`status` is ``priced``."""
    status: str
    key: str | None = None
    """The price key the line reads (:mod:`fmcluster.prices`)."""


@dataclass(frozen=True)
class CostSummary:
    project_region: str | None
    price_region: str
    price_date: str
    hours_per_month: int
    running_per_hour: tuple[CostItem, ...]
    idle_per_month: tuple[CostItem, ...]
    after_destroy_per_month: tuple[CostItem, ...]
    warnings: tuple[str, ...] = ()

    @staticmethod
    def total(items: tuple[CostItem, ...]) -> float:
        """The sum of the priced lines (the others are listed, not added)."""
        return sum(i.usd for i in items if i.usd is not None)

    @staticmethod
    def unpriced(items: tuple[CostItem, ...]) -> list[CostItem]:
        """Lines whose figure is not in the total: not in the table, or set at purchase."""
        return [i for i in items if i.status in (MISSING, PURCHASE)]

    @staticmethod
    def estimated(items: tuple[CostItem, ...]) -> list[CostItem]:
        """Lines in the total whose figure is an estimate (``~``)."""
        return [i for i in items if i.status == ESTIMATE]

    def as_dict(self) -> dict:
        out: dict = {"project_region": self.project_region, "price_region": self.price_region,
                     "price_date": self.price_date, "hours_per_month": self.hours_per_month,
                     "warnings": list(self.warnings)}
        for name in ("running_per_hour", "idle_per_month", "after_destroy_per_month"):
            items: tuple[CostItem, ...] = getattr(self, name)
            out[name] = {"total_usd": round(self.total(items), 2), "complete": not self.unpriced(items),
                         "estimated": bool(self.estimated(items)), "items": [asdict(i) for i in items]}
        return out


UNITS = {"hour": "h"}


def _rate(p: ListPrice) -> str:
    return f"{'?' if p.usd is None else f'{p.usd:g}'}/{UNITS.get(p.unit, p.unit)}"


def _line(item: str, key: str | None, quantity: float, what: str, price: PriceLookup, *,
          per: float = 1.0, estimated: bool = False) -> CostItem:
    """``quantity`` units of ``key``'s price, times ``per`` (hours in a month for an hourly price per month);
    ``estimated``: the quantity is the plan's estimate."""
    if key is None:
        return CostItem(item, f"{what}: no list price known", None, MISSING)
    p = price(key)
    if p.usd is None:
        return CostItem(item, f"{what} at {_rate(p)}", None, MISSING, key)
    rate = f"~{_rate(p)} (estimate)" if p.estimate else _rate(p)
    status = ESTIMATE if p.estimate or estimated else PRICED
    return CostItem(item, f"{what} at {rate}", quantity * p.usd * per, status, key)


def monthly(item: str, key: str, quantity: float, what: str, price: PriceLookup) -> CostItem:
    """A month of ``quantity`` units of ``key``: an hourly price over :data:`HOURS_PER_MONTH`, else as it is."""
    per = HOURS_PER_MONTH if price(key).unit.endswith("hour") else 1.0
    return _line(item, key, quantity, what, price, per=per)


def fsx_key(deployment_type: str | None, throughput_per_tib: int | None) -> str | None:
    """The price key of an FSx for Lustre file system's storage; None: the table has no price for its kind."""
    if deployment_type == "SCRATCH_2":
        return "fsx.lustre.scratch2"
    if deployment_type != "PERSISTENT_2" or throughput_per_tib is None:
        return None
    return f"fsx.lustre.persistent2.{throughput_per_tib}"


def fsx_month(gib: int, deployment_type: str | None, throughput_per_tib: int | None,
              price: PriceLookup) -> CostItem:
    """A month of an FSx for Lustre file system: its provisioned GiB at its tier's GB-month price."""
    tier = "SCRATCH_2" if deployment_type == "SCRATCH_2" else f"{throughput_per_tib} MB/s/TiB"
    return _line(FSX_ITEM, fsx_key(deployment_type, throughput_per_tib), gib, f"{gib:,} GiB, {tier}", price)


def nat_month(gateways: int, addresses: int, price: PriceLookup) -> list[CostItem]:
    """A month of the network's NAT gateways and their public IPv4 addresses (the data through them: by use)."""
    if not gateways and not addresses:
        return []
    s = "s" if gateways > 1 else ""
    return [monthly("NAT gateway", "nat.hour", gateways, f"{gateways} gateway{s}", price),
            monthly("NAT public IPv4", "ipv4.hour", addresses, f"{addresses} address{'es' if addresses > 1 else ''}",
                    price),
            _by_use("NAT data", "nat.gb", price, "data through it")]


def _by_use(item: str, key: str, price: PriceLookup, what: str) -> CostItem:
    return CostItem(item, f"{what} at {_rate(price(key))}", None, BY_USE, key)


def _gpu_key(parts: OrchestratorCost, instance_type: str) -> str:
    return f"{parts.instance_prefix}{instance_type}"


def _billed_type(parts: OrchestratorCost, instance_type: str) -> str:
    """The type as it is billed: ``ml.p5en.48xlarge`` on HyperPod."""
    return _gpu_key(parts, instance_type).split(".", 1)[1]


def _running_groups(plan: Plan, parts: OrchestratorCost, price: PriceLookup) -> list[CostItem]:
    out = []
    for g in plan.groups:
        what = f"{g.count} x {_billed_type(parts, g.instance_type)}"
        if g.capacity in OFFERING_PRICED:
            out.append(CostItem(g.name, f"{what}, {g.capacity}: priced when bought", None, PURCHASE,
                                _gpu_key(parts, g.instance_type)))
        else:
            out.append(_line(g.name, _gpu_key(parts, g.instance_type), g.count, what, price))
    return out


def _static_groups(plan: Plan, parts: OrchestratorCost, price: PriceLookup) -> list[CostItem]:
    """GPU nodes billed with no job: those the orchestrator keeps up, and a reservation's (billed used or not)."""
    out = []
    for g in plan.groups:
        count = _idle_count(plan, parts, g)
        if not count:
            continue
        what = f"{count} x {_billed_type(parts, g.instance_type)}"
        if g.capacity in OFFERING_PRICED:
            out.append(CostItem(g.name, f"{what}, {g.capacity}: priced when bought", None, PURCHASE,
                                _gpu_key(parts, g.instance_type)))
        else:
            why = " (reserved: billed used or not)" if g.capacity == "reservation" else " (static)"
            out.append(_line(g.name, _gpu_key(parts, g.instance_type), count, what + why, price,
                             per=HOURS_PER_MONTH))
    return out


def _fixed(plan: Plan, parts: OrchestratorCost, price: PriceLookup) -> list[CostItem]:
    """What runs or is kept while the project exists, jobs or not, per month (GPU nodes aside)."""
    out: list[CostItem] = []
    for node in parts.nodes:
        out.append(_line(node.role, node.price_key, node.count, f"{node.count} x {node.price_key.split('.', 1)[1]}",
                         price, per=HOURS_PER_MONTH))
        if node.volume_gib:
            sagemaker = node.price_key.startswith("sagemaker.")  # HyperPod bills its nodes' volumes itself
            out.append(_line(f"{node.role} volumes", "sagemaker.volume" if sagemaker else "ebs.gp3",
                             node.count * node.volume_gib,
                             f"{node.count} x {node.volume_gib} GiB{'' if sagemaker else ' gp3'}", price))
    for what, key in parts.fees:
        out.append(monthly(what, key, 1, "1 cluster", price))
    if not plan.network.existing and not network_kept(plan):  # else _kept lists them
        out += _network(plan, price)
    out += _kept(plan, parts, price)
    return out


NAT_GATEWAYS = 1
"""``NAME-network`` creates one NAT gateway, with one Elastic IP (fmcluster.stacks.network)."""


def network_kept(plan: Plan) -> bool:
    """Whether ``destroy`` keeps the project's network: a kept file system or accounting database lives in it."""
    return not plan.network.existing and (bool(plan.storage.created and plan.storage.capacity_gib)
                                          or _database(plan) is not None)


def _database(plan: Plan):
    return plan.cluster.accounting.database if plan.cluster.accounting_store == "database" else None


def _kept(plan: Plan, parts: OrchestratorCost, price: PriceLookup) -> list[CostItem]:
    """The retained resources (``DeletionPolicy: Retain`` in the stacks): billed while the project exists and after
    destroy. Grafana's workspace and the NAT gateway go with their stacks; these stay."""
    out: list[CostItem] = []
    st = plan.storage
    if st.created and st.capacity_gib:
        out.append(fsx_month(st.capacity_gib, st.deployment_type, st.throughput_per_tib, price))
    if st.spec.bucket.existing_name is None:
        out.append(_by_use("S3 buckets", "s3.standard", price, "data and access logs"))
    for bucket in parts.buckets:
        out.append(_by_use(bucket, "s3.standard", price, "scripts stored"))
    out.append(_by_use("log groups", "logs.storage", price, "logs stored"))
    if plan.observability.enabled:
        out.append(_by_use("Prometheus", "aps.storage", price, "metrics stored"))
        out.append(monthly("alerts key", "kms.key", 1, "1 KMS key", price))
    db = _database(plan)
    if db is not None:
        out.append(acu_month(db.min_capacity_acu, price))
        out.append(_by_use("accounting storage", "aurora.storage", price, "records stored"))
        out.append(monthly("accounting secret", "secretsmanager.secret", 1, "1 secret", price))
    if network_kept(plan):
        out += _network(plan, price)
    return out


def _network(plan: Plan, price: PriceLookup) -> list[CostItem]:
    return network_month(NAT_GATEWAYS, NAT_GATEWAYS, len(plan.network.spec.interface_endpoints), price)


def network_month(gateways: int, addresses: int, endpoints: int, price: PriceLookup) -> list[CostItem]:
    """A month of ``NAME-network``: its NAT gateways and their public IPv4 addresses, its interface endpoints (one
    Availability Zone each: the services subnet); the data through them by use."""
    out = nat_month(gateways, addresses, price)
    if endpoints:
        out.append(monthly("interface endpoints", "vpce.hour", endpoints, f"{endpoints} endpoint(s) in 1 zone",
                           price))
        out.append(_by_use("endpoint data", "vpce.gb", price, "data through them"))
    return out


def acu_month(min_capacity_acu: float, price: PriceLookup) -> CostItem:
    """A month of an Aurora Serverless v2 database at its minimum capacity (what it bills with no load)."""
    return monthly("accounting database", "aurora.serverless_v2.acu", min_capacity_acu,
                   f"{min_capacity_acu:g} ACU (its minimum)", price)


INGEST_ITEM = "Prometheus ingestion"
SAMPLES_PER_UNIT = 10_000_000
"""``aps.ingest`` is priced per 10 million samples."""


def scrape_seconds(interval: str) -> int:
    """A Prometheus duration of the project (``30s``, ``1m``) in seconds."""
    return int(interval[:-1]) * {"s": 1, "m": 60, "h": 3600}[interval[-1]]


@dataclass(frozen=True)
class Series:
    """Active series a node sends to Prometheus, as the exporter table counts them (the generate stage knows it:
    :func:`fmcluster.generate.costs.plan_series`)."""

    per_node: dict[str, int]
    """Compute group -> series of one of its nodes."""
    other_node: int
    """A node without GPU exporters (head, controller, login, system group); its per-vCPU series not counted."""


SeriesOf = Callable[[Plan], Series]


def _ingestion(plan: Plan, parts: OrchestratorCost, price: PriceLookup, gpu_nodes: dict[str, int],
               hours: float, series_of: SeriesOf | None) -> CostItem:
    """Prometheus's samples over ``hours``: the active series of the nodes that run (``gpu_nodes`` by group, and the
    orchestrator's own nodes), one sample per series per scrape interval; an estimate. Without ``series_of``: by
    use."""
    if series_of is None:
        return _by_use(INGEST_ITEM, "aps.ingest", price, "samples sent")
    interval = scrape_seconds(plan.observability.spec.scrape_interval)
    known = series_of(plan)
    series = (known.other_node * sum(n.count for n in parts.nodes)
              + sum(known.per_node[g] * n for g, n in gpu_nodes.items() if n))
    samples = series * hours * 3600 / interval
    what = (f"~{series:,} series every {plan.observability.spec.scrape_interval}: ~{samples / 1e6:,.1f}M samples "
            "(per-vCPU and Slurm-workload series not counted)")
    return _line(INGEST_ITEM, "aps.ingest", samples / SAMPLES_PER_UNIT, what, price, estimated=True)


def _monitoring_basis(plan: Plan, parts: OrchestratorCost, price: PriceLookup,
                      series_of: SeriesOf | None) -> list[CostItem]:
    """Billed while the project exists and not kept: Grafana's one editor licence, Prometheus's ingestion of the
    nodes that run with no job."""
    out: list[CostItem] = []
    if plan.observability.enabled:
        static = {g.name: _idle_count(plan, parts, g) for g in plan.groups}
        out.append(_ingestion(plan, parts, price, static, HOURS_PER_MONTH, series_of))
        out.append(_by_use("Prometheus queries", "aps.query", price, "rule evaluations and dashboard queries"))
        if plan.observability.spec.grafana.enabled:
            out.append(monthly("Grafana", "grafana.editor", 1, "1 editor (the least a workspace has)", price))
    return out


def _idle_count(plan: Plan, parts: OrchestratorCost, g) -> int:
    return max(parts.static.get(g.name, 0), g.count if g.capacity == "reservation" else 0)


def sagemaker_types(plan: Plan) -> list[str]:
    """The ``ml.`` types a HyperPod project bills (its GPU groups and its own nodes); none on other orchestrators."""
    parts = ORCHESTRATORS[plan.cluster.orchestrator](plan.cluster)
    keys = [_gpu_key(parts, g.instance_type) for g in plan.groups] + [n.price_key for n in parts.nodes]
    return sorted({k.removeprefix("sagemaker.") for k in keys if k.startswith("sagemaker.")})


def price_region(region: str | None) -> str:
    """The Region whose figures the table gives for ``region``."""
    return region if region in REGIONS else PRICE_REGION


def cost_summary(plan: Plan, price: PriceLookup | None = None, series_of: SeriesOf | None = None) -> CostSummary:
    """The plan's cost: per hour running, per month idle, per month after destroy (see the module's words); the
    table's prices of the project's Region unless ``price`` is given. ``series_of``: what each node sends to
    Prometheus, to estimate its ingestion (:func:`fmcluster.generate.costs.project_cost` passes it); without it
    ingestion is by use."""
    price = price or lookup(plan.cluster.region)
    parts = ORCHESTRATORS[plan.cluster.orchestrator](plan.cluster)
    kept = tuple(_kept(plan, parts, price))
    idle = tuple([*_static_groups(plan, parts, price), *_fixed(plan, parts, price),
                  *_monitoring_basis(plan, parts, price, series_of)])
    static_names = {g.name for g in plan.groups}
    spread = [CostItem(i.item, i.basis, i.usd / HOURS_PER_MONTH, i.status, i.key)
              if i.usd is not None else i for i in idle if i.item not in static_names and i.item != INGEST_ITEM]
    running = [*_running_groups(plan, parts, price), *spread]
    if plan.observability.enabled:  # every GPU node sends while it runs
        running.append(_ingestion(plan, parts, price, {g.name: g.count for g in plan.groups}, 1, series_of))
    return CostSummary(plan.cluster.region, price_region(plan.cluster.region), PRICE_DATE, HOURS_PER_MONTH,
                       tuple(running), idle, kept, tuple(_warnings(plan, idle)))


def _warnings(plan: Plan, idle: tuple[CostItem, ...]) -> list[str]:
    """The file system when it is most of the idle month (it also outlives destroy), or when the planner sized it and
    the table has no price for it: the figure a user must see before deploying."""
    st = plan.storage
    fsx = next((i for i in idle if i.item == FSX_ITEM), None)
    if fsx is None:
        return []
    sized = "sized by the planner for the checkpoint target" if st.sized_by_planner else "as set"
    what = f"FSx for Lustre ({st.capacity_gib:,} GiB at {st.throughput_per_tib} MB/s/TiB, {sized})"
    if fsx.usd is None:
        if not st.sized_by_planner:
            return []
        return [f"{what}: its GB-month price is not in the table; `plan --prices` reads it. It bills every month "
                "the project exists, and destroy keeps it"]
    total = CostSummary.total(idle)
    if not total or fsx.usd / total <= FSX_WARNING_SHARE:
        return []
    return [f"{what} is {fsx.usd:,.0f} USD a month, {fsx.usd / total:.0%} of the idle month, and destroy keeps it: a "
            "lower storage.fsx throughput or checkpoint target, or a smaller file system, costs less"]
