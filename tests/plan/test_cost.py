"""The plan's cost (:func:`fmcluster.plan.cost.cost_summary`): the arithmetic from the table's figures and the
plan's counts, what each orchestrator keeps running, what destroy keeps, what is left out of the totals."""

from __future__ import annotations

from datetime import date

import pytest
from support import PROJECTS, ROOT

from fmcluster import config, eks_versions
from fmcluster.facts import HOURS_PER_MONTH
from fmcluster.generate.costs import project_cost
from fmcluster.plan import cost as costs
from fmcluster.plan import make_plan
from fmcluster.prices import ListPrice, list_price

H = HOURS_PER_MONTH


def usd(key: str) -> float:
    value = list_price(key).usd
    assert value is not None, key
    return value


def plan_of(name: str):
    return make_plan(config.load(ROOT / "examples" / f"{name}.yaml").project)


def every_price(value: float = 1.0):
    """A lookup where every key has a figure (the table's unit), to check what is counted, not the table."""
    return lambda key: ListPrice(value, list_price(key).unit, key, "test")


def item(items, name: str) -> costs.CostItem:
    [found] = [i for i in items if i.item == name]
    return found


def test_parallelcluster_with_accounting_from_the_tables_figures() -> None:
    project = config.load(ROOT / "examples" / "p5-slurm-accounting.yaml").project
    plan = make_plan(project)
    c = project_cost(plan)
    settings = project.orchestrator.parallelcluster
    login = settings.login_nodes.count if settings.login_nodes else 0
    acu = project.orchestrator.accounting.database.min_capacity_acu
    gpus = sum(g.count for g in plan.groups)
    fsx = plan.storage.capacity_gib * usd("fsx.lustre.persistent2.500")
    kept = (usd("kms.key") + H * acu * usd("aurora.serverless_v2.acu") + usd("secretsmanager.secret") + fsx
            + H * (usd("nat.hour") + usd("ipv4.hour")))
    ingest = item(c.idle_per_month, "Prometheus ingestion").usd
    volume = project.orchestrator.parallelcluster.head_node_root_volume_gib * usd("ebs.gp3")
    idle = (H * (usd("ec2.m7i.4xlarge") + login * usd("ec2.m7i.2xlarge")) + volume + kept
            + usd("grafana.editor") + ingest)
    assert c.total(c.idle_per_month) == pytest.approx(idle)
    running_ingest = item(c.running_per_hour, "Prometheus ingestion").usd
    assert c.total(c.running_per_hour) == pytest.approx(gpus * usd("ec2.p5.48xlarge") + (idle - ingest) / H
                                                        + running_ingest)
    assert c.total(c.after_destroy_per_month) == pytest.approx(kept)
    # nothing the project creates is left out of the totals; the estimates are marked
    assert not c.unpriced(c.idle_per_month)
    assert {"fsx.lustre.persistent2.500", "aps.ingest"} <= {i.key for i in c.estimated(c.idle_per_month)}


def test_destroy_keeps_the_retained_resources_the_network_under_them_and_no_node() -> None:
    c = costs.cost_summary(plan_of("p5-slurm-accounting"), every_price())
    kept = {i.item for i in c.after_destroy_per_month}
    assert kept == {"FSx for Lustre", "S3 buckets", "log groups", "Prometheus", "alerts key", "accounting database",
                    "accounting storage", "accounting secret", "NAT gateway", "NAT public IPv4", "NAT data"}
    assert not kept & {"gpu", "head node", "login nodes", "Grafana"}
    # the NAT gateway and its address are billed once in the idle month, whether kept or not
    assert [i.item for i in c.idle_per_month].count("NAT gateway") == 1


def test_without_a_kept_file_system_or_database_destroy_takes_the_network() -> None:
    plan = plan_of("p5e-existing-vpc")  # an existing VPC: no NAT of ours at all
    c = costs.cost_summary(plan, every_price())
    assert "NAT gateway" not in {i.item for i in (*c.idle_per_month, *c.after_destroy_per_month)}


