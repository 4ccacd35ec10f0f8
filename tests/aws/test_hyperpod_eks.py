"""HyperPod on EKS in the account, with botocore's Stubber: preflight's add-on pins against DescribeAddonVersions,
the chart check, and status through DescribeCluster as for HyperPod Slurm."""

from __future__ import annotations

import boto3
from botocore.stub import Stubber
from support import ROOT

from fmcluster import config
from fmcluster.aws import hyperpod_eks
from fmcluster.aws.stackstate import StackState
from fmcluster.contracts import EKS_CLUSTER_NAME_OUTPUT, HYPERPOD_CLUSTER_ARN_OUTPUT
from fmcluster.generate import hyperpod_chart
from fmcluster.generate.hyperpod_eks import addons
from fmcluster.plan import make_plan

PLAN = make_plan(config.load(ROOT / "examples" / "p5en-hyperpod-eks.yaml").project)


def _eks_with(offered: dict[str, list[str]]):
    client = boto3.client("eks", region_name="us-east-1")
    stub = Stubber(client)
    for name in addons(PLAN.cluster):
        stub.add_response("describe_addon_versions", {"addons": [{"addonName": name, "addonVersions": [
            {"addonVersion": v} for v in offered.get(name, [])]}]},
            {"addonName": name, "kubernetesVersion": PLAN.cluster.hyperpod_eks.kubernetes_version})
    stub.activate()
    return client, stub


def test_every_pin_offered_passes_and_a_missing_one_fails_naming_what_is_offered() -> None:
    pins = addons(PLAN.cluster)
    client, stub = _eks_with({n: [v] for n, v in pins.items()})
    results = hyperpod_eks.check_addon_versions(lambda service: client, PLAN)
    assert [r.status for r in results] == ["pass"] * len(pins)
    stub.assert_no_pending_responses()
    offered = {n: [v] for n, v in pins.items()} | {"coredns": ["v9.9.9-eksbuild.1"]}
    client, _ = _eks_with(offered)
    [failed] = [r for r in hyperpod_eks.check_addon_versions(lambda service: client, PLAN) if r.status == "fail"]
    assert failed.subject == "coredns" and "v9.9.9-eksbuild.1" in failed.message


