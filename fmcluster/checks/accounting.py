"""Accounting checks: ``orchestrator.accounting`` asks only for what the project's orchestrator can do.

Which stores an orchestrator offers is its ``accounting`` trait (:mod:`fmcluster.orchestrators`); no name is
compared here. Orchestrator-specific limits (ParallelCluster's 40-character cluster name with accounting) live in
that orchestrator's own check module.
"""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.checks.registry import Finding, check
from fmcluster.config.accounting import asked_for
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


@check("accounting-defaults", "error")
def _defaults(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Fair share, a QoS per partition and tracked resources are applied where the orchestrator lets fmcluster apply
    them (its ``accounting_defaults`` trait); asking for one elsewhere is refused rather than ignored."""
    accounting = loaded.project.orchestrator.accounting
    driver = plan.cluster.driver
    if not accounting.enabled or not driver.accounting:
        return
    for name in asked_for(accounting):
        if name not in driver.accounting_defaults:
            yield Finding(AT + (name,),
                          f"fmcluster cannot apply {name} on orchestrator.type {driver.name}: "
                          f"{driver.accounting_defaults_why}",
                          f"remove `{name}` (or set it to {'[]' if name == 'tres' else 'false'}); set it by hand on "
                          "the cluster if you need it")


@check("accounting-settings-unused", "warning")
def _unused(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Settings under a disabled accounting section apply to nothing (a warning: turning accounting off for a while
    should not mean deleting its settings)."""
    accounting = loaded.project.orchestrator.accounting
    if not accounting.enabled and accounting.model_fields_set - {"enabled"}:
        yield Finding(AT + ("enabled",), "orchestrator.accounting has settings but is not enabled, so none applies",
                      "set `enabled: true`, or remove the accounting section")


@check("accounting-database-subnets", "error")
def _database_subnets(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """The accounting database needs subnets in two Availability Zones (an RDS DB subnet group does, RDS User Guide,
    "Working with a DB instance in a VPC"): carved from the end of a new VPC, named by hand in an existing one."""
    if plan.cluster.accounting_store != "database":
        return
    net = plan.network
    existing = loaded.project.network.existing
    if existing is not None and not existing.database_subnet_ids:
        yield Finding(("network", "existing", "database_subnet_ids"),
                      "the accounting database (orchestrator.accounting, store: database) needs private subnets in "
                      "two Availability Zones, and an existing network names none",
                      "add database_subnet_ids: [subnet-..., subnet-...] (two subnets in different zones that the "
                      "head node or controller can reach), or turn accounting off")
    elif existing is None and net.database_subnet_cidrs is None:
        yield Finding(("network", "vpc_cidr"),
                      f"the accounting database's two /28 subnets (the last of {net.vpc_cidr}) overlap the compute "
                      f"subnet {net.compute_subnet_cidr or '(which does not fit either)'}",
                      "use a larger vpc_cidr or a smaller compute_subnet_prefix")