def test_prometheus_ingestion_is_estimated_from_the_series_and_the_scrape_interval() -> None:
    from fmcluster import catalog
    from fmcluster.generate import metrics

    plan = plan_of("p5-parallelcluster")
    c = project_cost(plan, every_price())
    assert item(costs.cost_summary(plan, every_price()).running_per_hour, "Prometheus ingestion").status == \
        costs.BY_USE  # the plan stage alone does not know what a node sends
    interval = costs.scrape_seconds(plan.observability.spec.scrape_interval)
    gpu = sum(metrics.node_series(gpus=catalog.CATALOG[g.instance_type].gpus, efa_devices=g.efa_interfaces,
                                  vcpus=catalog.CATALOG[g.instance_type].vcpus,
                                  nvme_drives=g.local_nvme_drives).total * g.count for g in plan.groups)
    other = metrics.node_series(gpus=0, efa_devices=0, vcpus=0, nvme_drives=0).total
    parts = costs.ORCHESTRATORS[plan.cluster.orchestrator](plan.cluster)
    others = other * sum(n.count for n in parts.nodes)
    running = item(c.running_per_hour, "Prometheus ingestion")
    assert running.status == costs.ESTIMATE
    assert running.usd == pytest.approx((gpu + others) * 3600 / interval / 1e7)
    assert item(c.idle_per_month, "Prometheus ingestion").usd == pytest.approx(others * H * 3600 / interval / 1e7)


def test_the_file_system_is_its_gib_times_the_tiers_price_and_warned_when_it_is_most_of_the_month() -> None:
    plan = plan_of("p5-odcr")  # 19,200 GiB at 1000 MB/s per TiB, sized by the planner
    gib = plan.storage.capacity_gib
    c = costs.cost_summary(plan, lambda key: ListPrice(0.0 if key.startswith("ec2.") else 1.0, list_price(key).unit,
                                                       key, "t"))
    fsx = item(c.idle_per_month, "FSx for Lustre")
    assert fsx.key == "fsx.lustre.persistent2.1000" and fsx.usd == gib
    assert item(c.after_destroy_per_month, "FSx for Lustre").usd == gib
    [warning] = c.warnings
    assert f"{gib:,} GiB at 1000 MB/s/TiB" in warning and "sized by the planner" in warning
    assert f"{gib:,.0f} USD a month" in warning and "destroy keeps it" in warning


def test_a_scratch_file_system_is_priced() -> None:
    plan = plan_of("p4d-on-demand")
    assert plan.storage.deployment_type == "SCRATCH_2"
    fsx = item(costs.cost_summary(plan).after_destroy_per_month, "FSx for Lustre")
    assert fsx.key == "fsx.lustre.scratch2" and fsx.usd == pytest.approx(plan.storage.capacity_gib * 0.14)


def test_a_kept_2400_gib_file_system_at_500_is_about_800_a_month() -> None:
    fsx = costs.fsx_month(2400, "PERSISTENT_2", 500, list_price)
    assert fsx.status == costs.ESTIMATE and 750 < fsx.usd < 900  # issue 42: "about $800/month in truth"


def test_a_planner_sized_file_system_without_a_price_is_still_named() -> None:
    plan = plan_of("p5-odcr")
    [warning] = costs.cost_summary(plan, lambda key: ListPrice(None if key.startswith("fsx.") else 1.0,
                                                               list_price(key).unit, key, "t")).warnings
    assert f"{plan.storage.capacity_gib:,} GiB" in warning and "not in the table; `plan --prices` reads it" in warning


def test_a_small_file_system_is_not_warned_about() -> None:
    assert costs.cost_summary(make_plan(PROJECTS["default"]), every_price()).warnings == ()


