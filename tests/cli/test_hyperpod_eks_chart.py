"""``fmcluster hyperpod-eks fetch-chart`` against a local repository (no network): the pinned commit checked out,
the stale archive removed before the tree is hashed, the remote subcharts vendored by Helm, and nothing cached when
the tree's SHA-256 is not the pin."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fmcluster.cli import app
from fmcluster.cli import hyperpod_eks as cli
from fmcluster.generate import hyperpod_chart as chart


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(cwd), "PATH": "/usr/bin:/bin"}
                          ).stdout.strip()


@pytest.fixture
def upstream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository holding the stub chart where the real one sits, with a stale subchart archive beside it."""
    repo = tmp_path / "upstream"
    source = repo / chart.CHART_PATH
    shutil.copytree(chart.STUB_DIR, source)
    (source / "charts").mkdir()
    (source / chart.STALE_FILES[0]).write_bytes(b"an old copy of a subchart")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "chart")
    monkeypatch.setattr(chart, "CHART_REPOSITORY", str(repo))
    monkeypatch.setattr(chart, "CHART_COMMIT", _git(repo, "rev-parse", "HEAD"))
    monkeypatch.setattr(chart, "CHART_TREE_SHA256", chart.tree_sha256(chart.STUB_DIR))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(chart.CHART_ENV, raising=False)
    return repo


def test_fetch_checks_the_tree_and_leaves_the_chart_where_synthesis_finds_it(upstream: Path) -> None:
    result = CliRunner().invoke(app, ["hyperpod-eks", "fetch-chart"])
    assert result.exit_code == 0, result.output
    cached = chart.cache_dir()
    assert (cached / "Chart.yaml").is_file() and not (cached / chart.STALE_FILES[0]).exists()
    assert chart.chart_dir() == (cached, True)


def test_a_tree_that_is_not_the_pin_is_refused_and_nothing_is_cached(upstream: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chart, "CHART_TREE_SHA256", "0" * 64)
    result = CliRunner().invoke(app, ["hyperpod-eks", "fetch-chart"])
    assert result.exit_code == 1 and "not the pinned" in result.output and "Traceback" not in result.output
    assert not chart.cache_dir().exists()


def test_an_unreachable_repository_is_one_line(upstream: Path, monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setattr(chart, "CHART_REPOSITORY", str(tmp_path / "nowhere"))
    result = CliRunner().invoke(app, ["hyperpod-eks", "fetch-chart"])
    assert result.exit_code == 1 and result.output.startswith("error: git fetch")
    assert len(result.output.strip().splitlines()) == 1


def test_the_layer_ships_helm(tmp_path: Path) -> None:
    done = subprocess.run([str(cli.layer_helm()), "version", "--short"], capture_output=True, text=True,
                          check=True, env={"HOME": str(tmp_path)})
    assert done.stdout.startswith("v4.")
