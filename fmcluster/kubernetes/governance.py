"""HyperPod task governance as CloudFormation properties: one ``AWS::SageMaker::ClusterSchedulerConfig`` for the
cluster and one ``AWS::SageMaker::ComputeQuota`` per team of the project (:mod:`fmcluster.config.teams` says what
each team field becomes).

Sources: botocore's sagemaker model (``CreateClusterSchedulerConfig``, ``CreateComputeQuota``: the property names
are the API's, CloudFormation passes them through) and cfn-lint 1.58's resource schemas for both types; AWS API
reference ``ResourceSharingConfig``: ``DontLend`` teams lend nothing, ``Lend`` teams lend idle compute to teams that
can borrow, ``LendAndBorrow`` teams lend and borrow; only the last borrows. The namespace and Kueue queue a team's
jobs go to (``hyperpod-ns-<team>``, ``hyperpod-ns-<team>-localqueue``) are the ones task governance creates for a
ComputeQuota, and a priority class ``P`` becomes the label value ``P-priority`` (AWS docs, "SageMaker HyperPod task
governance": namespaces ``hyperpod-ns-{{team-name}}``; aws/sagemaker-hyperpod-cli's integration tests create the same
LocalQueue name and its test job config labels ``kueue.x-k8s.io/priority-class: training-priority``; the AWS HyperPod
EKS "hero demo" (mvinci12/hero-demo-hyperpod) submits with both labels after ``create-cluster-scheduler-config``).

The cluster ARN is an input (a CloudFormation token in the stack: ``Fn::GetAtt [Cluster, ClusterArn]``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fmcluster import catalog
from fmcluster.config.teams import Team

NAMESPACE_PREFIX = "hyperpod-ns-"
QUEUE_SUFFIX = "-localqueue"
PRIORITY_SUFFIX = "-priority"
"""Task governance makes a Kueue WorkloadPriorityClass ``<name>-priority`` of each priority class; a job names it in
its ``kueue.x-k8s.io/priority-class`` label."""
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
PREEMPT = {"never": "Never", "lower-priority": "LowerPriority"}
"""``Team.preempt`` -> ``ComputeQuotaConfig.PreemptTeamTasks`` (botocore's enum: Never, LowerPriority)."""


@dataclass(frozen=True)
class PriorityClass:
    name: str
    weight: int
    """0-100 (botocore ``PriorityWeight``); higher is admitted first and may preempt lower."""


DEFAULT_PRIORITY_CLASSES = (PriorityClass("inference", 100), PriorityClass("training", 50),
                            PriorityClass("experimentation", 10))
"""fmcluster's default classes (a choice, not AWS's: HyperPod defines none until a scheduler config does; its
docs give inference the highest weight, 100): acceptance and first jobs run as :data:`JOB_PRIORITY`."""
JOB_PRIORITY = "training"
"""The priority class of the jobs fmcluster writes (acceptance, first job): one of :data:`DEFAULT_PRIORITY_CLASSES`."""


class GovernanceError(ValueError):
    """The teams ask for something task governance cannot express; the message says what to change."""


def team_namespace(team: str) -> str:
    return NAMESPACE_PREFIX + team


def team_queue(team: str) -> str:
    return team_namespace(team) + QUEUE_SUFFIX


def priority_label(priority: str) -> str:
    return priority + PRIORITY_SUFFIX


def scheduler_config_properties(name: str, cluster_arn: Any, *, fair_share: bool = True,
                                priority_classes: Iterable[PriorityClass] = DEFAULT_PRIORITY_CLASSES,
                                tags: Mapping[str, str] | None = None) -> dict:
    """``AWS::SageMaker::ClusterSchedulerConfig`` properties: fair share on (teams borrow idle compute by their
    ``FairShareWeight``) and the priority classes."""
    classes = list(priority_classes)
    names = [c.name for c in classes]
    if len(set(names)) != len(names):
        raise GovernanceError(f"priority classes {names}: each name once")
    props: dict[str, Any] = {
        "Name": name, "ClusterArn": cluster_arn,
        "SchedulerConfig": {"FairShare": "Enabled" if fair_share else "Disabled",
                            "PriorityClasses": [{"Name": c.name, "Weight": c.weight} for c in classes]},
        "Description": "fmcluster: fair share and priority classes of the project's teams",
    }
    if tags:
        props["Tags"] = [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
    return props


def strategy(team: Team) -> str:
    """``ResourceSharingConfig.Strategy`` from ``lend`` and whether the team borrows anywhere."""
    borrows = any(share.borrow for share in team.instances.values())
    if team.lend:
        return "LendAndBorrow" if borrows else "Lend"
    if borrows:
        raise GovernanceError(f"team {team.name}: borrow without lend: HyperPod's strategies are Lend, DontLend and "
                              "LendAndBorrow, and only LendAndBorrow borrows; set lend: true or borrow: 0")
    return "DontLend"


def compute_quota_properties(team: Team, instance_types: Mapping[str, str], name: str, cluster_arn: Any, *,
                             tags: Mapping[str, str] | None = None) -> dict:
    """``AWS::SageMaker::ComputeQuota`` properties of one team. ``instance_types``: compute group name -> its EC2
    instance type (the catalog's name; HyperPod's is ``ml.`` + it). Groups the team names but the project lacks are
    a programming error here (the teams check refuses them at validate)."""
    resources, borrow = [], []
    for group, share in sorted(team.instances.items()):
        if group not in instance_types:
            raise GovernanceError(f"team {team.name}: no compute group {group!r} (groups: "
                                  f"{', '.join(sorted(instance_types))})")
        kind = catalog.hyperpod_type(instance_types[group])
        if share.guaranteed:
            resources.append({"InstanceType": kind, "Count": share.guaranteed})
        if share.borrow:
            borrow.append({"InstanceType": kind, "Count": share.borrow})
    sharing: dict[str, Any] = {"Strategy": strategy(team)}
    if borrow:
        sharing["AbsoluteBorrowLimits"] = borrow
    props: dict[str, Any] = {
        "Name": name, "ClusterArn": cluster_arn,
        "ComputeQuotaConfig": {"ComputeQuotaResources": resources, "ResourceSharingConfig": sharing,
                               "PreemptTeamTasks": PREEMPT[team.preempt]},
        "ComputeQuotaTarget": {"TeamName": team.name, "FairShareWeight": team.fair_share},
        "ActivationState": "Enabled",
        "Description": f"fmcluster: team {team.name}",
    }
    if tags:
        props["Tags"] = [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
    return props


def quota_name(prefix: str, team: str) -> str:
    """A quota's ``Name`` (botocore ``EntityName``: 63 characters, letters, digits and '-')."""
    name = f"{prefix}-{team}"
    if len(name) > 63:
        raise GovernanceError(f"quota name {name!r} is {len(name)} characters; HyperPod allows 63: shorten the project "
                              "or team name")
    return name


BORROWING = "LendAndBorrow"
LENDING = ("Lend", "LendAndBorrow")


def admissible_instances(quotas: Iterable[Mapping[str, Any]], instance_type: str, capacity: int) -> dict[str, int]:
    """Per team (``ComputeQuotaTarget.TeamName``): how many ``instance_type`` instances (HyperPod's ``ml.`` name) one
    workload of the team can hold at once under the ComputeQuotas ``quotas`` (their CloudFormation properties, as
    :func:`compute_quota_properties` makes them): its guaranteed count (``ComputeQuotaResources``), plus, when its
    strategy borrows (``LendAndBorrow``: the only one that does, AWS API reference ``ResourceSharingConfig``), its
    ``AbsoluteBorrowLimits`` up to what the other teams lend (the guaranteed counts of those whose strategy is
    ``Lend`` or ``LendAndBorrow``), and never more than the group's ``capacity``. Instances no quota guarantees are
    not counted as borrowable: no source says task governance lends them."""
    def count(entries: Iterable[Mapping[str, Any]]) -> int:
        return sum(int(e["Count"]) for e in entries if e.get("InstanceType") == instance_type)

    rows = []
    for q in quotas:
        config = q["ComputeQuotaConfig"]
        sharing = config.get("ResourceSharingConfig", {})
        strategy_name = sharing.get("Strategy", "DontLend")  # none given: neither lends nor borrows (conservative)
        borrow = count(sharing.get("AbsoluteBorrowLimits", [])) if strategy_name == BORROWING else 0
        rows.append((q["ComputeQuotaTarget"]["TeamName"], count(config.get("ComputeQuotaResources", [])), borrow,
                     strategy_name in LENDING))
    out = {}
    for team, guaranteed, borrow, _ in rows:
        lent = sum(g for other, g, _, lends in rows if other != team and lends)
        out[team] = min(capacity, guaranteed + min(borrow, lent))
    return out
