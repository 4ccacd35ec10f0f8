"""Bad project files: every error named with file, line, field and hint; all at once; exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import BASE, project_text
from typer.testing import CliRunner

from fmcluster import checks, config
from fmcluster.cli import app
from fmcluster.errors import ConfigError

runner = CliRunner()


def _errors(text: str, tmp_path: Path) -> list:
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        checks.validate(config.parse(text, path))
    return info.value.problems


def _only(problems: list, path: str):
    found = [p for p in problems if p.path == path]
    assert found, [p.format() for p in problems]
    return found[0]


def test_wrong_type(tmp_path: Path) -> None:
    text = BASE.replace("count: 2", "count: two")
    p = _only(_errors(text, tmp_path), "compute_groups[0].count")
    assert p.line == 6 and "integer" in p.message and p.file == tmp_path / "demo.yaml"


def test_unknown_key_suggests_nearest(tmp_path: Path) -> None:
    text = project_text("netwrok:\n  vpc_cidr: 10.0.0.0/16\n")
    p = _only(_errors(text, tmp_path), "netwrok")
    assert p.line == 7 and p.hint == "did you mean 'network'?"


def test_unknown_key_inside_a_union_member_lists_that_members_keys(tmp_path: Path) -> None:
    text = BASE + "    capacity: {type: reservation, reservation_id: cr-0123456789abcdef0, reservaton: x}\n"
    p = _only(_errors(text, tmp_path), "compute_groups[0].capacity.reservaton")
    assert "reservation_id" in p.hint


def test_bad_cidr(tmp_path: Path) -> None:
    text = project_text("network:\n  vpc_cidr: 10.0.0.1/16\n")
    p = _only(_errors(text, tmp_path), "network.vpc_cidr")
    assert p.line == 8 and "host bits" in p.message


def test_subnet_too_small_says_which_size_fits(tmp_path: Path) -> None:
    text = BASE.replace("count: 2", "count: 300") + "network:\n  compute_subnet_prefix: 24\n"
    p = _only(_errors(text, tmp_path), "network.compute_subnet_prefix")
    assert p.check == "compute-subnet-size" and p.line == 8
    assert "/23 would fit" in p.hint and "compute_subnet_prefix: 23" in p.hint
    assert "407" in p.message  # 300 + 75 headroom + 32 reserved


def test_unknown_instance_type_suggests_one(tmp_path: Path) -> None:
    text = BASE.replace("p5.48xlarge", "p5.48xlarg")
    p = _only(_errors(text, tmp_path), "compute_groups[0].instance_type")
    assert p.line == 5 and "did you mean 'p5.48xlarge'" in p.message


def test_capacity_block_without_reservation(tmp_path: Path) -> None:
    text = BASE + "    capacity:\n      type: capacity-block\n"
    p = _only(_errors(text, tmp_path), "compute_groups[0].capacity.reservation_id")
    assert p.message == "required field is missing" and p.line == 7


def test_all_errors_reported_at_once(tmp_path: Path) -> None:
    text = (BASE.replace("count: 2", "count: -1").replace("use1-az6", "us-east-1a")
            + "tags: [x]\nnetwrok: {}\n")
    paths = {p.path for p in _errors(text, tmp_path)}
    assert {"availability_zone_id", "compute_groups[0].count", "tags", "netwrok"} <= paths


def test_duplicate_key_and_bad_yaml(tmp_path: Path) -> None:
    p = _errors(BASE + "name: again\n", tmp_path)[0]
    assert "duplicate key 'name'" in p.message and p.line == 7
    p = _errors(BASE + "tags: {a: [}\n", tmp_path)[0]
    assert "not valid YAML" in p.message and p.line == 7


def test_training_plan_needs_hyperpod(tmp_path: Path) -> None:
    text = BASE + "    capacity: {type: training-plan, arn: 'arn:aws:sagemaker:us-east-1:111122223333:training-plan/tp1'}\n"
    p = _only(_errors(text, tmp_path), "compute_groups[0].capacity")
    assert p.check == "training-plan-needs-hyperpod"
    ok = text + "orchestrator: {type: hyperpod}\n"
    checks.validate(config.parse(ok))


def test_placement_group_with_capacity_block_is_a_warning(tmp_path: Path) -> None:
    text = BASE + "    placement_group: true\n    capacity: {type: capacity-block, reservation_id: cr-0123456789abcdef0}\n"
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "warning" in result.stderr and "placement_group" in result.stderr and f"{path}:7" in result.stderr
    # and it can be silenced by name
    path.write_text(text + "suppress_warnings: [placement-group-with-capacity-block, bootstrap-unpinned]\n")
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
