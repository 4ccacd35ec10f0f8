"""`fmcluster bootstrap versions` and `fmcluster bootstrap render`."""

from __future__ import annotations

import json
from pathlib import Path

from fmcluster.bootstrap import versions
from typer.testing import CliRunner

from fmcluster.cli.bootstrap import app

PROJECT = """\
name: llm
availability_zone_id: use1-az6
os: ubuntu-24.04
compute_groups:
  - name: train
    instance_type: p5en.48xlarge
    count: 4
orchestrator:
  type: hyperpod
"""


def test_versions_prints_the_file_and_the_placeholders():
    result = CliRunner().invoke(app, ["versions"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(versions.VERSIONS_FILE.read_text())
    assert "#   pyxis.source.sha256" in result.output
    assert "0 not pinned that a node needs" in result.output


def test_render_writes_a_bundle_per_group_and_role(tmp_path: Path):
    project = tmp_path / "llm.yaml"
    project.write_text(PROJECT)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["render", str(project), "--out", str(out), "--role", "compute", "--role", "login"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "train-compute/manifest.json").read_text())
    assert manifest["flavour"] == "hyperpod" and manifest["instance_type"] == "p5en.48xlarge"
    assert (out / "train-compute/bootstrap.sh").is_file()
    assert (out / "train-login/steps/10-preflight.sh").is_file()
    assert "not pinned" not in result.output


def test_render_reports_a_bad_project(tmp_path: Path):
    project = tmp_path / "bad.yaml"
    project.write_text(PROJECT.replace("p5en.48xlarge", "p5en.48xlargee"))
    result = CliRunner().invoke(app, ["render", str(project), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "did you mean 'p5en.48xlarge'" in result.output


def test_render_rejects_an_unknown_role(tmp_path: Path):
    project = tmp_path / "llm.yaml"
    project.write_text(PROJECT)
    result = CliRunner().invoke(app, ["render", str(project), "--out", str(tmp_path / "o"), "--role", "worker"])
    assert result.exit_code == 2
    assert "unknown role 'worker'" in result.output
