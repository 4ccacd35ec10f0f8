"""app.py as the CDK CLI runs it: context selects projects; bad input exits 2 without a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support import BASE, ROOT


def _run_app(context: dict, tmp_path: Path, projects: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(tmp_path / "out")}
    if projects is not None:
        env["FMCLUSTER_PROJECTS_DIR"] = str(projects)
    return subprocess.run([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def test_bad_project_exits_2_with_file_and_line(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    projects.mkdir()
    (projects / "demo.yaml").write_text(BASE.replace("count: 2", "count: lots") + "netwrok: {}\n")
    result = _run_app({"project": "demo"}, tmp_path, projects)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{projects / 'demo.yaml'}:6  compute_groups[0].count" in result.stderr
    assert "did you mean 'network'?" in result.stderr
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_all_selects_every_project_and_builds_only_those(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    projects.mkdir()
    for name in ("alpha", "beta"):
        (projects / f"{name}.yaml").write_text(BASE.replace("name: demo", f"name: {name}"))
    result = _run_app({"project": "all", "nag": "false"}, tmp_path, projects)
    assert result.returncode == 0, result.stderr
    stacks = sorted(p.name.removesuffix(".template.json") for p in (tmp_path / "out").glob("*.template.json"))
    assert stacks == [f"{p}-{s}" for p in ("alpha", "beta") for s in ("cluster", "network", "observability", "storage")]
