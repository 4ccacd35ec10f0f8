"""A HyperPod cluster's state and its nodes' health, per instance group (boto3 SageMaker:
``DescribeCluster``, ``ListClusterNodes``). Read-only."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from fmcluster.aws.session import is_account_problem

from fmcluster.aws import StackOutputsError
from fmcluster.aws.stacks import stack_outputs
from fmcluster.contracts import HYPERPOD_CLUSTER_ARN_OUTPUT, stack_name


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


def deployed_cluster(cfn: Any, project: str) -> str:
    """The ARN of the cluster the ``NAME-cluster`` stack made (its name is known only once deployed: its prefix and
    the compute subnet's ID), with a boto3 CloudFormation client. DescribeCluster takes it as ``ClusterName``."""
    name = stack_name(project, "cluster")
    try:
        outputs = stack_outputs(cfn, name)
    except StackOutputsError as exc:
        raise HyperPodError(str(exc)) from None
    if HYPERPOD_CLUSTER_ARN_OUTPUT not in outputs:
        raise HyperPodError(f"stack {name} has no output {HYPERPOD_CLUSTER_ARN_OUTPUT}: is it a HyperPod project? "
                            "(deploy it: fmcluster deploy PROJECT)")
    return outputs[HYPERPOD_CLUSTER_ARN_OUTPUT]
