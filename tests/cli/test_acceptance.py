"""`fmcluster acceptance render` for every example's orchestrator, and `report` with its exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fmcluster.bootstrap import kubernetes_jobs
from support import ALL_FILES, ROOT, team_account
from typer.testing import CliRunner

from fmcluster import config, orchestrators
from fmcluster.cli import app
from fmcluster.cli.acceptance import RENDERERS
from fmcluster.plan import make_plan

FIXTURES = Path(__file__).resolve().parents[1] / "acceptance" / "fixtures"
runner = CliRunner()


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.stem)
def test_render_writes_the_jobs_and_says_what_to_run(path: Path, tmp_path: Path):
    kube = RENDERERS[config.load(path).project.orchestrator.type] is kubernetes_jobs.render_acceptance
    image = ["--image", "nccl-tests:1"] if kube else []  # Kubernetes jobs run in containers: an image is required
    cluster = make_plan(config.load(path).project).cluster
    account = ["--account", team_account(cluster)] if team_account(cluster) else []  # Slurm teams: run as one
    result = runner.invoke(app, ["acceptance", "render", str(path), "--out", str(tmp_path / "acc"), *image, *account])
    assert result.exit_code == 0, result.output
    readme = (tmp_path / "acc" / "README.md").read_text()
    assert readme in result.output
    manifest = json.loads((tmp_path / "acc" / "acceptance.json").read_text())
    if kube:
        for group in manifest["groups"]:
            assert f"kubectl apply -f {group['group']}/node-checks.yaml" in readme
            assert (tmp_path / "acc" / group["group"] / "node-checks.yaml").is_file()
    elif not orchestrators.get(manifest["orchestrator"]).slurm:
        assert "nccl-mpirun.sh group HOSTFILE" in readme and "sbatch" not in readme
    else:
        for group in manifest["groups"]:
            assert f"sbatch {group['group']}/node-checks.sbatch" in readme
            for job in group["jobs"]:
                assert (tmp_path / "acc" / group["group"] / job["file"]).is_file()


def test_kubernetes_render_without_an_image_says_what_to_give(tmp_path: Path):
    result = runner.invoke(app, ["acceptance", "render", str(ROOT / "examples" / "p5en-hyperpod-eks.yaml"),
                                 "--out", str(tmp_path / "acc")])
    assert result.exit_code == 2
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("error: orchestrator.type hyperpod-eks runs the acceptance jobs in containers")
    assert "--image" in result.output


def test_render_refuses_a_broken_project_with_its_line(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: demo\navailability_zone_id: use1-az6\ncompute_groups:\n  - name: train\n"
                   "    instance_type: p5.48xlarge\n    count: two\n")
    result = runner.invoke(app, ["acceptance", "render", str(bad), "--out", str(tmp_path / "acc")])
    assert result.exit_code == 2 and "bad.yaml:6" in result.output and "count" in result.output
    assert not (tmp_path / "acc").exists()


@pytest.mark.parametrize("fixture, code, words", [
    ("p5-pair", 0, "acceptance: passed"),
    ("p6-b200-socket", 1, "NCCL fell back to sockets"),
    ("p5en-slow", 1, "slow node ip-10-1-0-13"),
    ("gb200", 1, "Only 16 NvLinks are up out of the expected 18"),
    ("truncated", 1, "logs/nccl-train-all_gather_perf.log: truncated"),
])
def test_report_exit_code_and_message(fixture: str, code: int, words: str):
    result = runner.invoke(app, ["acceptance", "report", str(FIXTURES / fixture)])
    assert result.exit_code == code, result.output
    assert words in result.output


def test_report_json_and_margin():
    result = runner.invoke(app, ["acceptance", "report", str(FIXTURES / "p5en-slow"), "-o", "json", "--margin", "0.45"])
    data = json.loads(result.output)
    # 290 vs ~484 GB/s is 40% below the median: inside a 45% margin, so nothing is flagged.
    assert result.exit_code == 0 and data["passed"] and data["slow_nodes"] == [] and data["margin"] == 0.45
    assert len(data["nccl"]) == 6 and data["nccl"][0]["rows"][-1]["size"] == 16 * 2**30


@pytest.mark.parametrize("args, words", [
    (["--margin", "5"], "--margin 5.0: a fraction between 0 and 1"),
    (["-o", "yaml"], "--output 'yaml': one of table, json"),
])
def test_report_refuses_bad_options(args: list[str], words: str):
    result = runner.invoke(app, ["acceptance", "report", str(FIXTURES / "p5-pair"), *args])
    assert result.exit_code == 2 and words in result.output


def test_report_on_no_logs_names_the_place(tmp_path: Path):
    result = runner.invoke(app, ["acceptance", "report", str(tmp_path)])
    assert result.exit_code == 2 and f"{tmp_path}: no *.log or *.out files" in result.output
    (tmp_path / "x.log").write_text("not ours\n")
    result = runner.invoke(app, ["acceptance", "report", str(tmp_path / "x.log")])
    assert result.exit_code == 2 and "x.log: no FMC-ACCEPTANCE line" in result.output
    assert "Traceback" not in result.output
