"""`fmcluster new` and `plan` as a user runs them."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest
import yaml
from support import ROOT
from typer.testing import CliRunner

from fmcluster.cli import app

runner = CliRunner()


@pytest.fixture
def projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "projects"
    folder.mkdir()
    (folder / "default.yaml").write_text((ROOT / "projects" / "default.yaml").read_text())
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(folder))
    return folder


def test_new_writes_its_own_name_tags_and_a_free_cidr(projects: Path) -> None:
    for name in ("llama", "mistral"):
        result = runner.invoke(app, ["new", name])
        assert result.exit_code == 0, result.output
    cidrs = []
    for path in sorted(projects.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        cidrs.append(ipaddress.ip_network(data["network"]["vpc_cidr"]))
        if path.stem != "default":
            assert data["name"] == path.stem and data["tags"]["project"] == path.stem
    assert all(not a.overlaps(b) for i, a in enumerate(cidrs) for b in cidrs[i + 1:])
    assert runner.invoke(app, ["validate", "llama"]).exit_code == 0


def test_new_from_a_path_and_refuses_to_overwrite(projects: Path) -> None:
    source = ROOT / "examples" / "p5en-capacity-block.yaml"
    assert runner.invoke(app, ["new", "blocky", "--from", str(source)]).exit_code == 0
    data = yaml.safe_load((projects / "blocky.yaml").read_text())
    assert data["compute_groups"][0]["capacity"]["type"] == "capacity-block"
    before = (projects / "blocky.yaml").read_text()
    result = runner.invoke(app, ["new", "blocky"])
    assert result.exit_code == 1 and "already exists" in result.stderr
    assert (projects / "blocky.yaml").read_text() == before


def test_new_rejects_a_bad_name(projects: Path) -> None:
    result = runner.invoke(app, ["new", "Bad_Name"])
    assert result.exit_code == 2 and not (projects / "Bad_Name.yaml").exists()


def test_plan_json_has_layout_and_totals(projects: Path) -> None:
    result = runner.invoke(app, ["plan", "default", "--output", "json"])
    data = json.loads(result.stdout)
    group = data["groups"][0]
    assert len(group["interfaces"]) == 33 and group["efa_fraction"] == 1.0 and group["ips"] == 2
    assert data["totals"]["gpus"] == 16
    assert data["network"]["compute_subnet_cidr"] == "10.0.4.0/22"


def test_plan_text_shows_the_figures(projects: Path) -> None:
    result = runner.invoke(app, ["plan", str(ROOT / "examples" / "p6e-gb200-ultraserver.yaml")])
    assert result.exit_code == 0
    assert "1 ENA + 16 EFA" in result.stdout and "100%" in result.stdout and "unknown" in result.stdout
