"""A HyperPod cluster's state and its nodes' health, per instance group (boto3 SageMaker:
``DescribeCluster``, ``ListClusterNodes``). Read-only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from fmcluster.aws.nodes import ClusterReadError, ClusterStatus, GroupStatus, NodeNotInProject, Target
from fmcluster.aws.session import is_account_problem
from fmcluster.aws.stackstate import StackState, stack_state
from fmcluster.contracts import HYPERPOD_CLUSTER_ARN_OUTPUT, HYPERPOD_CLUSTER_ID_OUTPUT, stack_name
from fmcluster.generate.hyperpod import CONTROLLER, LOGIN, instance_groups
from fmcluster.plan import Plan


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
    status: str = "InService"
    """The group's own Status (botocore sagemaker ``InstanceGroupStatus``: InService, Creating, Updating, Failed,
    Degraded, SystemUpdating, Deleting)."""
    messages: tuple[str, ...] = ()
    """What HyperPod says of its nodes that are not Running (``InstanceStatus.Message``), each once."""

    @property
    def healthy(self) -> bool:
        return self.statuses.get("Running", 0) == self.target and set(self.statuses) <= {"Running"}


@dataclass(frozen=True)
class ClusterHealth:
    name: str
    status: str
    failure: str | None
    groups: list[GroupHealth]
    provisioning: str | None = None
    """``NodeProvisioningMode`` (Continuous: the cluster is InService while nodes are still being provisioned)."""


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
    messages: dict[str, dict[str, None]] = {}
    for node in nodes:
        status = node.get("InstanceStatus", {}).get("Status", "unknown")
        group = node.get("InstanceGroupName", "?")
        by_group.setdefault(group, Counter())[status] += 1
        message = node.get("InstanceStatus", {}).get("Message")
        if status != "Running" and message:
            messages.setdefault(group, {})[message] = None
    groups = [GroupHealth(name=g["InstanceGroupName"], instance_type=g.get("InstanceType", "?"),
                          target=g.get("TargetCount", 0), current=g.get("CurrentCount", 0),
                          statuses=dict(sorted(by_group.get(g["InstanceGroupName"], Counter()).items())),
                          status=g.get("Status", "InService"),
                          messages=tuple(messages.get(g["InstanceGroupName"], {})))
              for g in cluster.get("InstanceGroups", [])]
    return ClusterHealth(name=cluster.get("ClusterName", name), status=cluster.get("ClusterStatus", "unknown"),
                         failure=cluster.get("FailureMessage") or None, groups=groups,
                         provisioning=cluster.get("NodeProvisioningMode"))


LIFECYCLE_LOGS = ("CloudWatch Logs group /aws/sagemaker/Clusters/{name}/{id}, stream LifecycleConfig/<group>/"
                  "<instance-id> (on the node: /var/log/provision/provisioning.log)")
"""Where a node's lifecycle script (our bundle) logs: the log group and stream names AWS's HyperPod sample tooling
reads (public HyperPod samples' ``hyperpod log`` command: ``/aws/sagemaker/Clusters/{cluster_name}/{cluster_id}``,
streams ``LifecycleConfig/<group>/<instance-id>``); the on-node copy is as one sample's notes say, UNCONFIRMED in
AWS's guide."""


