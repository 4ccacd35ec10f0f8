"""`plan -o json` carries every section the text shows: scheduler, monitoring, OS, associations with their
import/export events, checkpoint goodput."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from support import ALL_FILES, BASE
from typer.testing import CliRunner

from fmcluster import checks, config
from fmcluster.cli import app
from fmcluster.cli.planview import print_plan

runner = CliRunner()


def _json(path: Path) -> dict:
    result = runner.invoke(app, ["plan", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _text(path: Path) -> str:
    plan, _ = checks.validate(config.load(path))
    buffer = io.StringIO()
    print_plan(plan, Console(file=buffer, width=200, color_system=None), wide=True)
    return " ".join(buffer.getvalue().split())


@pytest.mark.parametrize("path", ALL_FILES, ids=[p.stem for p in ALL_FILES])
def test_json_has_every_section_of_the_text(path: Path) -> None:
    data, text = _json(path), _text(path)
    assert f"OS {data['os']['name']}" in text
    scheduler = data["scheduler"]
    if scheduler["type"] == "parallelcluster":
        assert f"cluster {scheduler['cluster_name']}" in text and scheduler["head_node"]["instance_type"] in text
        for queue in scheduler["queues"]:
            assert f"queue {queue['name']}" in text and queue["capacity_type"] in text
    elif scheduler["type"] == "hyperpod":
        for group in scheduler["instance_groups"]:
            assert f"group {group['name']} {group['count']} x {group['instance_type']}" in text
    elif scheduler["type"] == "pcs":
        assert f"Slurm {scheduler['slurm_version']}" in text and f"size {scheduler['size']}" in text
        groups = {n["name"]: n for n in scheduler["node_groups"]}
        for queue in scheduler["queues"]:
            first = groups[queue["node_groups"][0]]
            assert f"queue {queue['name']} {first['max_count']} x {first['instance_type']}" in text
    elif scheduler["type"] == "hyperpod-eks":
        assert f"EKS {scheduler['kubernetes_version']}" in text
        assert all(f"{name} {version}" in text for name, version in scheduler["addons"].items())
        for group in scheduler["instance_groups"]:
            assert f"group {group['name']} {group['count']} x {group['instance_type']}" in text
        for team in scheduler["teams"]:
            assert f"team {team['name']} fair share {team['fair_share']}" in text
    else:
        assert "launch templates only" in text
    monitoring = data["monitoring"]
    if monitoring is not None:
        for role in monitoring["roles"].values():
            assert ", ".join(role["exporters"]) in text
        assert f"~{monitoring['active_series']['gpu_nodes_total']:,}" in text
    for association in data["storage"]["associations"]:
        assert association["words"][0] in text  # "/datasets <-> s3://... (whose bucket)", the plan's own words


def test_associations_carry_their_events_and_their_bucket(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(BASE + """storage:
  external_buckets: [team-datasets]
  fsx:
    associations:
      - file_system_path: /datasets
        data_repository_path: s3://team-datasets/llm/
        import_events: [NEW, CHANGED]
        export_events: []
      - file_system_path: /checkpoints
""")
    [team, own] = _json(path)["storage"]["associations"]
    assert team == {"file_system_path": "/datasets", "data_repository_path": "s3://team-datasets/llm/",
                    "external": True, "import_events": ["NEW", "CHANGED"], "export_events": [],
                    "batch_import_on_create": True, "exports_deletions": False,
                    "words": team["words"]}
    assert team["words"][-1] == "to S3: exports nothing (import only)"
    assert own["data_repository_path"] == "s3://<the demo-storage bucket>/checkpoints/" and not own["external"]
    assert own["export_events"] == ["NEW", "CHANGED"] and not own["exports_deletions"]  # deletions only when asked
    text = _text(path)
    assert "/datasets <-> s3://team-datasets/llm/ (a bucket the project does not own)" in text
    assert "deleting a file under /checkpoints leaves it in s3://<the demo-storage bucket>/checkpoints/" in text


def test_json_carries_the_checkpoint_goodput(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(BASE + "storage:\n  checkpoint: {parameters: 70e9, interval_minutes: 30}\n")
    goodput = _json(path)["storage"]["goodput"]
    assert goodput["interval_seconds"] == 1800 and goodput["write_share"] == pytest.approx(
        goodput["write_seconds"] / 1800)


def test_hyperpod_json_names_the_controller_and_the_nvlink_domains() -> None:
    from support import ROOT
    data = _json(ROOT / "examples" / "p6e-gb200-hyperpod-training-plan.yaml")["scheduler"]
    kinds = [g["node_type"] for g in data["instance_groups"]]
    assert kinds[0] == "Controller" and "Compute" in kinds
    domains = [g["ultraservers"]["nvlink_domains"] for g in data["instance_groups"] if g["ultraservers"]]
    assert domains and all(d >= 1 for d in domains)


@pytest.mark.parametrize(("orchestrator", "store", "words", "policy"), [
    ("parallelcluster", None, "Aurora MySQL Serverless v2 in demo-accounting, 0.5-4 ACU",
     "fair share, a QoS per partition (its limits not enforced: AccountingStorageEnforce comes with teams), tracks "
     "gres/gpu"),
    ("hyperpod", "controller", "on the controller node",
     "a QoS per partition (its limits not enforced: AccountingStorageEnforce comes with teams)"),
])
def test_accounting_says_where_the_records_live_and_what_is_kept(orchestrator: str, store: str | None, words: str,
                                                                 policy: str, tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    extra = f", store: {store}" if store else ", database: {max_capacity_acu: 4}"
    path.write_text(BASE + f"orchestrator:\n  type: {orchestrator}\n  accounting: {{enabled: true{extra}}}\n")
    data, text = _json(path), _text(path)
    accounting = data["accounting"]
    # what fmcluster applies on that orchestrator, not the defaults it would apply elsewhere
    assert accounting["store"] == (store or "database")
    assert accounting["tres"] == (["gres/gpu"] if orchestrator == "parallelcluster" else [])
    assert words in text and f" Slurm {policy} monitoring " in text  # the section's last row, all of it
    assert ("KEPT" in text) is (store is None) and (accounting["database"] is None) is (store is not None)
    if store is None:  # the minimum capacity is billed every hour
        assert accounting["database"]["min_acu_hours_per_month"] == 365 and "~365 ACU-hours a month" in text
    path.write_text(BASE + f"orchestrator: {{type: {orchestrator}}}\n")
    assert _json(path)["accounting"] is None and "accounting" not in _text(path).split()
