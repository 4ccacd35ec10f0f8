"""The `bootstrap-unpinned` check: silent for the real versions.yaml, a warning when a needed pin is missing."""

from __future__ import annotations

from pathlib import Path

import yaml
from fmcluster.bootstrap import context, versions

from fmcluster import checks, config
from fmcluster.plan import make_plan

PROJECT = """\
name: demo
availability_zone_id: use1-az6
compute_groups:
  - name: train
    instance_type: p5.48xlarge
    count: 2
"""


def _unpinned(tmp_path: Path) -> list:
    path = tmp_path / "demo.yaml"
    path.write_text(PROJECT)
    loaded = config.parse(PROJECT, path)
    return [p for p in checks.run_checks(loaded, make_plan(loaded.project)) if p.check == "bootstrap-unpinned"]


def test_no_example_project_waits_on_a_pin(tmp_path: Path) -> None:
    assert _unpinned(tmp_path) == []
    examples = sorted((Path(__file__).parents[2] / "examples").glob("*.yaml"))
    assert examples
    for example in examples:
        loaded = config.load(str(example))
        found = [p.check for p in checks.run_checks(loaded, make_plan(loaded.project))]
        assert "bootstrap-unpinned" not in found, example.name


def test_a_missing_pin_a_node_needs_is_a_warning(tmp_path: Path, monkeypatch) -> None:
    data = yaml.safe_load(versions.VERSIONS_FILE.read_text())
    data["node_exporter"]["tarball"]["sha256"]["x86_64"] = None
    monkeypatch.setattr(context, "default_versions", lambda: versions.Versions.model_validate(data))
    (found,) = _unpinned(tmp_path)
    assert (found.level, found.path) == ("warning", "compute_groups")
    assert "node_exporter.tarball.sha256.x86_64" in found.message and found.hint
