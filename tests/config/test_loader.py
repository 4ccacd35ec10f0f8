"""Bad project files: every error named with file, line, field and hint; all at once; exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import BASE, project_text
from typer.testing import CliRunner

from fmcluster import checks, config
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
