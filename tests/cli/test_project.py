"""`fmcluster validate`, `plan` and `new` as a user runs them: bad files exit 2 with no traceback, warnings
named and silenced by name."""

from __future__ import annotations

import ipaddress
import json
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from support import ALL_FILES, BASE, ROOT
from typer.testing import CliRunner

from fmcluster.cli import app
from fmcluster.cli.project import copy_project

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
    assert "1 ENA + 16 EFA" in result.stdout and "100%" in result.stdout and "unconfirmed" in result.stdout


# --- bad files and warnings at the command line ------------------------------------------------

def test_placement_group_with_capacity_block_is_a_warning(tmp_path: Path) -> None:
    text = BASE + "    placement_group: true\n    capacity: {type: capacity-block, reservation_id: cr-0123456789abcdef0}\n"
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "warning" in result.stderr and "placement_group" in result.stderr and f"{path}:7" in result.stderr
    assert "[placement-group-with-capacity-block]" in result.stderr  # the name suppress_warnings takes
    # and it can be silenced by name
    path.write_text(text + "suppress_warnings: [placement-group-with-capacity-block, bootstrap-unpinned, "
                    "fsx-throughput-low]\n")
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0 and "warning" not in result.stderr


def test_errors_cannot_be_suppressed(tmp_path: Path) -> None:
    text = BASE + "suppress_warnings: [compute-subnet-size]\n"
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["validate", str(path)])
    assert "errors cannot be suppressed" in result.stderr


