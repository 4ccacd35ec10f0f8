"""The ``teams:`` section: who shares the cluster, and how much of each compute group each team may hold.

One model for every scheduler (the orchestrator's ``teams`` trait, :mod:`fmcluster.orchestrators`, says which
parts it can enforce; what it cannot is refused at validate):

- Slurm (ParallelCluster, PCS, HyperPod Slurm): a team is an account, its members are users with an association
  to it, ``fair_share`` is the account's fair-share shares, and a group's ``guaranteed + borrow`` caps the
  instances the account may hold in that group's partition (``GrpTRES=node=N`` on the team's QoS).
- HyperPod on EKS with task governance: a team is a ``ComputeQuota`` (botocore's sagemaker
  ``CreateComputeQuota``): ``guaranteed`` is its ``ComputeQuotaResources`` count per instance type, ``borrow``
  its ``AbsoluteBorrowLimits``, ``lend``/``borrow`` its ``ResourceSharingConfig.Strategy`` (``Lend``,
  ``DontLend``, ``LendAndBorrow``), ``fair_share`` its ``FairShareWeight`` (0-100) and ``preempt`` its
  ``PreemptTeamTasks``; its namespace is ``hyperpod-ns-<name>``.
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
MAX_FAIR_SHARE = 100
"""HyperPod's ``FairShareWeight`` is 0-100 (botocore sagemaker ``FairShareWeight``); Slurm takes any integer, the
same bound keeps one meaning on both."""


class GroupShare(Model):
    """How many of one compute group's instances a team may hold."""

    guaranteed: Int = Field(
        ge=0, le=2048,
        description="Instances of the group that are the team's: the teams' guaranteed counts of a group add up to "
                    "at most its `count`.")
    borrow: Int = Field(
        default=0, ge=0, le=2048,
        description="Instances more than `guaranteed` the team may use while other teams leave them idle "
                    "(`guaranteed + borrow` is at most the group's `count`).")


class Team(Model):
    """One team: its members, its weight against the other teams, and its share of each compute group."""

    name: str = Field(pattern=TEAM_NAME, description="1 to 32 lowercase letters, digits and '-', starting with a "
                                                     "letter: the Slurm account, the HyperPod team.")
    members: list[str] = Field(
        default_factory=list, max_length=1000,
        description="User names (Linux/Slurm users) who submit as this team. A user may be in more than one team; "
                    "the first team listed is their default account.")
    fair_share: Int = Field(
        default=1, ge=0, le=MAX_FAIR_SHARE,
        description="The team's weight against the others when they compete (Slurm fair-share shares; HyperPod's "
                    "fair-share weight, 0-100).")
    instances: dict[str, GroupShare] = Field(
        default_factory=dict,
        description="Per compute group (by name): the instances the team is guaranteed and may borrow, e.g. "
                    "`instances: {train: {guaranteed: 8, borrow: 4}}`. A group not named here gives the team nothing "
                    "guaranteed.")
    lend: bool = Field(
        default=True,
        description="Whether other teams may use the team's guaranteed instances while it leaves them idle.")
    preempt: Literal["never", "lower-priority"] = Field(
        default="never",
        description="`lower-priority`: the team's jobs may preempt lower-priority jobs of teams borrowing its "
                    "instances; `never`: they wait.")

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
