"""Bad storage settings: a clear message with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import BASE

from fmcluster import checks, config
from fmcluster.errors import ConfigError


def _problems(extra: str, tmp_path: Path):
    path = tmp_path / "demo.yaml"
    text = BASE + extra
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        checks.validate(config.parse(text, path))
    return info.value.problems


def test_capacity_names_the_two_nearest_sizes(tmp_path: Path) -> None:
    [p] = _problems("storage:\n  fsx:\n    storage_capacity_gib: 3000\n", tmp_path)
    assert p.path == "storage.fsx.storage_capacity_gib" and p.line == 9
    assert "2400 or 4800" in p.message


def test_throughput_not_allowed_for_scratch(tmp_path: Path) -> None:
    [p] = _problems("storage:\n  fsx:\n    deployment_type: SCRATCH_2\n    throughput_per_tib: 500\n", tmp_path)
    assert "not allowed with SCRATCH_2" in p.message and p.line == 10
    assert p.path == "storage.fsx.throughput_per_tib"


def test_throughput_must_be_a_tier(tmp_path: Path) -> None:
    [p] = _problems("storage:\n  fsx:\n    throughput_per_tib: 300\n", tmp_path)
    assert p.path == "storage.fsx.throughput_per_tib" and "125" in p.hint


def test_overlapping_and_malformed_associations(tmp_path: Path) -> None:
    problems = _problems(
        "storage:\n  fsx:\n    associations:\n      - file_system_path: /data\n      - file_system_path: /data/sub\n", tmp_path)
    assert [p.check for p in problems] == ["association-paths"]
    assert problems[0].line == 11 and "/data" in problems[0].message
    [p] = _problems("storage:\n  fsx:\n    associations:\n      - {file_system_path: /x, data_repository_path: s3://b/p}\n",
                    tmp_path)
    assert "ending with '/'" in p.message


def test_s3_path_outside_the_project_bucket(tmp_path: Path) -> None:
    text = "storage:\n  fsx:\n    associations:\n      - {file_system_path: /x, data_repository_path: 's3://other-bucket/p/'}\n"
    [p] = _problems(text, tmp_path)
    assert p.check == "association-bucket" and "external_buckets: [other-bucket]" in p.hint
    checks.validate(config.parse(BASE + text + "  external_buckets: [other-bucket]\n"))


def test_efa_needs_metadata(tmp_path: Path) -> None:
    [p] = _problems("storage:\n  fsx:\n    efa_enabled: true\n", tmp_path)
    assert "metadata" in p.message and p.path == "storage.fsx.efa_enabled" and p.line == 9


def test_unreachable_checkpoint_target(tmp_path: Path) -> None:
    [p] = _problems("storage:\n  checkpoint:\n    parameters: 2e12\n    target_write_seconds: 5\n", tmp_path)
    assert p.check == "checkpoint-target-reachable" and p.line == 10


def test_missed_target_is_a_warning(tmp_path: Path) -> None:
    text = BASE + "storage:\n  fsx: {storage_capacity_gib: 1200, throughput_per_tib: 125}\n  checkpoint: {parameters: 7e9}\n"
    _, warnings = checks.validate(config.parse(text))
    assert [w.check for w in warnings if w.check != "bootstrap-unpinned"] == ["checkpoint-target-missed"]
