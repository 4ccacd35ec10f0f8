"""Hostile and malformed project files kept as files (``corpus/``): each gets exit 2 and the located message
``corpus/expected.yaml`` names, within a memory bound (and a hang guard); how fast is measured in
``bench/corpus_bench.py``, not here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from fmcluster import checks, config
from fmcluster.cli import app
from fmcluster.errors import ConfigError

CORPUS = Path(__file__).with_name("corpus")
EXPECTED: dict[str, dict] = yaml.safe_load((CORPUS / "expected.yaml").read_text())
FILES = sorted(p.name for p in CORPUS.glob("*.yaml") if p.name != "expected.yaml")


def test_every_file_has_an_expectation() -> None:
    assert sorted(EXPECTED) == FILES


IGNORED_WARNINGS = ("fsx-throughput-low", "bootstrap-unpinned")
"""Warnings most small files raise (a default file system for the nodes; versions.yaml placeholders)."""


class _Warned:
    """A valid file's warnings in the shape of a refusal: the first is the message under test."""

    def __init__(self, warnings: list) -> None:
        self.problems = [w for w in warnings if w.check not in IGNORED_WARNINGS]
        self.warnings: list = []


@pytest.mark.parametrize("name", FILES)
def test_bad_input_gets_its_located_message(name: str) -> None:
    want = EXPECTED[name]
    if want.get("level") == "warning":
        _, warnings = checks.validate(config.load(CORPUS / name))
        value = _Warned(warnings)
    else:
        with pytest.raises(ConfigError) as refused:
            checks.validate(config.load(CORPUS / name))
        value = refused.value
    first = value.problems[0]
    assert first.level == want.get("level", "error")
    assert first.column == want.get("column"), first.format()
    assert (first.line, first.path) == (want["line"], want["path"]), first.format()
    assert first.message.startswith(want["message"]), first.format()
    assert first.file == CORPUS / name
    if "hint" in want:
        assert (first.hint or "").startswith(want["hint"]), first.format()
    everything = value.problems + value.warnings
    if "at_path" in want:  # one problem, one message
        assert [p.format() for p in everything if p.path == first.path] == [first.format()][:want["at_path"]]
    if "problems" in want:
        assert len(value.problems) == want["problems"], [p.format() for p in value.problems]
    for problem in everything:  # the user's words: no pydantic union branches, validator names or dict dumps
        text = problem.format()
        assert not any(leak in text for leak in (".bool", "literal[", "function-", "{'", "object to extract")), text


@pytest.mark.parametrize("name", ["billion-laughs.yaml", "too-large.yaml", "deep-nesting.yaml", "thousand-groups.yaml"])
def test_the_command_exits_2_under_256_mb(name: str) -> None:
    """In a child process with its address space capped: the bound holds before any allocation."""
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
            "from fmcluster.cli import app\nsys.argv = ['fmcluster', 'validate', sys.argv[1]]\ntry:\n    app()\n"
            # VmHWM is this process's own peak: ru_maxrss keeps the parent's peak across fork and exec
            "finally:\n    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
            "    print('maxrss_kb', hwm, file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code, str(CORPUS / name)], capture_output=True, text=True,
                            timeout=180)  # the import alone is slow on a loaded machine
    assert result.returncode == 2, result.stderr[-2000:]
    assert f"{name}:{EXPECTED[name]['line']}" in result.stderr and "Traceback" not in result.stderr
    rss_kb = int(result.stderr.rsplit("maxrss_kb", 1)[1].split()[0])
    assert rss_kb < 256 * 1024, f"validating {name} used {rss_kb // 1024} MB"


def test_very_deep_nesting_is_refused_by_either_parser(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError) as refused:
        config.load(path)
    assert refused.value.problems[0].line == 1 and "nest" in refused.value.problems[0].message


def test_a_path_longer_than_the_system_allows_is_a_config_error() -> None:
    result = CliRunner().invoke(app, ["validate", "x" * 300 + ".yaml"])
    assert result.exit_code == 2
    assert "cannot read" in result.stderr or "no project file" in result.stderr


def test_a_missing_project_suggests_the_nearest_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(tmp_path))
    for name in ("llama-pretrain", "mixtral"):
        (tmp_path / f"{name}.yaml").write_text(f"name: {name}\n")
    with pytest.raises(ConfigError) as refused:
        config.load("llama-pretrian")
    [problem] = refused.value.problems
    assert problem.hint == "did you mean 'llama-pretrain'? known projects: llama-pretrain, mixtral"
    with pytest.raises(ConfigError) as refused:
        config.load("zzz")
    assert refused.value.problems[0].hint == "known projects: llama-pretrain, mixtral"
