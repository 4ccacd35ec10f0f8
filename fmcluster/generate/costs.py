"""The plan's cost with Prometheus's ingestion estimated from what the project generates: the exporter table's
active series per node (:func:`fmcluster.generate.metrics.node_series`) and the project's scrape interval. The plan
stage prices; this stage knows what each node sends."""

from __future__ import annotations

from fmcluster import catalog
from fmcluster.generate import metrics
from fmcluster.plan import Plan
from fmcluster.plan.cost import CostSummary, Series, cost_summary
from fmcluster.prices import PriceLookup


def plan_series(plan: Plan) -> Series:
    """Active series of one node of each compute group, and of a node without GPU exporters (per-vCPU series not
    counted: the other nodes' vCPUs are not in the catalog; Slurm-workload series follow the workload)."""
    per_node = {}
    for g in plan.groups:
        itype = catalog.CATALOG[g.instance_type]
        per_node[g.name] = metrics.node_series(gpus=itype.gpus, efa_devices=g.efa_interfaces, vcpus=itype.vcpus,
                                               nvme_drives=g.local_nvme_drives).total
    other = metrics.node_series(gpus=0, efa_devices=0, vcpus=0, nvme_drives=0).total
    return Series(per_node, other)


def project_cost(plan: Plan, price: PriceLookup | None = None) -> CostSummary:
    """What ``fmcluster plan`` shows: :func:`fmcluster.plan.cost.cost_summary` with ingestion estimated."""
    return cost_summary(plan, price, plan_series)
