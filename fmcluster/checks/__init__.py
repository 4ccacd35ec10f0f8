"""Meaning: named checks over a structurally valid project and its plan.

Each domain module declares its checks with ``@check(name, level)``; this module collects
them in a fixed order. ``validate(loaded)`` makes the plan, runs every check the project
does not silence, and raises :class:`fmcluster.errors.ConfigError` on any error.
"""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.checks import (
    accounting,
    bootstrap,
    capacity,
    hyperpod,
    hyperpod_eks,
    limits,
    mounts,
    network,
    observability,
    parallelcluster,
    pcs,
    storage,
    teams,
    zones,
)
from fmcluster.checks.registry import Check, Finding, check, collect
from fmcluster.config.loader import LoadedProject
from fmcluster.errors import ConfigError, Problem
from fmcluster.plan import Plan, make_plan

CHECKS: dict[str, Check] = collect((network, zones, capacity, observability, storage, mounts, limits, parallelcluster,
                                    hyperpod, hyperpod_eks, pcs, accounting, teams))


@check("suppressed-warning-exists", "warning")
def _known_suppressions(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    for i, name in enumerate(loaded.project.suppress_warnings):
        level = CHECKS[name].level if name in CHECKS else None
        if level != "warning":
            valid = ", ".join(n for n, c in CHECKS.items() if c.level == "warning")
            yield Finding(("suppress_warnings", i),
                          f"{name!r} is not a warning check" + (" (errors cannot be suppressed)" if level == "error" else ""),
                          f"warning checks: {valid}")


CHECKS[_known_suppressions.name] = _known_suppressions
CHECKS |= collect((bootstrap,))


def run_checks(loaded: LoadedProject, plan: Plan) -> list[Problem]:
    suppressed = set(loaded.project.suppress_warnings)
    found: list[Problem] = []
    for name, declared in CHECKS.items():
        if declared.level == "warning" and name in suppressed:
            continue
        found.extend(declared.run(loaded, plan))
    return found


def validate(loaded: LoadedProject) -> tuple[Plan, list[Problem]]:
    """The plan and the warnings of a project; raises :class:`ConfigError` on any error."""
    plan = make_plan(loaded.project)
    problems = run_checks(loaded, plan)
    if any(p.level == "error" for p in problems):
        raise ConfigError(problems)
    return plan, problems
