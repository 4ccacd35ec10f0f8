"""The plan: EFA layouts, addresses and subnet sizes, aggregate figures."""

from __future__ import annotations

import ipaddress

import pytest

from fmcluster import catalog, config
from fmcluster.plan import efa_layout, make_plan
from fmcluster.plan.network import carve_subnets, smallest_prefix_for, usable


def _plan(text: str):
    return make_plan(config.parse(text).project)


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
    group = _plan(text).groups[0]
    assert group.efa_fraction == 1.0
    assert group.efa_interfaces == catalog.get(name).max_efa_interfaces
    assert group.ips_per_node == 1


def test_512_p5_nodes_need_512_node_ips_not_16k() -> None:
    plan = _plan("name: big\navailability_zone_id: use1-az6\nnetwork: {compute_subnet_prefix: 21}\n"
                 "compute_groups:\n  - {name: g, instance_type: p5.48xlarge, count: 512}\n")
    assert plan.groups[0].ips == 512
    # 512 node IPs + 25 % headroom (128) + 32 reserved
    assert plan.network.ips_needed == 672
    assert plan.network.smallest_prefix_that_fits == 22


def test_aggregates_for_two_p5() -> None:
    plan = _plan("name: dd\navailability_zone_id: use1-az6\ncompute_groups:\n  - {name: g, instance_type: p5.48xlarge, count: 2}\n")
    assert plan.gpus == 16
    assert plan.bf16_pflops == pytest.approx(16 * 0.9895)
    assert plan.hbm_gb == 16 * 80


def test_unknown_figures_stay_unknown_in_totals() -> None:
    plan = _plan("name: dd\navailability_zone_id: use1-az6\ncompute_groups:\n"
                 "  - {name: a, instance_type: p5.48xlarge, count: 1}\n  - {name: b, instance_type: p6e-gb200.36xlarge, count: 9}\n")
    assert plan.bf16_pflops is None
    assert plan.gpus == 8 + 36


@pytest.mark.parametrize(("ips", "prefix"), [(1, 28), (11, 28), (12, 27), (251, 24), (252, 23), (1019, 22), (1020, 21)])
def test_smallest_prefix(ips: int, prefix: int) -> None:
    assert smallest_prefix_for(ips) == prefix
    assert usable(prefix) >= ips


def test_subnets_do_not_overlap_and_stay_put() -> None:
    public, compute = carve_subnets("10.0.0.0/16", 22)
    assert (public, compute) == ("10.0.0.0/24", "10.0.4.0/22")
    assert not ipaddress.ip_network(public).overlaps(ipaddress.ip_network(compute))
    assert carve_subnets("10.0.0.0/16", 20) == ("10.0.0.0/24", "10.0.16.0/20")


def test_subnet_that_does_not_fit_the_vpc() -> None:
    assert carve_subnets("10.0.0.0/24", 24) == (None, None)


def test_derived_prefix_is_at_least_22_and_grows_with_nodes() -> None:
    small = _plan("name: dd\navailability_zone_id: use1-az6\ncompute_groups:\n  - {name: g, instance_type: p5.48xlarge, count: 2}\n")
    assert small.network.compute_subnet_prefix == 22
    big = _plan("name: dd\navailability_zone_id: use1-az6\ncompute_groups:\n  - {name: g, instance_type: p5.48xlarge, count: 2000}\n")
    # 2000 + 500 headroom + 32 reserved = 2532 > 2043 usable in a /21
    assert big.network.ips_needed == 2532
    assert big.network.compute_subnet_prefix == 20
    assert big.network.ips_usable >= big.network.ips_needed


def test_capacity_block_gets_no_placement_group_by_default() -> None:
    plan = _plan("name: dd\navailability_zone_id: use1-az6\ncompute_groups:\n"
                 "  - {name: a, instance_type: p5.48xlarge, count: 2, capacity: {type: capacity-block, reservation_id: cr-0123456789abcdef0}}\n"
                 "  - {name: b, instance_type: p5.48xlarge, count: 2}\n")
    assert [g.placement_group for g in plan.groups] == [False, True]
    assert plan.group("a").reservation_id == "cr-0123456789abcdef0"
