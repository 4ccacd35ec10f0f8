"""Orchestrator checks: a scheduler the code does not build is an error, never accepted and ignored."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.plan import Plan

BUILT = ("none", "parallelcluster", "hyperpod")
"""The ``orchestrator.type`` values whose stacks exist. Every value the config takes is built today; the check
stays so that a new orchestrator type is refused until its stack exists."""


@check("orchestrator-not-built", "error")
def _not_built(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    kind = loaded.project.orchestrator.type
    if kind not in BUILT:
        yield Finding(("orchestrator", "type"),
                      f"orchestrator.type {kind!r} is not built yet: nothing would create its cluster",
                      f"use one of: {', '.join(BUILT)}")
