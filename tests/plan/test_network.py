"""The network plan: addresses per node, subnet sizes and where the subnets go."""

from __future__ import annotations

import ipaddress

import pytest
from support import plan_of

from fmcluster.plan.network import carve_subnets, last_blocks, smallest_prefix_for, usable


def test_512_p5_nodes_need_512_node_ips_not_16k() -> None:
    plan = plan_of("name: big\navailability_zone_id: use1-az6\nnetwork: {compute_subnet_prefix: 21}\n"
                 "compute_groups:\n  - {name: g, instance_type: p5.48xlarge, count: 512}\n")
    assert plan.groups[0].ips == 512
    # 512 node IPs + 25 % headroom (128) + 32 reserved
    assert plan.network.ips_needed == 672
    assert plan.network.smallest_prefix_that_fits == 22


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
    small = plan_of("name: dd\navailability_zone_id: use1-az6\ncompute_groups:\n  - {name: g, instance_type: p5.48xlarge, count: 2}\n")
    assert small.network.compute_subnet_prefix == 22
    big = plan_of("name: dd\navailability_zone_id: use1-az6\ncompute_groups:\n  - {name: g, instance_type: p5.48xlarge, count: 2000}\n")
    # 2000 + 500 headroom + 32 reserved = 2532 > 2043 usable in a /21
    assert big.network.ips_needed == 2532
    assert big.network.compute_subnet_prefix == 20
    assert big.network.ips_usable >= big.network.ips_needed


def test_a_local_zone_gets_a_services_subnet_in_its_parent_zone() -> None:
    plan = plan_of("name: lz\navailability_zone_id: use1-dfw2-az1\ncompute_groups:\n"
                   "  - {name: nvl, instance_type: p6e-gb200.36xlarge, count: 18}\n").network
    assert (plan.services_zone_id, plan.public_subnet_cidr, plan.services_subnet_cidr) == ("use1-az4", "10.0.0.0/24",
                                                                                           "10.0.1.0/24")
    subnets = [ipaddress.IPv4Network(c) for c in (plan.public_subnet_cidr, plan.services_subnet_cidr,
                                                  plan.compute_subnet_cidr)]
    assert not any(a.overlaps(b) for i, a in enumerate(subnets) for b in subnets[i + 1:])
    regular = plan_of("name: az\navailability_zone_id: use1-az6\ncompute_groups:\n"
                      "  - {name: g, instance_type: p5.48xlarge, count: 2}\n").network
    assert (regular.services_zone_id, regular.services_subnet_cidr) == ("use1-az6", None)


PC = "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n"
P5 = "compute_groups:\n  - {name: g, instance_type: p5.48xlarge, count: 2}\n"


@pytest.mark.parametrize("zone", ["use1-az6", "use1-dfw2-az1"])
def test_the_accounting_database_subnets_come_from_the_end_and_move_nothing(zone: str) -> None:
    """Turning accounting on adds the VPC's last two /28s; the public, services and compute subnets stay where they
    were (moving one would replace it, and everything in it)."""
    head = f"name: acc\navailability_zone_id: {zone}\n"
    off = plan_of(head + P5).network
    on = plan_of(head + P5 + PC).network
    assert off.database_subnet_cidrs == ()
    assert on.database_subnet_cidrs == ("10.0.255.224/28", "10.0.255.240/28")
    same = ("public_subnet_cidr", "services_subnet_cidr", "compute_subnet_cidr", "compute_subnet_prefix")
    assert [getattr(on, f) for f in same] == [getattr(off, f) for f in same]


def test_accounting_kept_on_a_hyperpod_controller_needs_no_database_subnets() -> None:
    text = ("name: acc\navailability_zone_id: use1-az6\n" + P5
            + "orchestrator: {type: hyperpod, accounting: {enabled: true, store: controller}}\n")
    assert plan_of(text).network.database_subnet_cidrs == ()


def test_database_subnets_that_would_overlap_the_compute_subnet_are_not_carved() -> None:
    text = "name: acc\navailability_zone_id: use1-az6\nnetwork: {vpc_cidr: 10.0.0.0/24, compute_subnet_prefix: 25}\n"
    assert plan_of(text + P5 + PC).network.database_subnet_cidrs is None


@pytest.mark.parametrize("cidr", ["10.0.0.0/16", "10.1.0.0/20", "172.16.0.0/12", "192.168.4.0/24", "10.0.0.0/27",
                                  "10.0.0.0/28", "10.0.0.0/32"])
def test_the_last_blocks_are_ipaddresss_last_subnets(cidr: str) -> None:
    """The accounting database's /28s come from the VPC's end without listing every block before them: the same
    blocks ``ipaddress`` lists, for every prefix and count, and what it does with a prefix the VPC cannot hold."""
    vpc = ipaddress.IPv4Network(cidr)
    for prefix in range(vpc.prefixlen, min(vpc.prefixlen + 13, 33)):  # up to 4,096 blocks listed
        listed = list(vpc.subnets(new_prefix=prefix))
        for count in (1, 2, 3):
            assert last_blocks(vpc, prefix, count) == listed[-count:], (prefix, count)
    for prefix in (vpc.prefixlen - 1, 33):
        try:
            expected: object = list(vpc.subnets(new_prefix=prefix))[-2:]
        except ValueError as exc:
            expected = type(exc)
        try:
            got: object = last_blocks(vpc, prefix, 2)
        except ValueError as exc:
            got = type(exc)
        assert got == expected, prefix
