"""The plan shows the teams as the scheduler holds them (on Slurm: accounts, members, shares, caps per partition,
the slurm.conf enforcement, how to let a user in), and says PCS's managed records end with the cluster."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console
from support import PCS_ACCOUNTING, ROOT
from typer.testing import CliRunner

from fmcluster import checks, config
from fmcluster.cli import app
from fmcluster.cli.planview import print_plan

EXAMPLE = ROOT / "examples" / "p5-slurm-accounting.yaml"


def _text(path: Path) -> str:
    plan, _ = checks.validate(config.load(path))
    buffer = io.StringIO()
    print_plan(plan, Console(file=buffer, width=200, color_system=None), wide=True)
    return " ".join(buffer.getvalue().split())


def test_the_plan_shows_each_team_s_account_members_shares_and_caps() -> None:
    result = CliRunner().invoke(app, ["plan", str(EXAMPLE), "-o", "json"])
    assert result.exit_code == 0, result.output
    slurm = json.loads(result.stdout)["teams"]["slurm"]
    accounts = {a["account"]: a for a in slurm["accounts"]}
    assert accounts["research"]["members"] == ["alice", "bob"] and accounts["research"]["fair_share"] == 3
    assert accounts["research"]["caps"] == [{"partition": "gpu", "qos": "research-gpu", "nodes": 2}]
    assert accounts["prod"]["caps"] == [{"partition": "gpu", "qos": "prod-gpu", "nodes": 2}]
    assert accounts["prod"]["default_account_of"] == ["carol"]  # bob's default is research, his first team
    assert slurm["settings"]["AccountingStorageEnforce"] == "associations,limits,qos"
    text = _text(EXAMPLE)
    assert "research Slurm account, fair share 3; alice, bob; at most 2 nodes in gpu (QoS research-gpu)" in text
    assert "every team can always get its guaranteed nodes" in text
    assert "Invalid account or account/partition combination specified" in text
    assert "sacctmgr -i add user USER Account=research Partition=gpu QOS=research-gpu" in text


def test_a_project_without_teams_has_no_teams_section() -> None:
    path = ROOT / "examples" / "p5en-slurm-accounting.yaml"
    result = CliRunner().invoke(app, ["plan", str(path), "-o", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["teams"] is None
    assert " teams " not in _text(path)


def test_the_plan_of_a_pcs_accounting_project_says_the_records_end_with_the_cluster(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(PCS_ACCOUNTING)
    text = _text(path)
    assert "the records live with the cluster: deleting it, or a replacement (a change of its size or subnets), " \
           "deletes them" in text
    assert "cannot be turned off again" in text
    result = CliRunner().invoke(app, ["plan", str(path), "-o", "json"])
    assert "deletes them" in json.loads(result.stdout)["accounting"]["kept"]


def test_the_plan_of_an_eks_teams_project_says_how_task_governance_enforces_each_key() -> None:
    path = ROOT / "examples" / "p5-hyperpod-eks-teams.yaml"
    result = CliRunner().invoke(app, ["plan", str(path), "-o", "json"])
    teams = json.loads(result.stdout)["teams"]
    assert teams["enforced_by"] == "hyperpod-eks"
    assert {e["key"] for e in teams["enforced"]} == {"fair_share", "guaranteed", "borrow", "lend", "preempt"}
    text = _text(path)
    assert "not enforced" not in text
    assert "teams research, inference: enforced by hyperpod-eks" in text and "ComputeQuotaResources" in text


def test_the_plan_says_whether_the_partition_qos_limits_are_enforced() -> None:
    """slurm.conf(5): a QoS's limits bite only with AccountingStorageEnforce=limits, which teams bring."""
    for example, enforced in (("p5-slurm-accounting", True), ("p5en-slurm-accounting", False)):
        path = ROOT / "examples" / f"{example}.yaml"
        result = CliRunner().invoke(app, ["plan", str(path), "-o", "json"])
        assert json.loads(result.stdout)["accounting"]["qos_limits_enforced"] is enforced, example
        words = "its limits enforced" if enforced else "its limits not enforced: AccountingStorageEnforce comes with"
        assert f"a QoS per partition ({words}" in _text(path), example
