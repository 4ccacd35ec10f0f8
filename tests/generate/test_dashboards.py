"""Dashboards: built for every project, every query names a metric our exporters or rules emit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fmcluster.config import load
from fmcluster.generate import dashboards, metrics

ROOT = Path(__file__).resolve().parents[2]
PROJECT_FILES = sorted((ROOT / "projects").glob("*.yaml")) + sorted((ROOT / "examples").glob("*.yaml"))


def _panels(model: dict) -> Iterator[dict]:
    for panel in model.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # panels inside collapsed rows


@pytest.fixture(scope="module")
def models() -> dict[str, dict]:
    return dashboards.build_dashboards("llama")


def test_every_panel_has_a_query_on_a_data_source_we_provision(models: dict[str, dict]) -> None:
    """Which metrics a Prometheus query reads is checked against the exporter table (test_exporter_table)."""
    problems = []
    for uid, model in models.items():
        for panel in _panels(model):
            if panel["type"] == "row":
                continue
            if not panel.get("targets"):
                problems.append(f"{uid}: panel {panel['title']!r} has no query")
            for target in panel.get("targets", []):
                kind = target["datasource"]["type"]
                if kind == "cloudwatch":
                    if target["namespace"] != "AWS/FSx" or target["metricName"] not in metrics.CLOUDWATCH_FSX_METRICS:
                        problems.append(f"{uid}: {panel['title']!r} reads {target['namespace']}/{target['metricName']}")
                elif kind != "prometheus":
                    problems.append(f"{uid}: {panel['title']!r} uses data source type {kind!r}")
    assert not problems, "\n".join(problems)


def test_dashboards_cover_the_issue(models: dict[str, dict]) -> None:
    titles = {m["title"].split(" / ", 1)[1] for m in models.values()}
    assert titles == {"GPU health", "GPU utilisation", "EFA", "FSx for Lustre", "Slurm"}
    text = json.dumps(models)
    for metric in ("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
                   "DCGM_FI_DEV_THERMAL_VIOLATION", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_GPU_UTIL",
                   "node_amazonefa_retrans_pkts", "DataReadBytes",
                   # Slurm: queue depth, pending reasons, nodes down/drained, per-user GPU allocation
                   "slurm_partition_jobs_pending", "fmcluster:slurm_jobs_pending:sum_by_reason", "slurm_nodes_down",
                   "slurm_nodes_drain", "slurm_node_drain_reason_info", "fmcluster:slurm_user_gpus_allocated:sum"):
        assert metric in text, metric


def test_no_data_source_uid_is_baked_in(models: dict[str, dict]) -> None:
    for model in models.values():
        for panel in _panels(model):
            for target in panel.get("targets", []):
                assert target["datasource"]["uid"] in ("${datasource}", "${cloudwatch}")


def test_uids_are_stable_and_short() -> None:
    long_name = "a" * 32
    uids = dashboards.build_dashboards(long_name)
    assert all(len(uid) <= 40 for uid in uids)
    assert len(set(uids)) == len(uids)
    assert list(dashboards.build_dashboards(long_name)) == list(uids)


def test_the_slurm_dashboard_only_where_a_node_runs_the_slurm_metrics(tmp_path: Path) -> None:
    assert [uid for uid in dashboards.build_dashboards("x") if "slurm" in uid] == ["fmc-x-slurm"]
    assert not [uid for uid in dashboards.build_dashboards("x", slurm=False) if "slurm" in uid]
    from fmcluster.cli.dashboards import app
    from typer.testing import CliRunner

    root = Path(__file__).parents[2]
    # PCS: its login node collects them (p5-pcs has one); launch templates only (p5-odcr): nothing does
    for example, want in (("p5-pcs", True), ("p5-odcr", False)):
        out = tmp_path / example
        result = CliRunner().invoke(app, ["dashboards", "export", str(root / "examples" / f"{example}.yaml"),
                                          "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert any("slurm" in p.name for p in out.iterdir()) is want, example
    out = tmp_path / "default"
    assert CliRunner().invoke(app, ["dashboards", "export", str(root / "projects" / "default.yaml"),
                                    "--out", str(out)]).exit_code == 0
    assert any("slurm" in p.name for p in out.iterdir())  # ParallelCluster's head node runs slurmctld


def test_export_writes_one_json_file_per_dashboard(tmp_path: Path) -> None:
    paths = dashboards.export_dashboards("llama", tmp_path / "out")
    assert sorted(p.name for p in paths) == sorted(f"{uid}.json" for uid in dashboards.build_dashboards("llama"))
    for path in paths:
        assert json.loads(path.read_text())["uid"] == path.stem


@pytest.mark.parametrize("path", PROJECT_FILES, ids=[p.stem for p in PROJECT_FILES])
def test_dashboards_for_every_project(path: Path, tmp_path: Path) -> None:
    project = load(path).project
    paths = dashboards.export_dashboards(project.name, tmp_path)
    assert len(paths) >= 4
