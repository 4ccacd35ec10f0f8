"""``orchestrator.type: parallelcluster``: the cluster ParallelCluster's provider made, read as ``pcluster
describe-cluster`` reads it (aws-parallelcluster 3.16.1, ``pcluster/models/cluster.py``):

- its own CloudFormation stack, named after the cluster (``Cluster.stack_name`` is the cluster's name);
- the compute fleet's status, in the DynamoDB table ``parallelcluster-<cluster>``, item ``Id: COMPUTE_FLEET``, as JSON
  ``Data: {status, lastStatusUpdatedTime}`` since 3.2 (``pcluster/models/compute_fleet_status_manager.py``,
  ``JsonComputeFleetStatusManager``; ``pcluster/constants.py`` ``PCLUSTER_DYNAMODB_PREFIX``), read consistently as
  pcluster does (``pcluster/aws/dynamo.py`` ``get_item``), and only while the stack is in a working state;
- its EC2 instances, by the tags ParallelCluster puts on them (``pcluster/constants.py``): ``parallelcluster:
  cluster-name``, ``parallelcluster:node-type`` (``HeadNode``, ``Compute``, ``LoginNode``: ``NodeType``),
  ``parallelcluster:queue-name`` and ``parallelcluster:compute-resource-name``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from fmcluster.aws.nodes import (
    ClusterStatus,
    NodeNotInProject,
    Target,
    ec2_group,
    first_running,
    instances,
    tag,
    tag_filter,
)
from fmcluster.aws.session import is_account_problem
from fmcluster.aws.stackstate import StackState, stack_state
from fmcluster.contracts import CLUSTER_NAME_OUTPUT
from fmcluster.generate.parallelcluster import min_count, queues
from fmcluster.plan import Plan

TABLE_PREFIX = "parallelcluster-"
FLEET_KEY = "COMPUTE_FLEET"
RUNNING = "RUNNING"
"""``ComputeFleetStatus.RUNNING``: partitions active."""
WORKING = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "UPDATE_IN_PROGRESS"})
"""Stack states in which pcluster reads the fleet status (``pcluster/aws/aws_resources.py`` ``is_working_status``,
and ``UPDATE_IN_PROGRESS``: ``pcluster/models/cluster.py`` ``compute_fleet_status_with_last_updated_time``)."""

CLUSTER_NAME_TAG = "parallelcluster:cluster-name"
NODE_TYPE_TAG = "parallelcluster:node-type"
QUEUE_TAG = "parallelcluster:queue-name"
COMPUTE_RESOURCE_TAG = "parallelcluster:compute-resource-name"
NODE_TYPES = {"head": "HeadNode", "login": "LoginNode"}
"""``fmcluster connect --node`` -> ParallelCluster's ``NodeType``."""
COMPUTE = "Compute"


def cluster_name(plan: Plan, stack: StackState) -> str:
    """The deployed cluster's name (``NAME-cluster``'s ``ParallelClusterName``), else the plan's."""
    return stack.outputs.get(CLUSTER_NAME_OUTPUT) or plan.cluster.pcluster_name


def fleet_status(dynamodb: Any, name: str) -> str | None:
    """The compute fleet's status (``RUNNING``, ``STOPPED``, ``PROTECTED``, ...), or None while there is no record."""
    try:
        item = dynamodb.get_item(TableName=TABLE_PREFIX + name, Key={"Id": {"S": FLEET_KEY}},
                                 ConsistentRead=True).get("Item")
    except ClientError as exc:
        if is_account_problem(exc) or exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
        return None
    if not item:
        return None
    data = item.get("Data", {}).get("M", {})
    return data.get("status", {}).get("S") or item.get("Status", {}).get("S")  # before 3.2: plain text "Status"


def cluster_status(clients: Callable[[str], Any], plan: Plan, stack: StackState) -> ClusterStatus:
    name = cluster_name(plan, stack)
    own = stack_state(clients("cloudformation"), name)
    if not own.deployed:
        hint = ("create_cluster is false: create it with `pcluster create-cluster` and the file `fmcluster "
                "parallelcluster config --from-stacks` writes" if not plan.cluster.pcluster.create_cluster
                else "the cluster stack's provider has not made it: see the NAME-cluster stack's events")
        return ClusterStatus(plan.cluster.orchestrator, name, "not created", ok=False,
                             problem=f"ParallelCluster cluster {name} has no stack ({hint})")
    fleet = fleet_status(clients("dynamodb"), name) if own.status in WORKING else None
    ec2 = clients("ec2")
    found = instances(ec2, [tag_filter(CLUSTER_NAME_TAG, name)])
    facts = {"cluster stack": own.status + (f" ({own.reason})" if own.reason and not own.ok else ""),
             "compute fleet": fleet or "unknown (no record: the cluster is being created or deleted)"}
    for node, kind in NODE_TYPES.items():
        nodes = [i for i in found if tag(i, NODE_TYPE_TAG) == kind]
        if nodes or node == "head":
            facts[f"{node} node"] = ", ".join(f"{i['InstanceId']} {i.get('State', {}).get('Name', '?')}"
                                              for i in nodes) or "none"
    groups = []
    for queue in queues(plan.cluster):
        for group in queue.groups:
            mine = [i for i in found if tag(i, NODE_TYPE_TAG) == COMPUTE and tag(i, QUEUE_TAG) == queue.name
                    and tag(i, COMPUTE_RESOURCE_TAG) == group.name]
            groups.append(ec2_group(ec2, group.name, group.instance_type, (min_count(plan.cluster, group), group.count),
                                    mine, detail=f"queue {queue.name}"))
    return ClusterStatus(plan.cluster.orchestrator, name, own.status, ok=own.ok and fleet == RUNNING, facts=facts,
                         groups=groups)


def target(clients: Callable[[str], Any], plan: Plan, cluster_stack: Callable[[], StackState], node: str,
           group: str | None) -> Target:
    """The running head node or first login node of the cluster, by its tags."""
    if node == "login" and plan.cluster.pcluster.login_nodes is None:
        raise NodeNotInProject(f"{plan.project} has no login nodes (orchestrator.parallelcluster.login_nodes); "
                               "connect to the head node: --node head")
    name = cluster_name(plan, cluster_stack())
    kind = NODE_TYPES[node]
    found = instances(clients("ec2"), [tag_filter(CLUSTER_NAME_TAG, name), tag_filter(NODE_TYPE_TAG, kind)])
    instance = first_running(found, f"{node} node of ParallelCluster cluster {name}",
                             f"EC2 instances tagged {CLUSTER_NAME_TAG}={name}, {NODE_TYPE_TAG}={kind}")
    return Target(instance["InstanceId"], instance["InstanceId"], f"{node} node {instance['InstanceId']} of {name}")
