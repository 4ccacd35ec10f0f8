"""HyperPod on EKS: the compute subnet must hold every EFA interface's address and the addresses the Amazon VPC CNI
holds for pods (its default warm pool: two interfaces' worth on network card 0), per node of every instance group,
the system group too. The figures are computed here from EC2's data (moto's copy of DescribeInstanceTypes), not from
the plan's; a subnet too small is an error at its line; the plan prints how the count adds up."""

from __future__ import annotations

from pathlib import Path

import pytest
from moto.ec2.models.instance_types import INSTANCE_TYPES as EC2
from support import ROOT
from typer.testing import CliRunner

from fmcluster import checks, config
from fmcluster.cli import app
from fmcluster.errors import ConfigError
from fmcluster.plan import make_plan
from fmcluster.plan.hyperpod_eks import SYSTEM_IPV4_PER_INTERFACE

TEAMS = ROOT / "examples" / "p5-hyperpod-eks-teams.yaml"
PLAN = ROOT / "examples" / "p5en-hyperpod-eks.yaml"


def _expected(instance_type: str, efa_type: bool = True) -> int:
    """One node's addresses from EC2's data: two interfaces' addresses on card 0 (the VPC CNI's default warm pool,
    WARM_ENI_TARGET=1; card 0 only without ENABLE_MULTI_NIC), plus one for each EFA interface (type efa) on the other
    cards; an efa-only interface has no address but takes one of card 0's interface slots."""
    net = EC2[instance_type]["NetworkInfo"]
    per_interface = net["Ipv4AddressesPerInterface"]
    card0 = net["NetworkCards"][0]["MaximumNetworkInterfaces"]
    efa = (net.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0)
    card0_efa = efa == net["MaximumNetworkCards"] and efa > 0  # FACTS.md section 1: card 0 carries EFA iff equal
    if efa_type:
        return min(2, card0) * per_interface + efa - card0_efa
    return min(2, card0 - card0_efa) * per_interface


def test_the_system_types_addresses_per_interface_are_ec2s():
    for kind, count in SYSTEM_IPV4_PER_INTERFACE.items():
        assert EC2[kind.removeprefix("ml.")]["NetworkInfo"]["Ipv4AddressesPerInterface"] == count, kind


@pytest.mark.parametrize("path, gpu_type, nodes", [(TEAMS, "p5.48xlarge", 16), (PLAN, "p5en.48xlarge", 8)],
                         ids=["teams", "plan"])
def test_the_eks_examples_count_efa_and_pod_addresses(path: Path, gpu_type: str, nodes: int):
    plan = make_plan(config.load(path).project)
    want = nodes * _expected(gpu_type) + 2 * _expected("m5.2xlarge")  # the default system group: 2 x ml.m5.2xlarge
    assert plan.network.node_ips == want
    assert plan.network.node_ips > nodes * 100  # not one address per node: p5 16 x 131 + 60, p5en 8 x 115 + 60
    assert plan.network.ips_usable >= plan.network.ips_needed > want  # with headroom and reserved, and it fits
    (group,) = plan.groups
    assert group.ips_per_node == _expected(gpu_type)


def test_efa_only_interfaces_take_no_address_but_a_slot_on_card_zero():
    groups = "    groups:\n      shared: {interface_type: efa-only}\n"
    text = TEAMS.read_text().replace("    training_operator: true\n", "    training_operator: true\n" + groups)
    plan = make_plan(config.parse(text, TEAMS).project)
    assert plan.groups[0].ips_per_node == _expected("p5.48xlarge", efa_type=False) == 50


def test_a_compute_subnet_too_small_for_them_is_an_error_at_its_line():
    text = TEAMS.read_text().replace("  vpc_cidr: 10.20.0.0/16\n", "  vpc_cidr: 10.20.0.0/16\n  compute_subnet_prefix: 22\n")
    with pytest.raises(ConfigError) as raised:
        checks.validate(config.parse(text, Path("teams.yaml")))
    [problem] = [p for p in raised.value.problems if p.check == "compute-subnet-size"]
    assert problem.path == "network.compute_subnet_prefix"
    assert problem.line == next(i for i, line in enumerate(text.splitlines(), 1) if "compute_subnet_prefix" in line)
    assert f"({16 * _expected('p5.48xlarge') + 2 * _expected('m5.2xlarge')} node IPs" in problem.message
    assert "set compute_subnet_prefix: 20" in problem.hint


def test_a_system_type_whose_addresses_are_unknown_is_a_warning():
    text = TEAMS.read_text().replace("    training_operator: true\n",
                                     "    training_operator: true\n    system_group: {instance_type: ml.c5.2xlarge}\n")
    _, warnings = checks.validate(config.parse(text, Path("teams.yaml")))
    [warning] = [w for w in warnings if w.check == "hyperpod-eks-addresses"]
    assert warning.path == "orchestrator.hyperpod_eks.system_group.instance_type"
    assert "not counted" in warning.message


def test_the_plan_prints_how_the_addresses_add_up(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    result = CliRunner().invoke(app, ["plan", str(TEAMS)])
    assert result.exit_code == 0, result.output
    assert f"shared: 16 x {_expected('p5.48xlarge')} (100 held by the VPC CNI for pods" in result.stdout
    assert "+ 31 EFA interfaces) = 2,096" in result.stdout
    assert f"system: 2 x {_expected('m5.2xlarge')}" in result.stdout