def provisioning_facts(health: ClusterHealth, cluster_id: str) -> dict[str, str]:
    """What is not up yet: groups still provisioning or failing, what HyperPod says of their nodes, and where the
    lifecycle script's log is. With Continuous provisioning the cluster is InService once its cluster-level
    resources exist and HyperPod keeps retrying nodes (botocore sagemaker ``CreateCluster``
    ``NodeProvisioningMode``), so InService alone does not mean the nodes are up."""
    behind = [g for g in health.groups
              if g.status != "InService" or g.statuses.get("Running", 0) < g.target or set(g.statuses) - {"Running"}]
    if not behind:
        return {}
    facts = {"not up yet": "; ".join(
        f"{g.name} {g.status}, {g.statuses.get('Running', 0)}/{g.target} running"
        + (f" ({', '.join(f'{n} {s}' for s, n in g.statuses.items() if s != 'Running')})"
           if set(g.statuses) - {"Running"} else "") for g in behind)}
    for g in behind:
        if g.messages:
            facts[f"{g.name} says"] = " | ".join(m.splitlines()[0][:200] for m in g.messages[:3])
    if health.provisioning == "Continuous" and health.status == "InService":
        facts["continuous provisioning"] = ("the cluster is InService but HyperPod is still provisioning nodes (it "
                                            "retries failing ones): the stack completing does not mean the nodes "
                                            "are up")
    facts["lifecycle logs"] = LIFECYCLE_LOGS.format(name=health.name, id=cluster_id)
    return facts


# --- fmcluster status and connect (the aws stage's tables: fmcluster.aws.status, fmcluster.aws.connect) ----------

FAILED = frozenset({"Failure"})
"""Node statuses that mean the node failed (botocore sagemaker ``ClusterInstanceStatus``)."""
SESSION_TARGET = "sagemaker-cluster:{cluster_id}_{group}-{instance_id}"
"""A HyperPod node as Session Manager takes it (AWS's HyperPod samples: aws-samples/awsome-distributed-training
``1.architectures/5.sagemaker-hyperpod/easy-ssh.sh``, ``aws ssm start-session --target
sagemaker-cluster:${cluster_id}_${node_group}-${instance_id}``, the cluster ID the ARN's last part)."""
NODE_GROUPS = {"controller": CONTROLLER, "login": LOGIN}
"""``fmcluster connect --node`` -> the instance group (``fmcluster.generate.hyperpod``)."""


def _arn(plan: Plan, stack: StackState) -> str:
    """The ARN of the cluster the ``NAME-cluster`` stack made (its name is known only once deployed: its prefix and
    the compute subnet's ID): the one reader of that output, for `fmcluster status`, `connect` and `hyperpod status`.
    DescribeCluster takes it as ``ClusterName``."""
    if not stack.deployed:
        raise HyperPodError(f"cannot read stack {stack.name}: it is not deployed (deploy it: fmcluster deploy "
                            f"{plan.project})")
    arn = stack.outputs.get(HYPERPOD_CLUSTER_ARN_OUTPUT)
    if not arn:
        raise HyperPodError(f"stack {stack.name} has no output {HYPERPOD_CLUSTER_ARN_OUTPUT} (redeploy it: fmcluster "
                            f"deploy {plan.project})")
    return arn


def deployed_cluster(cfn: Any, plan: Plan) -> str:
    """:func:`_arn` of the ``NAME-cluster`` stack, read with a boto3 CloudFormation client."""
    return _arn(plan, stack_state(cfn, stack_name(plan.project, "cluster")))


def group_rows(health: ClusterHealth, compute: set[str], facts: dict[str, str]) -> tuple[list[GroupStatus], bool]:
    """The compute groups' rows, and whether every other instance group (controller and login; on EKS the system
    group) is up: those are facts (added to ``facts``), not groups, and the cluster is up only when they are. Both
    HyperPod orchestrators read their clusters through this."""
    others_up = all(g.healthy and g.status == "InService" for g in health.groups if g.name not in compute)
    groups = []
    for group in health.groups:
        failing = sum(n for s, n in group.statuses.items() if s in FAILED)
        running = group.statuses.get("Running", 0)
        if group.name in compute:
            groups.append(GroupStatus(group.name, group.instance_type, group.target, group.target, running,
                                      pending=sum(group.statuses.values()) - running - failing, failing=failing,
                                      states=dict(group.statuses)))
        else:
            nodes = ", ".join(f"{n} {s}" for s, n in group.statuses.items()) or "no nodes"
            facts[group.name] = f"{group.current}/{group.target} {group.instance_type}: {nodes}"
    return groups, others_up


