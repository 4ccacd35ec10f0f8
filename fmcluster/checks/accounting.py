"""Accounting checks: ``orchestrator.accounting`` asks only for what the project's orchestrator can do.

Which stores an orchestrator offers is its ``accounting`` trait (:mod:`fmcluster.orchestrators`); no name is
compared here. Orchestrator-specific limits (ParallelCluster's 40-character cluster name with accounting) live in
that orchestrator's own check module.
"""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.plan import Plan

AT = ("orchestrator", "accounting")


@check("accounting-supported", "error")
def _supported(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Accounting on an orchestrator without Slurm accounting, or a store it does not offer, is refused: a setting
    that would be silently ignored is worse than an error."""
    accounting = loaded.project.orchestrator.accounting
    driver = plan.cluster.driver
    if not accounting.enabled:
        return
    if not driver.accounting:
        yield Finding(AT + ("enabled",),
                      f"orchestrator.type {driver.name} has no Slurm accounting fmcluster can set up",
                      "use a Slurm orchestrator (parallelcluster, hyperpod), or remove orchestrator.accounting")
        return
    if accounting.store is not None and accounting.store not in driver.accounting:
        yield Finding(AT + ("store",),
                      f"orchestrator.type {driver.name} cannot keep accounting in {accounting.store!r}",
                      f"use one of: {', '.join(driver.accounting)} (or leave `store` out: {driver.accounting[0]})")


@check("accounting-settings-unused", "warning")
def _unused(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Settings under a disabled accounting section apply to nothing (a warning: turning accounting off for a while
    should not mean deleting its settings)."""
    accounting = loaded.project.orchestrator.accounting
    if not accounting.enabled and accounting.model_fields_set - {"enabled"}:
        yield Finding(AT + ("enabled",), "orchestrator.accounting has settings but is not enabled, so none applies",
                      "set `enabled: true`, or remove the accounting section")