def test_the_stub_chart_is_refused_before_a_deploy(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv(hyperpod_chart.CHART_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    [result] = hyperpod_eks.check_chart()
    assert result.status == "fail" and "fetch-chart" in result.advice
    monkeypatch.setenv(hyperpod_chart.CHART_ENV, str(tmp_path))
    assert [r.status for r in hyperpod_eks.check_chart()] == ["pass"]


def test_status_reads_the_hyperpod_cluster_and_keeps_the_system_group_as_a_fact() -> None:
    arn = "arn:aws:sagemaker:us-east-1:111122223333:cluster/abc123"
    client = _in_service_sagemaker(arn)
    stack = StackState("p5en-hyperpod-eks-cluster", "CREATE_COMPLETE", outputs={HYPERPOD_CLUSTER_ARN_OUTPUT: arn})
    status = hyperpod_eks.cluster_status(lambda service: client, PLAN, stack)
    assert status.ok and [g.name for g in status.groups] == ["train"] and status.groups[0].running == 8
    assert status.facts["kubernetes"] == "1.35" and status.facts["system"].startswith("2/2 ml.m5.2xlarge")


def test_an_in_service_cluster_whose_system_group_is_not_up_is_not_up() -> None:
    """CoreDNS, Kueue and the operators run on the system group: InService without it is not a working cluster (the
    HyperPod Slurm reading's rule for its controller, shared: aws/hyperpod.py group_rows)."""
    arn = "arn:aws:sagemaker:us-east-1:111122223333:cluster/abc123"
    client = boto3.client("sagemaker", region_name="us-east-1")
    stub = Stubber(client)
    stub.add_response("describe_cluster", {
        "ClusterArn": arn, "ClusterName": "p5en-hyperpod-eks-hyperpod-0abc", "ClusterStatus": "InService",
        "InstanceGroups": [
            {"InstanceGroupName": "system", "InstanceType": "ml.m5.2xlarge", "CurrentCount": 0, "TargetCount": 2,
             "Status": "Creating"},
            {"InstanceGroupName": "train", "InstanceType": "ml.p5en.48xlarge", "CurrentCount": 8, "TargetCount": 8}]},
        {"ClusterName": arn})
    stub.add_response("list_cluster_nodes", {"ClusterNodeSummaries": [
        {"InstanceGroupName": "train", "InstanceId": f"i-{n:017x}", "InstanceType": "ml.p5en.48xlarge",
         "LaunchTime": "2026-12-01T00:00:00Z", "InstanceStatus": {"Status": "Running"}} for n in range(8)]}, None)
    stub.activate()
    stack = StackState("p5en-hyperpod-eks-cluster", "CREATE_COMPLETE", outputs={HYPERPOD_CLUSTER_ARN_OUTPUT: arn})
    status = hyperpod_eks.cluster_status(lambda service: client, PLAN, stack)
    assert not status.ok and status.groups[0].running == 8
    assert status.facts["system"].startswith("0/2 ml.m5.2xlarge")


def _addons_reading(statuses: dict[str, str]):
    client = boto3.client("eks", region_name="us-east-1")
    stub = Stubber(client)
    for name in addons(PLAN.cluster):
        status = statuses.get(name, "ACTIVE")
        health = {"issues": [{"code": "InsufficientNumberOfReplicas",
                              "message": "The add-on is unhealthy because it doesn't have the desired number of "
                                         "replicas."}]} if status == "DEGRADED" else {"issues": []}
        stub.add_response("describe_addon", {"addon": {"addonName": name, "clusterName": "eks-1", "status": status,
                                                       "health": health}},
                          {"clusterName": "eks-1", "addonName": name})
    stub.activate()
    return client, stub


def _in_service_sagemaker(arn: str):
    client = boto3.client("sagemaker", region_name="us-east-1")
    stub = Stubber(client)
    stub.add_response("describe_cluster", {
        "ClusterArn": arn, "ClusterName": "p5en-hyperpod-eks-hyperpod-0abc", "ClusterStatus": "InService",
        "InstanceGroups": [
            {"InstanceGroupName": "system", "InstanceType": "ml.m5.2xlarge", "CurrentCount": 2, "TargetCount": 2},
            {"InstanceGroupName": "train", "InstanceType": "ml.p5en.48xlarge", "CurrentCount": 8, "TargetCount": 8}]},
        {"ClusterName": arn})
    stub.add_response("list_cluster_nodes", {"ClusterNodeSummaries": [
        {"InstanceGroupName": g, "InstanceId": f"i-{n + k:017x}", "InstanceType": t,
         "LaunchTime": "2026-12-01T00:00:00Z", "InstanceStatus": {"Status": "Running"}}
        for g, t, count, k in (("train", "ml.p5en.48xlarge", 8, 0), ("system", "ml.m5.2xlarge", 2, 100))
        for n in range(count)]}, None)
    stub.activate()
    return client


def test_status_after_the_cluster_exists_reads_every_addon_and_a_degraded_one_is_not_up() -> None:
    """The readiness check after the HyperPod cluster: the stack installs the chart without waiting and the add-ons
    that need nodes after the nodes, so status reads their health (eks:DescribeAddon)."""
    arn = "arn:aws:sagemaker:us-east-1:111122223333:cluster/abc123"
    stack = StackState("p5en-hyperpod-eks-cluster", "CREATE_COMPLETE",
                       outputs={HYPERPOD_CLUSTER_ARN_OUTPUT: arn, EKS_CLUSTER_NAME_OUTPUT: "eks-1"})
    eks, stub = _addons_reading({})
    clients = {"sagemaker": _in_service_sagemaker(arn), "eks": eks}
    status = hyperpod_eks.cluster_status(clients.__getitem__, PLAN, stack)
    stub.assert_no_pending_responses()
    assert status.ok and status.facts["add-ons"] == f"{len(addons(PLAN.cluster))} active"

    eks, _ = _addons_reading({"coredns": "DEGRADED"})
    clients = {"sagemaker": _in_service_sagemaker(arn), "eks": eks}
    status = hyperpod_eks.cluster_status(clients.__getitem__, PLAN, stack)
    assert not status.ok and "coredns DEGRADED (InsufficientNumberOfReplicas" in status.facts["add-ons"]