def cluster_status(clients: Callable[[str], Any], plan: Plan, stack: StackState) -> ClusterStatus:
    """:func:`cluster_health` as :class:`ClusterStatus`: the compute groups' nodes, the controller and login groups
    as facts."""
    try:
        health = cluster_health(clients("sagemaker"), _arn(plan, stack))
    except HyperPodError as exc:
        return ClusterStatus(plan.cluster.orchestrator, plan.cluster.hyperpod_name_prefix, "unknown", ok=False,
                             problem=str(exc))
    compute = {g.name for g in instance_groups(plan.cluster) if g.node_type == "Compute"}
    arn = _arn(plan, stack)
    facts = {"node recovery": plan.cluster.hyperpod.node_recovery}
    if health.failure:
        facts["failure"] = health.failure
    facts |= provisioning_facts(health, stack.outputs.get(HYPERPOD_CLUSTER_ID_OUTPUT) or arn.rsplit("/", 1)[-1])
    groups, others_up = group_rows(health, compute, facts)
    return ClusterStatus(plan.cluster.orchestrator, health.name, health.status,
                         ok=health.status == "InService" and others_up, facts=facts, groups=groups)


def target(clients: Callable[[str], Any], plan: Plan, cluster_stack: Callable[[], StackState], node: str,
           group: str | None) -> Target:
    """The controller or the first running login node, as ``sagemaker-cluster:<id>_<group>-<instance>``."""
    if node == "login" and plan.cluster.hyperpod.login is None:
        raise NodeNotInProject(f"{plan.project} has no login group (orchestrator.hyperpod.login); connect to the "
                               "controller: --node controller")
    name = NODE_GROUPS[node]
    cluster_id, instance_id = running_node(clients, plan, cluster_stack, name)
    return Target(SESSION_TARGET.format(cluster_id=cluster_id, group=name, instance_id=instance_id), instance_id,
                  f"{node} {instance_id} of HyperPod cluster {cluster_id}")


def running_node(clients: Callable[[str], Any], plan: Plan, cluster_stack: Callable[[], StackState],
                 name: str) -> tuple[str, str]:
    """The cluster's ID and the first running node of instance group ``name`` (both HyperPod orchestrators'
    ``connect``), or :class:`ClusterReadError` saying what the group's nodes are doing."""
    stack = cluster_stack()
    try:
        arn = _arn(plan, stack)
    except HyperPodError as exc:
        raise ClusterReadError(str(exc)) from None
    return running_in_group(clients, plan.project, stack, arn, name)


def running_in_group(clients: Callable[[str], Any], project: str, stack: StackState, arn: str,
                     name: str) -> tuple[str, str]:
    """:func:`running_node` once the cluster's ARN is known (``connect`` without a project file reads it from the
    stack alone)."""
    cluster_id = stack.outputs.get(HYPERPOD_CLUSTER_ID_OUTPUT) or arn.rsplit("/", 1)[-1]
    nodes: list[dict] = []
    try:
        pages = clients("sagemaker").get_paginator("list_cluster_nodes").paginate(
            ClusterName=arn, InstanceGroupNameContains=name)
        for page in pages:
            nodes.extend(n for n in page.get("ClusterNodeSummaries", []) if n.get("InstanceGroupName") == name)
    except ClientError as exc:
        if is_account_problem(exc):
            raise
        error = exc.response.get("Error", {})
        raise ClusterReadError(f"cannot read HyperPod cluster {arn}: {error.get('Code')}: {error.get('Message')}"
                               ) from None
    running = [n for n in nodes if n.get("InstanceStatus", {}).get("Status") == "Running"]
    if not running:
        states = ", ".join(f"{n.get('InstanceId')} {n.get('InstanceStatus', {}).get('Status')}" for n in nodes)
        raise ClusterReadError(f"no running node in instance group {name} of HyperPod cluster {arn}"
                               f"{' (' + states + ')' if states else ''} (hint: `fmcluster status {project}`)")
    return cluster_id, running[0]["InstanceId"]
