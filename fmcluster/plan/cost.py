"""What a project costs, from the plan and a table of list prices: per hour while it runs, per month when no job
runs, per month after ``fmcluster destroy`` (what it keeps). Pure arithmetic: no AWS.

Three lists of itemised lines (:class:`CostItem`), each line with its basis in words. A line's status says whether
its figure is in the total: ``priced`` (USD, from the table), ``not in the table`` (the table has no figure for its
key), ``set at purchase`` (a capacity block or training plan: priced by its offering), ``by use`` (billed by what is
stored or sent: the line gives the unit price, no total). The prices come from :func:`fmcluster.prices.list_price`
unless the caller passes another lookup (``plan --prices`` lays the Price List's figures over the table).

- **running, per hour**: every GPU node of every group, plus everything of the idle month spread over its hours;
- **idle, per month**: what runs or is kept with no job: the nodes the orchestrator keeps up (head, controller,
  login, static GPU nodes, a reservation's nodes), its fees, the NAT gateway, the file system, the monitoring
  basis, the accounting database's minimum capacity;
- **after destroy, per month**: what ``destroy`` keeps (each retained resource of the stacks): the file system,
  the buckets, the Prometheus workspace, the alerts key, the log groups, the accounting database and its secret.
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
from fmcluster.prices import PRICE_DATE, PRICE_REGION, ListPrice, list_price

PRICED, MISSING, PURCHASE, BY_USE = "priced", "not in the table", "set at purchase", "by use"
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

PriceLookup = Callable[[str], ListPrice]


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

    def as_dict(self) -> dict:
        out: dict = {"project_region": self.project_region, "price_region": self.price_region,
                     "price_date": self.price_date, "hours_per_month": self.hours_per_month,
                     "warnings": list(self.warnings)}
        for name in ("running_per_hour", "idle_per_month", "after_destroy_per_month"):
            items: tuple[CostItem, ...] = getattr(self, name)
            out[name] = {"total_usd": round(self.total(items), 2), "complete": not self.unpriced(items),
                         "items": [asdict(i) for i in items]}
        return out


UNITS = {"hour": "h"}


def _rate(p: ListPrice) -> str:
    return f"{'?' if p.usd is None else f'{p.usd:g}'}/{UNITS.get(p.unit, p.unit)}"


def _line(item: str, key: str | None, quantity: float, what: str, price: PriceLookup, *,
          per: float = 1.0) -> CostItem:
    """``quantity`` units of ``key``'s price, times ``per`` (hours in a month for an hourly price per month)."""
    if key is None:
        return CostItem(item, f"{what}: no list price known", None, MISSING)
    p = price(key)
    if p.usd is None:
        return CostItem(item, f"{what} at {_rate(p)}", None, MISSING, key)
    return CostItem(item, f"{what} at {_rate(p)}", quantity * p.usd * per, PRICED, key)


def _by_use(item: str, key: str, price: PriceLookup, what: str) -> CostItem:
    return CostItem(item, f"{what} at {_rate(price(key))}", None, BY_USE, key)


def _fsx_key(plan: Plan) -> str | None:
    st = plan.storage
    if st.deployment_type != "PERSISTENT_2" or st.throughput_per_tib is None:
        return None
    return f"fsx.lustre.persistent2.{st.throughput_per_tib}"


def _gpu_key(parts: OrchestratorCost, instance_type: str) -> str:
    return f"{parts.instance_prefix}{instance_type}"


def _running_groups(plan: Plan, parts: OrchestratorCost, price: PriceLookup) -> list[CostItem]:
    out = []
    for g in plan.groups:
        what = f"{g.count} x {g.instance_type}"
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
        count = max(parts.static.get(g.name, 0), g.count if g.capacity == "reservation" else 0)
        if not count:
            continue
        what = f"{count} x {g.instance_type}"
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
            out.append(_line(f"{node.role} volumes", "ebs.gp3", node.count * node.volume_gib,
                             f"{node.count} x {node.volume_gib} GiB gp3", price))
    for what, key in parts.fees:
        out.append(_line(what, key, 1, "1 cluster", price, per=HOURS_PER_MONTH))
    if not plan.network.existing:
        out.append(_line("NAT gateway", "nat.hour", 1, "1 gateway", price, per=HOURS_PER_MONTH))
        out.append(_by_use("NAT data", "nat.gb", price, "data through it"))
    out += _kept(plan, parts, price)
    return out


def _kept(plan: Plan, parts: OrchestratorCost, price: PriceLookup) -> list[CostItem]:
    """The retained resources (``DeletionPolicy: Retain`` in the stacks): billed while the project exists and after
    destroy. Grafana's workspace and the NAT gateway go with their stacks; these stay."""
    out: list[CostItem] = []
    st = plan.storage
    if st.created and st.capacity_gib:
        out.append(_line(FSX_ITEM, _fsx_key(plan), st.capacity_gib,
                         f"{st.capacity_gib:,} GiB, {st.throughput_per_tib} MB/s/TiB", price))
    if st.spec.bucket.existing_name is None:
        out.append(_by_use("S3 buckets", "s3.standard", price, "data and access logs"))
    for bucket in parts.buckets:
        out.append(_by_use(bucket, "s3.standard", price, "scripts stored"))
    out.append(_by_use("log groups", "logs.storage", price, "logs stored"))
    if plan.observability.enabled:
        out.append(_by_use("Prometheus", "aps.storage", price, "metrics stored"))
        out.append(_line("alerts key", "kms.key", 1, "1 KMS key", price))
    db = plan.cluster.accounting.database if plan.cluster.accounting_store == "database" else None
    if db is not None:
        out.append(_line("accounting database", "aurora.serverless_v2.acu", db.min_capacity_acu,
                         f"{db.min_capacity_acu:g} ACU (its minimum)", price, per=HOURS_PER_MONTH))
        out.append(_by_use("accounting storage", "aurora.storage", price, "records stored"))
        out.append(_line("accounting secret", "secretsmanager.secret", 1, "1 secret", price))
    return out


def _monitoring_basis(plan: Plan, price: PriceLookup) -> list[CostItem]:
    """Billed while the project exists and not kept: Grafana's one editor licence, Prometheus's ingestion."""
    out: list[CostItem] = []
    if plan.observability.enabled:
        out.append(_by_use("Prometheus ingestion", "aps.ingest", price, "samples sent"))
        if plan.observability.spec.grafana.enabled:
            out.append(_line("Grafana", "grafana.editor", 1, "1 editor (the least a workspace has)", price))
    return out


def cost_summary(plan: Plan, price: PriceLookup = list_price) -> CostSummary:
    """The plan's cost: per hour running, per month idle, per month after destroy (see the module's words)."""
    parts = ORCHESTRATORS[plan.cluster.orchestrator](plan.cluster)
    kept = tuple(_kept(plan, parts, price))
    idle = tuple([*_static_groups(plan, parts, price), *_fixed(plan, parts, price), *_monitoring_basis(plan, price)])
    static_names = {g.name for g in plan.groups}
    spread = [CostItem(i.item, i.basis, i.usd / HOURS_PER_MONTH, i.status, i.key)
              if i.usd is not None else i for i in idle if i.item not in static_names]
    running = tuple([*_running_groups(plan, parts, price), *spread])
    return CostSummary(plan.cluster.region, PRICE_REGION, PRICE_DATE, HOURS_PER_MONTH, running, idle, kept,
                       tuple(_warnings(plan, idle)))


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
