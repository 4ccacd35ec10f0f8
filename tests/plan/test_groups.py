"""Compute groups: EFA layouts, aggregate figures, placement groups."""

from __future__ import annotations

import dataclasses

import pytest
from support import plan_of

from fmcluster import catalog
from fmcluster.plan import efa_layout


def test_p5_layout_is_one_ena_and_32_efa_only() -> None:
    layout = efa_layout(catalog.get("p5.48xlarge"))
    assert len(layout) == 33
    assert [(n.card, n.device, n.type) for n in layout[:3]] == [(0, 0, "interface"), (0, 1, "efa-only"), (1, 0, "efa-only")]
    assert sum(n.type == "efa-only" for n in layout) == 32
    assert sorted({n.card for n in layout}) == list(range(32))


def test_b300_layout_skips_card0_efa() -> None:
    layout = efa_layout(catalog.get("p6-b300.48xlarge"))
    assert len(layout) == 17
    assert [n for n in layout if n.card == 0] == [layout[0]] and layout[0].type == "interface"
    assert [n.card for n in layout if n.type == "efa-only"] == list(range(1, 17))


@pytest.mark.parametrize("name", sorted(catalog.CATALOG))
def test_every_type_exposes_all_efa_bandwidth_with_one_ip(name: str) -> None:
    text = f"name: tt\navailability_zone_id: use1-az6\ncompute_groups:\n  - {{name: g, instance_type: {name}, count: 1}}\n"
    group = plan_of(text).groups[0]
    assert group.efa_fraction == 1.0
    assert group.efa_interfaces == catalog.get(name).max_efa_interfaces
    assert group.ips_per_node == 1


def test_aggregates_for_two_p5() -> None:
    plan = plan_of("name: dd\navailability_zone_id: use1-az6\ncompute_groups:\n  - {name: g, instance_type: p5.48xlarge, count: 2}\n")
    assert plan.gpus == 16
    assert plan.bf16_pflops == pytest.approx(16 * 0.9895)
    assert plan.hbm_gb == 16 * 80


def test_unknown_figures_stay_unknown_in_totals(monkeypatch: pytest.MonkeyPatch) -> None:
    # every catalog type has a sourced BF16 figure now: make one unconfirmed, as FACTS.md may mark a new type
    gb200 = catalog.get("p6e-gb200.36xlarge")
    monkeypatch.setitem(catalog.CATALOG, gb200.name, dataclasses.replace(gb200, bf16_dense_pflops_per_gpu=None))
    plan = plan_of("name: dd\navailability_zone_id: use1-az6\ncompute_groups:\n"
                 "  - {name: a, instance_type: p5.48xlarge, count: 1}\n  - {name: b, instance_type: p6e-gb200.36xlarge, count: 9}\n")
    assert plan.bf16_pflops is None
    assert plan.gpus == 8 + 36


def test_capacity_block_gets_no_placement_group_by_default() -> None:
    plan = plan_of("name: dd\navailability_zone_id: use1-az6\ncompute_groups:\n"
                 "  - {name: a, instance_type: p5.48xlarge, count: 2, capacity: {type: capacity-block, reservation_id: cr-0123456789abcdef0}}\n"
                 "  - {name: b, instance_type: p5.48xlarge, count: 2}\n")
    assert [g.placement_group for g in plan.groups] == [False, True]
    assert plan.group("a").reservation_id == "cr-0123456789abcdef0"
