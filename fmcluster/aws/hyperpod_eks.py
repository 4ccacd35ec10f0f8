"""HyperPod on EKS in the account: the cluster's status (SageMaker's DescribeCluster, as for HyperPod Slurm), the node
``fmcluster connect`` reaches (a GPU node, through Session Manager: HyperPod's ``sagemaker-cluster:`` target), and
preflight's check of the pinned EKS add-on versions (``eks:DescribeAddonVersions``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from fmcluster.aws.account_checks import Result, passed
from fmcluster.aws.hyperpod import SESSION_TARGET, HyperPodError, _arn, cluster_health, group_rows, running_node
from fmcluster.aws.nodes import ClusterStatus, NodeNotInProject, Target
from fmcluster.aws.stackstate import StackState
from fmcluster.contracts import EKS_CLUSTER_NAME_OUTPUT
from fmcluster.generate.hyperpod_chart import CHART_COMMIT, chart_dir
from fmcluster.generate.hyperpod_eks import addons, instance_groups
from fmcluster.plan import Plan

CHECK = "eks add-ons"
CHART_CHECK = "hyperpod chart"


def check_chart() -> list[Result]:
    """The chart synthesis ships is the pinned one from the cache, not the stub (no AWS call)."""
    folder, real = chart_dir()
    if real:
        return [passed(CHART_CHECK, CHART_COMMIT[:12], f"the pinned HyperPod Helm chart ({folder})")]
    return [Result(CHART_CHECK, CHART_COMMIT[:12], "fail", "the workstation's cache holds no HyperPod Helm chart at "
                   "the pinned commit and SHA-256: a deploy would install fmcluster's test stub",
                   "run `fmcluster hyperpod-eks fetch-chart` once (needs git and the internet), then deploy")]


def cluster_status(clients: Callable[[str], Any], plan: Plan, stack: StackState) -> ClusterStatus:
    """The compute groups' nodes; the system group as a fact."""
    cluster = plan.cluster
    try:
        health = cluster_health(clients("sagemaker"), _arn(plan, stack))
    except HyperPodError as exc:
        return ClusterStatus(cluster.orchestrator, cluster.eks_name_prefix, "unknown", ok=False, problem=str(exc))
    compute = {g.name for g in instance_groups(cluster) if g.compute_group}
    facts = {"node recovery": cluster.hyperpod_eks.node_recovery,
             "kubernetes": cluster.hyperpod_eks.kubernetes_version}
    if health.failure:
        facts["failure"] = health.failure
    groups, others_up = group_rows(health, compute, facts)  # the system group: a fact, up or the cluster is not
    addons_up = _addon_health(clients, plan, stack, facts)
    return ClusterStatus(cluster.orchestrator, health.name, health.status,
                         ok=health.status == "InService" and others_up and addons_up, facts=facts, groups=groups)


def _addon_health(clients: Callable[[str], Any], plan: Plan, stack: StackState, facts: dict[str, str]) -> bool:
    """The add-ons' health (``eks:DescribeAddon``) into ``facts["add-ons"]``; True when every one is ACTIVE. The
    readiness check after the HyperPod cluster exists: the stack creates the add-ons that need nodes after it and
    installs the chart without waiting (stacks/hyperpod_eks.py), so a deploy that completed says nothing of their
    pods; an add-on whose Deployment cannot schedule stays DEGRADED (FACTS.md 5b)."""
    name = stack.outputs.get(EKS_CLUSTER_NAME_OUTPUT)
    if not name:
        facts["add-ons"] = f"not read: the stack has no {EKS_CLUSTER_NAME_OUTPUT} output (deploy again)"
        return True
    eks = clients("eks")
    bad = []
    for addon in addons(plan.cluster):
        try:
            found = eks.describe_addon(clusterName=name, addonName=addon)["addon"]
        except ClientError as exc:
            bad.append(f"{addon} {exc.response.get('Error', {}).get('Code', 'unreadable')}")
            continue
        if found.get("status") != "ACTIVE":
            issues = "; ".join(f"{i.get('code')}: {i.get('message')}" for i in found.get("health", {}).get(
                "issues", []))
            bad.append(f"{addon} {found.get('status')}" + (f" ({issues})" if issues else ""))
    total = len(addons(plan.cluster))
    facts["add-ons"] = f"{total} active" if not bad else f"{total - len(bad)}/{total} active; " + ", ".join(bad)
    return not bad


def target(clients: Callable[[str], Any], plan: Plan, cluster_stack: Callable[[], StackState], node: str,
           group: str | None) -> Target:
    """The first running node of ``group`` (default: the first compute group)."""
    names = [g.name for g in plan.groups]
    name = group or names[0]
    if name not in names:
        raise NodeNotInProject(f"{plan.project} has no compute group {name!r} (groups: {', '.join(names)})")
    cluster_id, instance_id = running_node(clients, plan, cluster_stack, name)
    return Target(SESSION_TARGET.format(cluster_id=cluster_id, group=name, instance_id=instance_id), instance_id,
                  f"{name} node {instance_id} of HyperPod cluster {cluster_id}")


def check_addon_versions(clients: Callable[[str], Any], plan: Plan) -> list[Result]:
    """Each pinned add-on version is offered for the project's Kubernetes version (``DescribeAddonVersions``)."""
    eks = clients("eks")
    version = plan.cluster.hyperpod_eks.kubernetes_version
    out = []
    for name, pinned in addons(plan.cluster).items():
        offered: list[str] = []
        for page in eks.get_paginator("describe_addon_versions").paginate(addonName=name, kubernetesVersion=version):
            for addon in page.get("addons", []):
                offered += [v["addonVersion"] for v in addon.get("addonVersions", [])]
        if pinned in offered:
            out.append(passed(CHECK, name, f"{pinned} is offered for Kubernetes {version}"))
        else:
            newest = ", ".join(offered[:3]) or "none"
            out.append(Result(CHECK, name, "fail", f"{pinned} is not offered for Kubernetes {version} (offered: "
                              f"{newest})", "upgrade fmcluster, or choose another orchestrator.hyperpod_eks."
                                            "kubernetes_version"))
    return out
