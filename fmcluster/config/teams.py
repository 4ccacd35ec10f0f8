"""The ``teams:`` section: who shares the cluster, and how much of each compute group each team may hold.

One meaning per key on every orchestrator (:data:`MEANING`; docs/teams.md is generated from it and from each
orchestrator's ``teams`` trait, :mod:`fmcluster.orchestrators`, which says how it enforces each key). A key an
orchestrator cannot honour with that meaning is refused at validate (teams-supported), never weakened:

- Slurm (ParallelCluster): a team is an account (``Fairshare=<fair_share>``), its members users with an
  association to it, and its ``guaranteed`` count of a group caps the nodes its jobs hold in that group's partition
  (a QoS ``GrpTRES=node=N``). The teams' guaranteed counts of a group add up to at most its count and nobody
  borrows (Slurm here preempts nothing, so borrowed nodes could not be taken back), so every team can always get
  its guaranteed nodes: a guarantee, kept by caps.
- HyperPod on EKS with task governance: a team is a ``ComputeQuota`` (botocore's sagemaker
  ``CreateComputeQuota``): ``guaranteed`` is its ``ComputeQuotaResources`` count per instance type, ``borrow``
  its ``AbsoluteBorrowLimits``, ``lend``/``borrow`` its ``ResourceSharingConfig.Strategy`` (``Lend``,
  ``DontLend``, ``LendAndBorrow``), ``fair_share`` its ``FairShareWeight`` (0-100) and ``preempt`` its
  ``PreemptTeamTasks``; its namespace is ``hyperpod-ns-<name>``. Borrowed pods are evicted when the lending team
  asks for its quota back (SageMaker developer guide, "Task governance for model deployment on HyperPod", resource
  sharing); ``PreemptTeamTasks`` "allows workloads from within an entity to preempt same-team workloads" (API
  reference, ComputeQuotaConfig).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from fmcluster.config.base import Int, Model, located

TEAM_NAME = r"^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$"
"""1 to 32 lowercase letters, digits and '-': a Slurm account name (sacctmgr lowercases them), a HyperPod team
name (``[a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}``) and, after ``hyperpod-ns-``, a Kubernetes namespace (63 at most)."""
USER_NAME = r"^[a-z_][a-z0-9_-]{0,31}$"
"""A Linux user name as useradd's default NAME_REGEX takes it (32 characters at most): a Slurm user is one."""
MEANING: dict[str, str] = {
    "members": "The users who may submit work as the team; a user in no team is refused.",
    "fair_share": "The team's weight against the other teams when they compete for the same instances: a team "
                  "that used less than its share goes first.",
    "guaranteed": "Instances of the group that are the team's: the teams' guaranteed counts of a group add up to at "
                  "most its count, and the team gets them whenever it asks (from borrowers too, see `borrow`).",
    "borrow": "Instances beyond `guaranteed` the team may use while their owners leave them idle; borrowed "
              "instances are given back (the borrowing work preempted) when their owner asks for them.",
    "lend": "Whether other teams may borrow the team's guaranteed instances while it leaves them idle.",
    "preempt": "`lower-priority`: the team's higher-priority work may preempt its own lower-priority work; "
               "`never`: it waits.",
}
"""What each key of a team means, the same on every orchestrator (docs/teams.md)."""
MAX_FAIR_SHARE = 100
"""HyperPod's ``FairShareWeight`` is 0-100 (botocore sagemaker ``FairShareWeight``); Slurm takes any integer, the
same bound keeps one meaning on both."""


class GroupShare(Model):
    """How many of one compute group's instances a team may hold."""

    guaranteed: Int = Field(
        ge=0, le=2048,
        description=MEANING["guaranteed"])
    borrow: Int = Field(
        default=0, ge=0, le=2048,
        description=MEANING["borrow"] + " `guaranteed + borrow` is at most the group's `count`.")


class Team(Model):
    """One team: its members, its weight against the other teams, and its share of each compute group."""

    name: str = Field(pattern=TEAM_NAME, description="1 to 32 lowercase letters, digits and '-', starting with a "
                                                     "letter: the Slurm account, the HyperPod team.")
    members: list[str] = Field(
        default_factory=list, max_length=1000,
        description=MEANING["members"] + " User names (Linux users, the same UID on every node). A user may be in "
                    "more than one team; the first team listed is their default.")
    fair_share: Int = Field(
        default=1, ge=0, le=MAX_FAIR_SHARE,
        description=MEANING["fair_share"] + " 0-100.")
    instances: dict[str, GroupShare] = Field(
        default_factory=dict,
        description="Per compute group (by name): the instances the team is guaranteed and may borrow, e.g. "
                    "`instances: {train: {guaranteed: 8, borrow: 4}}`. A group not named here gives the team nothing "
                    "guaranteed.")
    lend: bool = Field(
        default=True,
        description=MEANING["lend"])
    preempt: Literal["never", "lower-priority"] = Field(
        default="never",
        description=MEANING["preempt"])

    @field_validator("members")
    @classmethod
    def _members(cls, value: list[str]) -> list[str]:
        seen: set[str] = set()
        for i, member in enumerate(value):
            if not re.match(USER_NAME, member):
                raise located(f"{member[:40]!r} is not a user name: lowercase letters, digits, '_' and '-', "
                              "starting with a letter or '_', at most 32 characters", i)
            if member in seen:
                raise located(f"{member!r} is listed twice in this team", i)
            seen.add(member)
        return value


def validate_team_names(value: list[Team]) -> list[Team]:
    """Teams' names are unique (the project's ``teams`` validator)."""
    seen: set[str] = set()
    for i, team in enumerate(value):
        if team.name in seen:
            raise located(f"team name {team.name!r} is used twice; names must be unique", i, "name")
        seen.add(team.name)
    return value
