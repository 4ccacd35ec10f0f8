"""The check registry: a check is a small function over a loaded project and its plan, with a
name and a level stated once, in its decorator.

A check yields :class:`Finding` s (where, what, what to do); the registry turns each into a
:class:`fmcluster.errors.Problem` with the check's name, level, file and line. Level
``error`` stops synthesis; ``warning`` is printed, and silenced by name in the project's
``suppress_warnings``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from fmcluster.config.loader import LoadedProject, format_path
from fmcluster.errors import Level, Problem
from fmcluster.plan import Plan


@dataclass(frozen=True)
class Finding:
    """What a check found: the field it concerns, what is wrong, and what to do."""

    loc: tuple[Any, ...]
    message: str
    hint: str


CheckFunction = Callable[[LoadedProject, Plan], Iterator[Finding]]


@dataclass(frozen=True)
class Check:
    name: str
    level: Level
    function: CheckFunction

    def run(self, loaded: LoadedProject, plan: Plan) -> list[Problem]:
        return [Problem(self.level, format_path(f.loc), f.message, f.hint, loaded.file, loaded.line(f.loc), self.name)
                for f in self.function(loaded, plan)]


def check(name: str, level: Level) -> Callable[[CheckFunction], Check]:
    """Declare a check: ``@check("compute-subnet-size", "error")`` above its function."""

    def declare(function: CheckFunction) -> Check:
        return Check(name, level, function)

    return declare


def collect(modules: Iterable[ModuleType]) -> dict[str, Check]:
    """Every check the modules define, by name, in module order and then definition order."""
    found: dict[str, Check] = {}
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, Check):
                if value.name in found:
                    raise ValueError(f"two checks are named {value.name!r}")
                found[value.name] = value
    return found
