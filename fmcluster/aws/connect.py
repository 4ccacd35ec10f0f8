"""``fmcluster connect``: the node a Session Manager session starts on, and the ``aws ssm start-session`` command.

Which nodes an orchestrator has is its trait (:attr:`fmcluster.orchestrators.Orchestrator.nodes`); how each finds
one is in its own module, named in :data:`TARGETS`, the aws stage's table of orchestrators. The session itself is
the AWS CLI's: ``aws ssm start-session --target TARGET`` calls ``ssm:StartSession`` and hands the answer to the
Session Manager plugin (AWS Systems Manager user guide, "Start a session", AWS CLI; "Install the Session Manager
plugin for the AWS CLI").
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from typing import Any

from fmcluster.aws import hyperpod, hyperpod_eks, parallelcluster, pcs, selfmanaged
from fmcluster.aws.nodes import ClusterReadError, NodeNotInProject, Target, first_running, instances, tag_filter
from fmcluster.aws.stackstate import StackState
from fmcluster.contracts import (
    CLUSTER_NAME_OUTPUT,
    HYPERPOD_CLUSTER_ARN_OUTPUT,
    PCS_LOGIN_GROUP_ID_OUTPUT,
)
from fmcluster.facts import OPERATING_SYSTEMS, PROJECT_TAG
from fmcluster.plan import Plan

TargetFinder = Callable[[Callable[[str], Any], Plan, Callable[[], StackState], str, "str | None"], Target]
"""(clients, the plan, a reader of the ``NAME-cluster`` stack, the node (a trait's :attr:`~fmcluster.orchestrators.
Orchestrator.nodes`), a compute group or None) -> where the session starts. A finder refuses a node the project
does not have (:class:`~fmcluster.aws.nodes.NodeNotInProject`) before it reads the stack or calls AWS."""

TARGETS: dict[str, TargetFinder] = {
    "none": selfmanaged.target,
    "parallelcluster": parallelcluster.target,
    "hyperpod": hyperpod.target,
    "pcs": pcs.target,
    "hyperpod-eks": hyperpod_eks.target,
}
"""The aws stage's table of orchestrators (:mod:`fmcluster.orchestrators`): how each finds the node to connect to."""

PLUGIN = "session-manager-plugin"
PLUGIN_DOCS = ("https://docs.aws.amazon.com/systems-manager/latest/userguide/"
               "session-manager-working-with-install-plugin.html")
ACTION = "ssm:StartSession"
"""What the AWS CLI calls to start the session (its permission, not one fmcluster's own code calls)."""


def session_command(target: str, region: str, profile: str | None = None) -> list[str]:
    """``aws ssm start-session --target TARGET --region REGION [--profile PROFILE]``."""
    return ["aws", "ssm", "start-session", "--target", target, "--region", region,
            *(["--profile", profile] if profile else [])]


def missing_tools() -> Sequence[str]:
    """What the session needs and PATH lacks: the AWS CLI, the Session Manager plugin."""
    return [tool for tool in ("aws", PLUGIN) if shutil.which(tool) is None]


SESSION_USER = "ssm-user"
"""The user a Session Manager session starts as on Linux (AWS Systems Manager user guide, "Turn on or turn off
ssm-user account administrative permissions")."""
OS_USERS = {"ubuntu": "ubuntu", "al2023": "ec2-user"}
"""The image's default user per OS family, the one that owns the cluster's home and submits jobs: ParallelCluster's
``OS_MAPPING`` (aws-parallelcluster ``cli/src/pcluster/constants.py``: ubuntu2204/ubuntu2404 ``ubuntu``, alinux2023
``ec2-user``), the DLAMI's and PCS's images built on those systems, HyperPod's Ubuntu image (``sudo su - ubuntu``:
awslabs/awsome-distributed-training ``1.architectures/5.sagemaker-hyperpod`` README and its Session Manager
shell profile in ``sagemaker-hyperpod.yaml``)."""


def os_user(plan: Plan | None) -> str:
    """``sudo su - USER`` for the project's nodes (without a plan: both systems' users)."""
    if plan is None:
        return "sudo su - ubuntu (ec2-user on Amazon Linux 2023)"
    return f"sudo su - {OS_USERS[OPERATING_SYSTEMS[plan.cluster.os].family]}"


def by_name(clients: Callable[[str], Any], project: str, stack: StackState, node: str | None,
            group: str | None) -> Target:
    """The node to connect to when the project file cannot be used (:mod:`fmcluster.cli.deployed`): found from the
    deployed ``NAME-cluster`` stack's outputs and the instances' tags alone. ParallelCluster's head (or ``--node
    login``), HyperPod's controller (or login), PCS's login nodes, or a self-managed project's instances."""
    if not stack.deployed:
        raise ClusterReadError(f"stack {stack.name} is not deployed: there is no node to connect to")
    out = stack.outputs
    if CLUSTER_NAME_OUTPUT in out:
        chosen = node or "head"
        kind = parallelcluster.NODE_TYPES.get(chosen)
        if kind is None:
            raise NodeNotInProject(f"--node {chosen}: a ParallelCluster cluster has head and login nodes")
        name = out[CLUSTER_NAME_OUTPUT]
        found = instances(clients("ec2"), [tag_filter(parallelcluster.CLUSTER_NAME_TAG, name),
                                           tag_filter(parallelcluster.NODE_TYPE_TAG, kind)])
        instance = first_running(found, f"{chosen} node of ParallelCluster cluster {name}",
                                 f"EC2 instances tagged {parallelcluster.CLUSTER_NAME_TAG}={name}, "
                                 f"{parallelcluster.NODE_TYPE_TAG}={kind}")
        return Target(instance["InstanceId"], instance["InstanceId"], f"{chosen} node {instance['InstanceId']} of "
                      f"{name}")
    if HYPERPOD_CLUSTER_ARN_OUTPUT in out:
        chosen = node or "controller"
        if chosen not in hyperpod.NODE_GROUPS:
            raise NodeNotInProject(f"--node {chosen}: without the project file fmcluster connects to a HyperPod "
                                   "cluster's controller or login nodes")
        name = hyperpod.NODE_GROUPS[chosen]
        cluster_id, instance_id = hyperpod.running_in_group(clients, project, stack, out[HYPERPOD_CLUSTER_ARN_OUTPUT],
                                                            name)
        return Target(hyperpod.SESSION_TARGET.format(cluster_id=cluster_id, group=name, instance_id=instance_id),
                      instance_id, f"{chosen} {instance_id} of HyperPod cluster {cluster_id}")
    if PCS_LOGIN_GROUP_ID_OUTPUT in out:
        group_id = out[PCS_LOGIN_GROUP_ID_OUTPUT]
        found = instances(clients("ec2"), [tag_filter(pcs.NODE_GROUP_TAG, group_id)])
        instance = first_running(found, f"login node of {project}", f"EC2 instances tagged {pcs.NODE_GROUP_TAG}="
                                 f"{group_id}")
        return Target(instance["InstanceId"], instance["InstanceId"], f"login node {instance['InstanceId']}")
    filters = [tag_filter(PROJECT_TAG, project)]
    if group:
        filters.append(tag_filter(selfmanaged.GROUP_TAG, group))
    found = instances(clients("ec2"), filters)
    instance = first_running(found, f"instance of {project}", f"EC2 instances tagged {PROJECT_TAG}={project}"
                             + (f", {selfmanaged.GROUP_TAG}={group}" if group else ""))
    return Target(instance["InstanceId"], instance["InstanceId"], f"node {instance['InstanceId']} of {project}")
