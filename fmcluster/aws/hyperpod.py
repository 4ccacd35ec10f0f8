"""A HyperPod cluster's state and its nodes' health, per instance group (boto3 SageMaker:
``DescribeCluster``, ``ListClusterNodes``). Read-only."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from fmcluster.aws.session import is_account_problem


class HyperPodError(RuntimeError):
    """The cluster cannot be read: absent, or the API refused what was asked."""


@dataclass(frozen=True)
class GroupHealth:
    """One instance group: what was asked for, what runs, and the nodes by status."""

    name: str
    instance_type: str
    target: int
    current: int
    statuses: dict[str, int] = field(default_factory=dict)
    """InstanceStatus.Status (Running, Pending, DeepHealthCheckInProgress, Failure, ...) -> nodes."""

    @property
    def healthy(self) -> bool:
        return self.statuses.get("Running", 0) == self.target and set(self.statuses) <= {"Running"}


@dataclass(frozen=True)
class ClusterHealth:
    name: str
    status: str
    failure: str | None
    groups: list[GroupHealth]


def cluster_health(sagemaker: Any, name: str) -> ClusterHealth:
    """The cluster ``name`` and its nodes by group, with a boto3 SageMaker client."""
    try:
        cluster = sagemaker.describe_cluster(ClusterName=name)
        nodes: list[dict] = []
        for page in sagemaker.get_paginator("list_cluster_nodes").paginate(ClusterName=name):
            nodes.extend(page.get("ClusterNodeSummaries", []))
    except ClientError as exc:
        if is_account_problem(exc):
            raise  # credentials, permissions, throttling: the session's translation words it
        error = exc.response.get("Error", {})
        raise HyperPodError(f"cannot read HyperPod cluster {name}: {error.get('Code')}: {error.get('Message')}") from None
    by_group: dict[str, Counter] = {}
    for node in nodes:
        status = node.get("InstanceStatus", {}).get("Status", "unknown")
        by_group.setdefault(node.get("InstanceGroupName", "?"), Counter())[status] += 1
    groups = [GroupHealth(name=g["InstanceGroupName"], instance_type=g.get("InstanceType", "?"),
                          target=g.get("TargetCount", 0), current=g.get("CurrentCount", 0),
                          statuses=dict(sorted(by_group.get(g["InstanceGroupName"], Counter()).items())))
              for g in cluster.get("InstanceGroups", [])]
    return ClusterHealth(name=cluster.get("ClusterName", name), status=cluster.get("ClusterStatus", "unknown"),
                         failure=cluster.get("FailureMessage") or None, groups=groups)
