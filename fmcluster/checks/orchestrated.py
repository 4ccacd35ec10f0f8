"""What every orchestrator's checks ask in the same shape, written once; each orchestrator's module of checks
declares its own from these (so its checks keep their names, their order and their module).

Left in the orchestrators' modules, because they only look alike: the group-count limits (HyperPod counts instance
groups against CreateCluster's 100, PCS node groups and queues against quotas of 10), the reserved group names
(HyperPod's controller and login instance groups, PCS's login node group, each with its own words) and the
instance-type checks (ParallelCluster's support table, HyperPod's ml. types).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from fmcluster.checks.registry import Check, Finding
from fmcluster.config.loader import LoadedProject
from fmcluster.plan import Plan


def settings_unused(orchestrator: str) -> Check:
    """``<orchestrator>-settings-unused``, a warning: ``orchestrator.<orchestrator>`` is written while
    ``orchestrator.type`` names another (each orchestrator's settings section is named as its type)."""
    path = ("orchestrator", orchestrator)

    def unused(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
        written = loaded.project.orchestrator
        if getattr(written, orchestrator, None) is not None and written.type != orchestrator:
            yield Finding(path, f"orchestrator.{orchestrator} is ignored with orchestrator.type: {written.type}",
                          f"set orchestrator.type: {orchestrator}, or remove the section")

    return Check(f"{orchestrator}-settings-unused", "warning", unused)


def not_a_group(loc: tuple[Any, ...], name: str, known: Iterable[str]) -> Finding:
    """Orchestrator settings keyed by a compute group that the project does not have."""
    return Finding(loc, f"{name!r} is not a compute group", f"compute groups: {', '.join(known)}")


def unknown_groups(path: tuple[Any, ...], names: Iterable[str], loaded: LoadedProject) -> Iterator[Finding]:
    """:func:`not_a_group` for each of ``names`` (settings under ``path``, keyed by group) the project lacks."""
    known = [g.name for g in loaded.project.compute_groups]
    for name in names:
        if name not in known:
            yield not_a_group(path + (name,), name, known)
