"""Teams checks: each team's shares name real compute groups and add up within them, and the orchestrator
enforces every part of ``teams`` the project asks for (its ``teams`` trait, :mod:`fmcluster.orchestrators`)."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.config.teams import Team
from fmcluster.plan import Plan
from fmcluster.plan import slurm_teams as slurmteams


def asked_for(team: Team) -> Iterator[tuple[str, tuple]]:
    """The parts of ``team`` that differ from doing nothing, each with the field it is set at (under the team)."""
    if team.members:
        yield "members", ("members",)
    if team.fair_share != Team.model_fields["fair_share"].default:
        yield "fair_share", ("fair_share",)
    for group, share in team.instances.items():
        if share.guaranteed:
            yield "guaranteed", ("instances", group, "guaranteed")
        if share.borrow:
            yield "borrow", ("instances", group, "borrow")
    if not team.lend:
        yield "lend", ("lend",)
    if team.preempt != Team.model_fields["preempt"].default:
        yield "preempt", ("preempt",)


@check("teams-supported", "error")
def _supported(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """A team setting the orchestrator cannot enforce is refused rather than ignored."""
    driver = plan.cluster.driver
    teams = loaded.project.teams
    if teams and not driver.teams:
        yield Finding(("teams",), f"orchestrator.type {driver.name} has no teams: {driver.teams_why}",
                      "remove `teams`, or use an orchestrator that enforces them")
        return
    for i, team in enumerate(teams):
        for part, at in asked_for(team):
            if part not in driver.teams:
                yield Finding(("teams", i) + at,
                              f"orchestrator.type {driver.name} cannot enforce a team's {part}: {driver.teams_why}",
                              f"remove it from team {team.name!r}")


@check("teams-groups", "error")
def _groups(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Each team's shares name compute groups of the project, fit in each group, and the teams' guaranteed counts
    of a group add up to at most its count."""
    counts = {g.name: g.count for g in loaded.project.compute_groups}
    guaranteed: dict[str, int] = {}
    for i, team in enumerate(loaded.project.teams):
        for group, share in team.instances.items():
            if group not in counts:
                yield Finding(("teams", i, "instances", group),
                              f"team {team.name!r} names compute group {group!r}, which the project does not have",
                              f"use one of: {', '.join(counts)}")
                continue
            if share.guaranteed + share.borrow > counts[group]:
                yield Finding(("teams", i, "instances", group),
                              f"team {team.name!r} may hold {share.guaranteed} + {share.borrow} = "
                              f"{share.guaranteed + share.borrow} instances of {group!r}, which has "
                              f"{counts[group]}", "lower guaranteed or borrow, or raise the group's count")
            guaranteed[group] = guaranteed.get(group, 0) + share.guaranteed
    for group, total in guaranteed.items():
        if total > counts[group]:
            owners = [t for t in loaded.project.teams if group in t.instances]
            split = " + ".join(f"{t.name} {t.instances[group].guaranteed}" for t in owners)
            last = loaded.project.teams.index(owners[-1])
            yield Finding(("teams", last, "instances", group, "guaranteed"),
                          f"the teams are guaranteed {total} instances of {group!r} ({split}), which has "
                          f"{counts[group]}", "lower a team's guaranteed count, or raise the group's count")


@check("teams-borrow-needs-lend", "error")
def _borrow(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """A team that borrows lends too: schedulers share idle instances both ways or not at all (HyperPod's
    ``ResourceSharingConfig.Strategy`` is ``Lend``, ``DontLend`` or ``LendAndBorrow``: there is no borrowing
    alone)."""
    for i, team in enumerate(loaded.project.teams):
        if not team.lend:
            for group, share in team.instances.items():
                if share.borrow:
                    yield Finding(("teams", i, "instances", group, "borrow"),
                                  f"team {team.name!r} borrows but does not lend (lend: false)",
                                  "set lend: true, or borrow: 0")


@check("teams-need-accounting", "error")
def _accounting(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """On Slurm teams are accounts, users and QoS in Slurm's accounting database, and their limits bite only with
    ``AccountingStorageEnforce`` (slurm.conf(5)), which needs accounting: teams without it are refused."""
    cluster = plan.cluster
    if loaded.project.teams and cluster.driver.slurm and cluster.driver.teams and cluster.accounting_store is None:
        yield Finding(("teams",), "on Slurm teams are accounts and limits in Slurm accounting, which is off",
                      "set orchestrator.accounting.enabled: true, or remove `teams`")


@check("teams-fair-share", "error")
def _fair_share(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """On Slurm teams weigh each other by fair share (the accounts' ``Fairshare=``, ``PriorityType=priority/
    multifactor``): ``orchestrator.accounting.fair_share: false`` beside teams cannot be honoured."""
    if slurmteams.applies(plan.cluster) and loaded.project.orchestrator.accounting.fair_share is False:
        yield Finding(("orchestrator", "accounting", "fair_share"),
                      "accounting.fair_share is false, but `teams` weigh each other by fair share on Slurm "
                      "(teams[].fair_share: the accounts' Fairshare= and the multifactor priority)",
                      "remove `fair_share: false` (teams turn it on), or remove `teams`")
