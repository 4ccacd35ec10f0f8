"""Orchestrator checks: a scheduler the code does not build is an error, never accepted and ignored."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.plan import Plan

BUILT = ("none", "parallelcluster")
"""The ``orchestrator.type`` values whose stacks exist; HyperPod is being built (issue 13)."""


@check("orchestrator-not-built", "error")
def _not_built(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    kind = loaded.project.orchestrator.type
    if kind not in BUILT:
        yield Finding(("orchestrator", "type"),
                      f"orchestrator.type {kind!r} is not built yet: nothing would create its cluster",
                      "use parallelcluster (a Slurm cluster) or none (launch templates only, for a scheduler you bring)")
