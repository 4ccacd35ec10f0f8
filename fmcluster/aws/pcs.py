"""Preflight for ``orchestrator.type: pcs``: can AWS PCS create the project's cluster in this Region now?

AWS PCS creates one cluster at a time per Region and account: "There can only be 1 cluster in a Creating state
per AWS Region per AWS account. CreateCluster fails with a ServiceQuotaExceededException if there is already a
cluster in a Creating state" (PCS API reference, CreateCluster,
https://docs.aws.amazon.com/pcs/latest/APIReference/API_CreateCluster.html). The quota is not adjustable (PCS
user guide, "Endpoints and service quotas for AWS PCS",
https://docs.aws.amazon.com/pcs/latest/userguide/service-endpoints-quotas.html; FACTS.md section 5). Another
deploy, or another team, creating a cluster makes ours fail (and its stack roll back) until theirs is done.

The same page gives 5 clusters per Region by default (adjustable). fmcluster knows no Service Quotas code for it
(no source gives one, and :mod:`fmcluster.aws.account_checks` finds quotas by name, never by a guessed code), so
the count of clusters is compared with that default only, and said to be the default.

:func:`check_pcs_creating` is a preflight check in the style of :mod:`fmcluster.aws.account_checks`; run it
through :func:`fmcluster.aws.preflight.run_check`, which turns access denied into a "could not check" warning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from fmcluster.aws.account_checks import Clients, Result, passed
from fmcluster.aws.nodes import (
    ClusterReadError,
    ClusterStatus,
    NodeNotInProject,
    Target,
    ec2_group,
    first_running,
    instances,
    tag_filter,
)
from fmcluster.aws.session import is_account_problem
from fmcluster.aws.stackstate import StackState
from fmcluster.config.pcs import LOGIN
from fmcluster.contracts import PCS_CLUSTER_ID_OUTPUT, PCS_LOGIN_GROUP_ID_OUTPUT
from fmcluster.generate.pcs import node_groups
from fmcluster.plan import Plan

CHECK = "pcs"
"""The check's name in preflight's table."""

CREATING = "CREATING"
"""The ``ClusterStatus`` of a cluster being created (botocore's pcs model, ``ClusterStatus``)."""

DEFAULT_CLUSTERS_PER_REGION = 5
"""PCS's default quota of clusters per Region (adjustable; PCS user guide, "Endpoints and service quotas")."""


def list_clusters(clients: Clients) -> list[dict[str, Any]]:
    """Every PCS cluster of the account in the Region (``ListClusters``, every page): name, id, status."""
    found: list[dict[str, Any]] = []
    for page in clients("pcs").get_paginator("list_clusters").paginate():
        found.extend(page.get("clusters", []))
    return found


def check_pcs_creating(clients: Clients, plan: Plan, own_prefix: str | None = None) -> list[Result]:
    """Fail when another PCS cluster is being created in the Region (ours would fail to create); warn when the Region
    already holds the default quota's number of clusters.

    ``own_prefix`` is how the name of the project's PCS cluster starts (``PREFIX-<size letter>-``: the stack ends it
    with the compute subnet's ID, which preflight may not know yet); a cluster so named already there means the
    deploy updates it and creates none, so neither limit applies. None: every cluster being created counts.
    """
    region = clients.region
    clusters = list_clusters(clients)
    own = next((c for c in clusters if own_prefix is not None and str(c.get("name", "")).startswith(own_prefix)), None)
    if own is not None:
        cluster_name = own.get("name")
        if own.get("status") == CREATING:
            return [Result(CHECK, region, "warn", f"the project's PCS cluster {cluster_name} ({own.get('id', '?')}) "
                           "is being created now (another deploy of this project?)",
                           f"wait until it is ACTIVE (aws pcs get-cluster --cluster-identifier {cluster_name} "
                           f"--region {region}), then deploy")]
        return [passed(CHECK, region, f"the project's PCS cluster {cluster_name} exists ({own.get('status', '?')}): "
                       "the deploy updates it and creates no cluster")]
    creating = [c for c in clusters if c.get("status") == CREATING]
    if creating:
        names = ", ".join(f"{c.get('name', '?')} ({c.get('id', '?')})" for c in creating)
        first = creating[0].get("name") or creating[0].get("id", "")
        return [Result(CHECK, region, "fail", f"PCS is creating {names} in {region}: PCS creates one cluster at a "
                       f"time per Region, so creating {plan.project}'s cluster now would fail "
                       "(ServiceQuotaExceededException; not adjustable)",
                       f"wait until it is ACTIVE (aws pcs get-cluster --cluster-identifier {first} --region {region}), "
                       "then deploy")]
    count = len(clusters)
    if count >= DEFAULT_CLUSTERS_PER_REGION:
        return [Result(CHECK, region, "warn", f"{count} PCS clusters are already in {region}; PCS's default quota is "
                       f"{DEFAULT_CLUSTERS_PER_REGION} per Region, so a new one fails unless the account's quota was "
                       "raised", "check the AWS PCS quotas in the Service Quotas console (the quota is adjustable), "
                       "or delete a cluster no one uses")]
    return [passed(CHECK, region, f"no PCS cluster is being created in {region}; {count} cluster(s) there "
                   f"(default quota {DEFAULT_CLUSTERS_PER_REGION})")]


# --- fmcluster status and connect (the aws stage's tables: fmcluster.aws.status, fmcluster.aws.connect) ----------

NODE_GROUP_TAG = "aws:pcs:compute-node-group-id"
"""The tag PCS puts on a node group's instances, valued with the group's ID (PCS user guide, "Finding compute node
group instances in AWS PCS": ``aws ec2 describe-instances --filters Name=tag:aws:pcs:compute-node-group-id,...``)."""
ACTIVE = "ACTIVE"


def _pages(paginator: Any, key: str, **kwargs: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for page in paginator.paginate(**kwargs):
        found.extend(page.get(key, []))
    return found


def _problem(exc: ClientError, what: str) -> str:
    if is_account_problem(exc):
        raise exc
    error = exc.response.get("Error", {})
    return f"cannot read {what}: {error.get('Code')}: {error.get('Message')}"


def cluster_status(clients: Callable[[str], Any], plan: Plan, stack: StackState) -> ClusterStatus:
    """The PCS cluster, its queues, and per compute node group its scaling bounds, status and instances (by the
    ``aws:pcs:compute-node-group-id`` tag); the login node group as a fact."""
    cluster_id = stack.outputs.get(PCS_CLUSTER_ID_OUTPUT)
    if not cluster_id:
        return ClusterStatus(plan.cluster.orchestrator, stack.name, "unknown", ok=False,
                             problem=f"stack {stack.name} has no output {PCS_CLUSTER_ID_OUTPUT}")
    client = clients("pcs")
    try:
        cluster = client.get_cluster(clusterIdentifier=cluster_id)["cluster"]
        summaries = _pages(client.get_paginator("list_compute_node_groups"), "computeNodeGroups",
                           clusterIdentifier=cluster_id)
        queues = _pages(client.get_paginator("list_queues"), "queues", clusterIdentifier=cluster_id)
        details = [client.get_compute_node_group(clusterIdentifier=cluster_id, computeNodeGroupIdentifier=s["id"])
                   ["computeNodeGroup"] for s in summaries]
    except ClientError as exc:
        return ClusterStatus(plan.cluster.orchestrator, cluster_id, "unknown", ok=False,
                             problem=_problem(exc, f"PCS cluster {cluster_id}"))
    facts = {"slurm": f"{cluster.get('scheduler', {}).get('version', '?')}, size {cluster.get('size', '?')}",
             "queues": ", ".join(f"{q.get('name')} {q.get('status')}" for q in queues) or "none"}
    if cluster.get("errorInfo"):
        facts["errors"] = "; ".join(f"{e.get('code')}: {e.get('message')}" for e in cluster["errorInfo"])
    ec2 = clients("ec2")
    types = {g.name: g.instance_type for g in node_groups(plan.cluster)}
    groups = []
    for group in details:
        scaling = group.get("scalingConfiguration", {})
        bounds = (scaling.get("minInstanceCount", 0), scaling.get("maxInstanceCount", 0))
        kind = next((c.get("instanceType") for c in group.get("instanceConfigs", [])), types.get(group["name"], "?"))
        detail = group.get("status", "?") + "".join(f"; {e.get('code')}: {e.get('message')}"
                                                    for e in group.get("errorInfo", []))
        status = ec2_group(ec2, group["name"], kind, bounds,
                           instances(ec2, [tag_filter(NODE_GROUP_TAG, group["id"])]), detail=detail)
        if group["name"] == LOGIN:
            facts["login nodes"] = f"{status.running}/{status.expected} running, {status.failing} failing ({detail})"
        else:
            groups.append(status)
    ok = cluster.get("status") == ACTIVE and all(g.get("status") == ACTIVE for g in details)
    return ClusterStatus(plan.cluster.orchestrator, cluster.get("name", cluster_id), cluster.get("status", "?"), ok=ok,
                         facts=facts, groups=groups)


def target(clients: Callable[[str], Any], plan: Plan, cluster_stack: Callable[[], StackState], node: str,
           group: str | None) -> Target:
    """A running login node: an instance tagged with the login node group's ID (``NAME-cluster``'s
    ``PcsLoginNodeGroupId``; a stack deployed before that output: the group named ``login`` of the cluster)."""
    if plan.cluster.pcs.login is None:
        raise NodeNotInProject(f"{plan.project} has no login nodes (orchestrator.pcs.login is null) and AWS runs "
                               "the controller: there is no node to connect to (set orchestrator.pcs.login)")
    stack = cluster_stack()
    group_id = stack.outputs.get(PCS_LOGIN_GROUP_ID_OUTPUT)
    if not group_id:
        cluster_id = stack.outputs.get(PCS_CLUSTER_ID_OUTPUT, "")
        try:
            summaries = _pages(clients("pcs").get_paginator("list_compute_node_groups"), "computeNodeGroups",
                               clusterIdentifier=cluster_id)
        except ClientError as exc:
            raise ClusterReadError(_problem(exc, f"PCS cluster {cluster_id}")) from None
        group_id = next((s["id"] for s in summaries if s.get("name") == LOGIN), None)
        if group_id is None:
            raise ClusterReadError(f"PCS cluster {cluster_id} has no node group {LOGIN} (hint: `fmcluster status "
                                   f"{plan.project}`)")
    found = instances(clients("ec2"), [tag_filter(NODE_GROUP_TAG, group_id)])
    instance = first_running(found, f"login node of {plan.project}",
                             f"EC2 instances tagged {NODE_GROUP_TAG}={group_id}")
    return Target(instance["InstanceId"], instance["InstanceId"], f"login node {instance['InstanceId']}")