def test_a_reservation_bills_with_no_job_and_a_capacity_block_is_priced_when_bought() -> None:
    plan = plan_of("p5-odcr")
    c = costs.cost_summary(plan, every_price())
    train, evaluation = plan.group("train"), plan.group("eval")
    assert (train.capacity, evaluation.capacity) == ("reservation", "on-demand")
    assert item(c.idle_per_month, "train").usd == train.count * H  # reserved: billed used or not
    assert "eval" not in {i.item for i in c.idle_per_month}  # on demand: nothing with no job
    block = costs.cost_summary(plan_of("p5en-capacity-block"), every_price())
    train = item(block.running_per_hour, "train")
    assert train.status == costs.PURCHASE and train.usd is None
    assert "train" not in {i.item for i in block.running_per_hour if i.usd is not None}


def test_hyperpod_keeps_every_group_up_and_bills_sagemaker_types() -> None:
    plan = plan_of("p5en-hyperpod")
    c = costs.cost_summary(plan, every_price())
    for g in plan.groups:
        line = item(c.idle_per_month, g.name)
        assert line.key == f"sagemaker.ml.{g.instance_type}" and line.usd == g.count * H
    assert item(c.idle_per_month, "controller").key == f"sagemaker.{plan.cluster.hyperpod.controller.instance_type}"
    assert "HyperPod lifecycle scripts" in {i.item for i in c.after_destroy_per_month}


def test_the_eks_control_plane_bills_the_extended_rate_once_its_version_left_standard_support(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 41 item 9: Kubernetes 1.33 past 2026-07-29 bills the control plane at the extended-support rate."""
    project = PROJECTS["p5en-hyperpod-eks"]
    pinned = project.model_copy(update={"orchestrator": project.orchestrator.model_copy(update={
        "hyperpod_eks": project.orchestrator.hyperpod_eks.model_copy(update={"kubernetes_version": "1.33"})})})
    monkeypatch.setattr(eks_versions, "today", lambda: date(2026, 12, 2))
    [fee] = [i for i in costs.cost_summary(make_plan(pinned), list_price).idle_per_month
             if i.key and i.key.startswith("eks.")]
    assert fee.key == "eks.cluster.extended" and fee.usd == pytest.approx(0.60 * H)
    assert "1.33, extended support" in fee.item
    [fee] = [i for i in costs.cost_summary(plan_of("p5en-hyperpod-eks"), list_price).idle_per_month
             if i.key and i.key.startswith("eks.")]
    assert fee.key == "eks.cluster" and fee.usd == pytest.approx(0.10 * H)  # 1.35: standard support
    monkeypatch.setattr(eks_versions, "today", lambda: date(2026, 7, 28))
    [fee] = [i for i in costs.cost_summary(make_plan(pinned), list_price).idle_per_month
             if i.key and i.key.startswith("eks.")]
    assert fee.key == "eks.cluster"  # the day before it left standard support


def test_pcs_bills_its_controller_fee_by_size() -> None:
    plan = plan_of("p5-pcs")
    fee = [i for i in costs.cost_summary(plan, every_price()).idle_per_month if i.key and i.key.startswith("pcs.")]
    assert [(i.key, i.usd) for i in fee] == [("pcs.small", 1.0 * H)]


def test_launch_templates_alone_keep_nothing_running() -> None:
    c = costs.cost_summary(plan_of("p4d-on-demand"), every_price())
    assert not {"head node", "controller", "login nodes"} & {i.item for i in c.idle_per_month}
    assert not [i for i in c.idle_per_month if i.key and i.key.startswith("ec2.p")]


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_every_project_has_the_three_figures(name: str) -> None:
    c = costs.cost_summary(make_plan(PROJECTS[name]))
    assert c.running_per_hour and c.idle_per_month and c.after_destroy_per_month
    for items in (c.running_per_hour, c.idle_per_month, c.after_destroy_per_month):
        assert c.total(items) >= 0
        assert all((i.usd is None) == (i.status not in (costs.PRICED, costs.ESTIMATE)) for i in items)
        assert all(i.status != costs.MISSING for i in items), [i.key for i in items if i.status == costs.MISSING]
    data = c.as_dict()
    assert data["price_region"] == (PROJECTS[name].region or "us-east-1")
    assert set(data) >= {"running_per_hour", "idle_per_month", "after_destroy_per_month"}
