"""``NAME-network`` with a Slurm accounting database: two more subnets in two Availability Zones, and nothing else
changed (synthesized alone, cfn-lint and cdk-nag clean)."""

from __future__ import annotations

import json

import pytest
from cfnlint.api import ManualArgs, lint
from support import plan_of

P5 = "compute_groups:\n  - {name: g, instance_type: p5.48xlarge, count: 2}\n"
ACCOUNTING = "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n"


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from aws_cdk import App

    from fmcluster.stacks.app import add_nag
    from fmcluster.stacks.network import NetworkStack

    out = {}
    for variant, extra in (("plain", ""), ("acct", ACCOUNTING)):  # one project name: the same logical IDs
        outdir = tmp_path_factory.mktemp("cdk.out")
        app = App(outdir=str(outdir))
        NetworkStack(app, "demo-network", plan=plan_of("name: demo\navailability_zone_id: use1-az6\n"
                                                       + P5 + extra).network)
        add_nag(app, verbose=True)
        app.synth()  # raises if cdk-nag finds anything
        out[variant] = json.loads((outdir / "demo-network.template.json").read_text())
    return out


def test_two_database_subnets_in_the_regions_first_two_zones_with_no_route_out(templates: dict) -> None:
    resources = templates["acct"]["Resources"]
    subnets = {k: r["Properties"] for k, r in resources.items()
               if r["Type"] == "AWS::EC2::Subnet" and k.startswith("DatabaseSubnet")}
    assert [(p["CidrBlock"], p["AvailabilityZone"]) for p in subnets.values()] == [
        ("10.0.255.224/28", {"Fn::Select": [0, {"Fn::GetAZs": ""}]}),
        ("10.0.255.240/28", {"Fn::Select": [1, {"Fn::GetAZs": ""}]})]
    [table] = [k for k, r in resources.items() if r["Type"] == "AWS::EC2::RouteTable" and k.startswith("Database")]
    assert not [r for r in resources.values() if r["Type"] == "AWS::EC2::Route"
                and r["Properties"]["RouteTableId"] == {"Ref": table}]
    associated = {r["Properties"]["SubnetId"]["Ref"] for r in resources.values()
                  if r["Type"] == "AWS::EC2::SubnetRouteTableAssociation"
                  and r["Properties"]["RouteTableId"] == {"Ref": table}}
    assert associated == set(subnets)
    outputs = templates["acct"]["Outputs"]
    assert [outputs[k]["Export"]["Name"] for k in ("DatabaseSubnet1Id", "DatabaseSubnet2Id")] == [
        "demo-DatabaseSubnet1Id", "demo-DatabaseSubnet2Id"]


def test_accounting_adds_to_the_network_and_changes_nothing_in_it(templates: dict) -> None:
    """Everything the network had without accounting is there, the same (names aside), so turning it on replaces
    nothing."""
    def without_database(template: dict) -> str:
        kept = {k: v for k, v in template["Resources"].items() if not k.startswith("Database")}
        outputs = {k: v for k, v in template["Outputs"].items() if not k.startswith("Database")}
        return json.dumps({"Resources": kept, "Outputs": outputs}, sort_keys=True)

    on, off = without_database(templates["acct"]), without_database(templates["plain"])
    assert on != without_database({"Resources": {}, "Outputs": {}})
    assert on == off


def test_the_network_with_database_subnets_is_cfn_lint_clean(templates: dict) -> None:
    matches = lint(json.dumps(templates["acct"]), config=ManualArgs(regions=["us-east-1"]))
    assert [str(m) for m in matches] == []
