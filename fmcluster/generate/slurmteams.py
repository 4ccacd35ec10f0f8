"""Teams on Slurm (ParallelCluster): what the project's ``teams`` become in Slurm accounting.

- a team is an account, ``Fairshare=<fair_share>`` (sacctmgr(1), "Fairshare=": the account's shares);
- per partition the team may use (its groups' partitions, :func:`fmcluster.generate.schedulers.scheduler`'s
  ``slurm_targets``), a QoS ``<team>-<partition>`` with ``GrpTRES=node=N``, N the sum of ``guaranteed + borrow``
  over the team's groups in that partition: "GrpTRES: maximum number of TRES running jobs are able to be allocated
  in aggregate for this QOS" (sacctmgr(1)), and ``Flags=DenyOnLimit`` so a job asking for more alone is refused
  at submit. ``borrow`` is refused on Slurm (teams-supported: nothing preempts a borrower), so the caps of a group
  add up to at most its count and every team can always get its guaranteed nodes (docs/teams.md);
- each member gets an association per such partition (``Account=<team> Partition=<p> QOS=<qos> DefaultQOS=<qos>``),
  so their jobs there run under the team's QoS without ``--qos``; a member's first team is their
  ``DefaultAccount``. A partition the team has no instances in has no association: Slurm refuses the team's jobs
  there, as it refuses every job of a user in no team ("Invalid account or account/partition combination
  specified") once ``AccountingStorageEnforce=associations`` is set (:data:`ENFORCE`).
"""

from __future__ import annotations

from collections.abc import Mapping

from fmcluster.orchestrators import SlurmTarget
from fmcluster.plan import ClusterPlan
from fmcluster.plan.slurm_teams import ENFORCE, SlurmAssociation, SlurmTeam, applies

__all__ = ["ENFORCE", "applies", "qos_name", "refusal_hint", "slurm_settings", "slurm_teams"]

FAIR_SHARE_WEIGHT = 10000
"""``PriorityWeightFairshare`` (slurm.conf(5) leaves every weight at 0, so fair share would count for nothing)."""
QOS_WEIGHT = 1000
"""``PriorityWeightQOS``: the QoS priorities fmcluster makes are all 0, so this orders nothing yet; it is set so a
QoS priority an administrator gives (``sacctmgr modify qos ... set Priority=``) counts."""


def qos_name(team: str, partition: str) -> str:
    return f"{team}-{partition}".lower()


def slurm_teams(cluster: ClusterPlan, targets: Mapping[str, SlurmTarget]) -> tuple[SlurmTeam, ...]:
    """The accounts, caps and associations of the project's teams, in file order; empty unless :func:`applies`.
    ``targets``: each compute group's partition (the scheduler's ``slurm_targets``)."""
    if not applies(cluster):
        return ()
    caps: dict[str, tuple[tuple[str, str, int], ...]] = {}
    for team in cluster.teams:
        nodes: dict[str, int] = {}
        for group, share in team.instances.items():
            if group in targets and share.guaranteed + share.borrow:
                partition = targets[group].partition
                nodes[partition] = nodes.get(partition, 0) + share.guaranteed + share.borrow
        caps[team.name] = tuple((p, qos_name(team.name, p), n) for p, n in nodes.items())
    defaults: dict[str, str] = {}  # a member's first team with an association: Slurm's default account must be one
    for team in cluster.teams:
        for member in team.members if caps[team.name] else ():
            defaults.setdefault(member, team.name)
    return tuple(
        SlurmTeam(account=team.name, fair_share=team.fair_share, caps=caps[team.name],
                  associations=tuple(SlurmAssociation(user=m, partition=p, qos=q)
                                     for m in team.members for p, q, _ in caps[team.name]),
                  default_of=tuple(m for m in team.members if defaults.get(m) == team.name))
        for team in cluster.teams)


def slurm_settings(cluster: ClusterPlan) -> dict[str, str | int]:
    """The slurm.conf lines teams need: enforcement, and the multifactor priority with fair share and QoS weighed."""
    if not applies(cluster):
        return {}
    return {"AccountingStorageEnforce": ENFORCE, "PriorityType": "priority/multifactor",
            "PriorityWeightFairshare": FAIR_SHARE_WEIGHT, "PriorityWeightQOS": QOS_WEIGHT}


def refusal_hint(team: SlurmTeam) -> str:
    """The sacctmgr line that lets one more user submit as ``team`` (what the plan prints)."""
    if not team.caps:
        return f"sacctmgr -i add user USER Account={team.account}"
    partition, qos, _ = team.caps[0]
    return f"sacctmgr -i add user USER Account={team.account} Partition={partition} QOS={qos} DefaultQOS={qos}"
