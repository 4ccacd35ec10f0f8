"""A team as Slurm accounting holds it: the models :mod:`fmcluster.generate.slurmteams` builds from the project's
``teams`` and the slurmctld node's bootstrap context carries (below both, so imports point one way)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

ENFORCE = "associations,limits,qos"
"""``AccountingStorageEnforce`` (slurm.conf(5)): ``associations`` refuses a job with no association, ``limits``
enforces the QoS's GrpTRES, ``qos`` refuses a QoS the association does not allow."""


def applies(cluster: Any) -> bool:
    """Teams are applied on Slurm (``cluster``: a :class:`fmcluster.plan.ClusterPlan`): the project has some, the
    orchestrator enforces them and accounting is on (the teams-need-accounting check refuses teams without it)."""
    return (bool(cluster.teams) and bool(cluster.driver.teams) and cluster.driver.slurm
            and cluster.accounting_store is not None)


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SlurmAssociation(_Frozen):
    """One user's association with a team's account in one partition: jobs the user runs there as that team get
    the team's QoS for the partition (``QOS=`` and ``DefaultQOS=``), which caps the team's nodes in it."""

    user: str
    partition: str
    qos: str


class SlurmTeam(_Frozen):
    """One team as Slurm accounting holds it (:mod:`fmcluster.generate.slurmteams` builds it from ``teams``): an
    account with ``Fairshare=`` shares; per partition where the team may hold instances a QoS
    ``GrpTRES=node=<guaranteed + borrow>``; its members' associations (a member's first team is their default
    account, ``default_of``)."""

    account: str
    fair_share: int
    caps: tuple[tuple[str, str, int], ...] = Field(
        default=(), description="(partition, QoS name, nodes) for each partition the team may use.")
    associations: tuple[SlurmAssociation, ...] = ()
    default_of: tuple[str, ...] = Field(default=(), description="The members whose default account this is.")
