"""p5.4xlarge, the one-GPU p5: one network card that carries the one EFA interface (FACTS.md section 1).

The layout rule (FACTS.md "The EFA interface layout"; the EC2 user guide "Maximize network bandwidth on Amazon EC2
instances with multiple network cards": ENA primary on card 0 device 0, ``efa-only`` on card 0 device 1 where card 0
supports EFA) and ParallelCluster's rule for card 0 (it carries EFA iff MaximumEfaInterfaces ==
MaximumNetworkCards, here 1 == 1) give exactly two interfaces: the ENA primary and one ``efa-only``, one IP per node.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import ROOT, moto_instance_types
from typer.testing import CliRunner

from fmcluster import catalog
from fmcluster.cli import app

PROJECT = """\
name: small
availability_zone_id: use1-az6
compute_groups:
  - name: gpu
    instance_type: p5.4xlarge
    count: 2
"""

runner = CliRunner()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(PROJECT, encoding="utf-8")
    return path


def test_ec2_data_has_one_card_with_one_efa_at_100_gbps() -> None:
    """The figures the catalog uses, read from moto's copy of DescribeInstanceTypes (not from the catalog)."""
    net = moto_instance_types()["p5.4xlarge"]["NetworkInfo"]
    assert net["MaximumNetworkCards"] == 1 and net["EfaInfo"]["MaximumEfaInterfaces"] == 1
    assert [c["PeakBandwidthInGbps"] for c in net["NetworkCards"]] == [100.0]
    assert "efa-only" in net["NetworkCards"][0]["InterfaceTypes"]
    t = catalog.get("p5.4xlarge")
    assert t.efa_aggregate_gbps == net["NetworkCards"][0]["PeakBandwidthInGbps"]


def test_plan_json_shows_one_efa_interface_at_100_gbps(project: Path) -> None:
    result = runner.invoke(app, ["plan", str(project), "-o", "json"])
    assert result.exit_code == 0, result.output
    group = json.loads(result.output)["groups"][0]
    nics = [(i["card"], i["device"], i["type"]) for i in group["interfaces"]]
    assert nics == [(0, 0, "interface"), (0, 1, "efa-only")]
    assert group["efa_interfaces"] == 1
    assert group["efa_gbps_exposed"] == 100 and group["efa_gbps_spec"] == 100
    assert group["ips_per_node"] == 1
    assert group["gpus"] == 2 and group["gpu_model"] == "H100"
    assert group["fsx_efa_client_interfaces"] == 1  # not in the FSx guide's table: its default for one card
    assert json.loads(result.output)["storage"]["checkpoint_bound"]["bytes"] == 2 * 80 * 10**9


def test_plan_table_shows_one_ena_and_one_efa(project: Path) -> None:
    result = runner.invoke(app, ["plan", str(project)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.lstrip().startswith("gpu ") and "ENA" in line)
    assert "1 ENA + 1 EFA" in row and "100/100" in row and "100%" in row


@pytest.mark.parametrize("orchestrator", ["parallelcluster", "hyperpod"])
def test_orchestrators_accept_it(tmp_path: Path, orchestrator: str) -> None:
    """ParallelCluster takes any type DescribeInstanceTypes knows; HyperPod lists ml.p5.4xlarge
    (botocore's sagemaker ClusterInstanceType)."""
    text = PROJECT.replace("compute_groups:", f"orchestrator: {{type: {orchestrator}}}\ncompute_groups:")
    if orchestrator == "hyperpod":
        arn = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/tp"
        text += f'    capacity: {{type: training-plan, arn: "{arn}"}}\n'
    path = tmp_path / "small.yaml"
    path.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output


def test_self_managed_launch_template_has_the_ena_primary_and_one_efa_only(project: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The synthesized launch template (stacks/launch_template.py) of the project: exactly two interfaces."""
    from fmcluster.stacks.app import build, new_app

    monkeypatch.chdir(ROOT)
    outdir = tmp_path / "cdk.out"
    cdk = new_app(outdir=str(outdir), context=json.loads((ROOT / "cdk.json").read_text())["context"])
    build(cdk, [str(project)])
    cdk.synth()
    manifest = json.loads((outdir / "manifest.json").read_text())
    template = json.loads((outdir / manifest["artifacts"]["small-cluster"]["properties"]["templateFile"]).read_text())
    data = [r["Properties"]["LaunchTemplateData"] for r in template["Resources"].values()
            if r["Type"] == "AWS::EC2::LaunchTemplate"]
    assert len(data) == 1
    assert data[0]["InstanceType"] == "p5.4xlarge"
    nics = [(n["NetworkCardIndex"], n["DeviceIndex"], n["InterfaceType"]) for n in data[0]["NetworkInterfaces"]]
    assert nics == [(0, 0, "interface"), (0, 1, "efa-only")]
