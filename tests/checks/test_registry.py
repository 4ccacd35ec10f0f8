"""The registry: a check's name and level are stated once, in its decorator; findings become problems
with that name, level, file and line."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from support import BASE

from fmcluster import checks, config
from fmcluster.checks.registry import Check, Finding, check, collect
from fmcluster.plan import make_plan


def test_every_check_has_a_unique_name_and_a_level() -> None:
    assert all(isinstance(c, Check) and c.level in ("error", "warning") for c in checks.CHECKS.values())
    assert all(name == c.name for name, c in checks.CHECKS.items())


def test_collect_refuses_two_checks_of_one_name() -> None:
    first = types.ModuleType("first")
    second = types.ModuleType("second")
    first.a = check("same-name", "error")(lambda loaded, plan: iter(()))
    second.b = check("same-name", "warning")(lambda loaded, plan: iter(()))
    with pytest.raises(ValueError, match="two checks are named 'same-name'"):
        collect((first, second))


def test_a_finding_becomes_a_problem_with_the_checks_name_level_and_the_fields_line(tmp_path: Path) -> None:
    @check("count-is-two", "warning")
    def counted(loaded, plan):
        yield Finding(("compute_groups", 0, "count"), "two nodes", "use more")

    path = tmp_path / "demo.yaml"
    loaded = config.parse(BASE, path)
    [problem] = counted.run(loaded, make_plan(loaded.project))
    assert (problem.check, problem.level, problem.path, problem.file, problem.line) == (
        "count-is-two", "warning", "compute_groups[0].count", path, 6)
    assert problem.format() == f"{path}:6  compute_groups[0].count  two nodes (hint: use more) [count-is-two]"