@pytest.mark.parametrize("broken", [
    BASE.replace("count: 2", "count: two"),
    BASE + "    capacity: {type: capacity-block}\n",
    BASE.replace("p5.48xlarge", "p9.48xlarge"),
    "just a string\n",
    "",
])
def test_cli_exit_code_2_and_no_traceback(tmp_path: Path, broken: str) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(broken)
    for command in (["validate", str(path)], ["plan", str(path)], ["plan", str(path), "--output", "json"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, (command, result.output)
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_json_output_lists_problems(tmp_path: Path) -> None:
    import json

    path = tmp_path / "demo.yaml"
    path.write_text(BASE.replace("count: 2", "count: two"))
    result = runner.invoke(app, ["validate", str(path), "--output", "json"])
    data = json.loads(result.stdout)
    assert data["ok"] is False and data["problems"][0]["line"] == 6


def test_named_project_must_match_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(tmp_path))
    (tmp_path / "other.yaml").write_text(BASE)
    result = runner.invoke(app, ["validate", "other"])
    assert result.exit_code == 2 and "rename the file" in result.stderr
    result = runner.invoke(app, ["validate", "missing"])
    assert result.exit_code == 2 and "known projects: other" in result.stderr


COMMENTED = """\
# Team A's pretraining project: read this before you change the capacity.
name: team-a   # becomes the new name
availability_zone_id: use1-az6
network:
  vpc_cidr: 10.0.0.0/16   # the new project gets its own
  # compute_subnet_prefix: 22
compute_groups:
  - name: train
    instance_type: p5.48xlarge
    count: 2       # two nodes while we test
    capacity:
      type: on-demand
storage:
  checkpoint:
    parameters: 7.0e+9   # 7B model
tags:
  team: pretraining    # who pays
"""


def test_new_keeps_the_comments_of_the_project_it_copies(projects: Path, tmp_path: Path) -> None:
    source = tmp_path / "team-a.yaml"
    source.write_text(COMMENTED)
    result = runner.invoke(app, ["new", "team-b", "--from", str(source)])
    assert result.exit_code == 0, result.output
    text = (projects / "team-b.yaml").read_text()
    for comment in ("# Team A's pretraining project: read this before you change the capacity.",
                    "# becomes the new name", "# the new project gets its own", "# compute_subnet_prefix: 22",
                    "count: 2       # two nodes while we test", "parameters: 7.0e+9   # 7B model", "# who pays"):
        assert comment in text, comment
    data = yaml.safe_load(text)
    assert data["name"] == "team-b" and data["tags"] == {"team": "pretraining", "project": "team-b"}
    assert data["network"]["vpc_cidr"] != "10.0.0.0/16"  # default.yaml holds 10.0.0.0/16
    assert "name: team-b   # becomes the new name" in text
    assert text.startswith("# fmcluster project team-b, created from ")
    # only the three values changed: the rest of the file is the source's, line for line
    changed = [(a, b) for a, b in zip(COMMENTED.splitlines(), text.splitlines()[1:]) if a != b]
    assert [a.split(":")[0].strip() for a, _ in changed] == ["name", "vpc_cidr"], changed


def test_new_adds_missing_network_and_tags_sections(projects: Path, tmp_path: Path) -> None:
    source = tmp_path / "bare.yaml"
    source.write_text("# bare\n" + BASE.replace("name: demo", "name: bare"))
    assert runner.invoke(app, ["new", "bare-copy", "--from", str(source)]).exit_code == 0
    text = (projects / "bare-copy.yaml").read_text()
    data = yaml.safe_load(text)
    assert "# bare" in text and data["tags"] == {"project": "bare-copy"}
    assert list(data).index("network") < list(data).index("compute_groups")
    assert ipaddress.ip_network(data["network"]["vpc_cidr"]).prefixlen == 16


@pytest.mark.parametrize("path", ALL_FILES, ids=[p.stem for p in ALL_FILES])
def test_new_changes_only_name_cidr_and_tags_of_every_project(path: Path, projects: Path) -> None:
    source = path.read_text()
    copied, cidr = copy_project(source, "copy", "")
    removed = [line for line in source.splitlines() if line not in copied.splitlines()]
    added = [line for line in copied.splitlines() if line not in source.splitlines()]
    assert all(re.match(r"(name|  vpc_cidr): ", line) for line in removed), removed
    assert all(re.match(r"(name: copy|  vpc_cidr: |tags:$|  project: copy$)", line) for line in added), added
    assert (cidr is None) == ("existing:" in source)


def test_new_works_in_an_empty_projects_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh folder has no default.yaml: `new` copies the default project shipped inside the package."""
    folder = tmp_path / "empty"
    folder.mkdir()
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(folder))
    result = runner.invoke(app, ["new", "first-team"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in folder.iterdir()) == ["first-team.yaml"]
    text = (folder / "first-team.yaml").read_text()
    assert text.startswith("# fmcluster project first-team, created from fmcluster's default project\n")
    assert yaml.safe_load(text)["compute_groups"] == yaml.safe_load((ROOT / "projects" / "default.yaml").read_text())[
        "compute_groups"]
    validated = runner.invoke(app, ["validate", "first-team"])
    assert validated.exit_code == 0 and "ok (0 warnings)" in validated.stdout, validated.output


def test_the_wheel_ships_the_default_project_alone() -> None:
    """pyproject.toml's package data: projects/default.yaml, and no other file of the projects folder."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setup["package-dir"]["fmcluster.projects"] == "projects" and "fmcluster.projects" in setup["packages"]
    assert setup["package-data"]["fmcluster.projects"] == ["default.yaml"]


def test_version_prints_the_installed_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"fmcluster {version('fmcluster')}\n"


def test_help_is_a_command_and_flags_show_no_type() -> None:
    from typer.testing import CliRunner

    from fmcluster.cli import app

    runner = CliRunner()
    top = runner.invoke(app, ["help"], env={"COLUMNS": "100"})
    assert top.exit_code == 0 and "Commands" in top.output and "<bool>" not in top.output
    sub = runner.invoke(app, ["help", "bootstrap", "render"], env={"COLUMNS": "100"})
    assert sub.exit_code == 0 and "bootstrap render [OPTIONS]" in sub.output
    unknown = runner.invoke(app, ["help", "destory"])
    assert unknown.exit_code == 2 and "no command 'destory'" in unknown.output


def test_new_from_finds_an_example_by_name(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from fmcluster.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(tmp_path / "projects"))
    result = CliRunner().invoke(app, ["new", "trial", "--from", "p5en-hyperpod"])
    assert result.exit_code == 0, result.output
    assert "created from" in (tmp_path / "projects" / "trial.yaml").read_text().splitlines()[0]
    assert "p5en-hyperpod.yaml" in (tmp_path / "projects" / "trial.yaml").read_text().splitlines()[0]
