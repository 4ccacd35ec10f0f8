"""HyperPod's Continuous provisioning made visible: ``fmcluster status`` shows the groups still provisioning or
failing, what HyperPod says of their nodes and where the lifecycle script logs, and a cluster that is InService
while its controller is not up is not up. Against botocore's Stubber (answers checked against the SageMaker model)."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
from botocore.stub import Stubber
from support import BASE, plan_of

from fmcluster.aws import hyperpod
from fmcluster.aws.stackstate import StackState

HP = plan_of(BASE.replace("p5.48xlarge", "p4d.24xlarge") + "orchestrator: {type: hyperpod}\n")
ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcd1234efgh"
NAME = "demo-hyperpod-0123456789abcdef0"
WHEN = datetime(2026, 11, 30, 12, tzinfo=UTC)
FAILED = "Lifecycle scripts did not run successfully. Check the CloudWatch logs for the instance.\nmore"


def _group(name: str, itype: str, target: int, current: int, status: str) -> dict:
    return {"InstanceGroupName": name, "InstanceType": itype, "TargetCount": target, "CurrentCount": current,
            "Status": status, "ThreadsPerCore": 1, "ExecutionRole": "arn:aws:iam::123456789012:role/exec",
            "LifeCycleConfig": {"SourceS3Uri": f"s3://sagemaker-demo/{name}/", "OnCreate": "bootstrap.sh"}}


def _node(group: str, itype: str, i: int, status: str, message: str | None = None) -> dict:
    state = {"Status": status} | ({"Message": message} if message else {})
    return {"InstanceGroupName": group, "InstanceId": f"i-0{i:016x}", "InstanceType": itype, "LaunchTime": WHEN,
            "InstanceStatus": state}


def _status(groups: list[dict], nodes: list[dict], cluster_status: str = "InService"):
    sagemaker = boto3.client("sagemaker", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(sagemaker) as stubber:
        stubber.add_response("describe_cluster", {
            "ClusterArn": ARN, "ClusterName": NAME, "ClusterStatus": cluster_status, "InstanceGroups": groups,
            "NodeProvisioningMode": "Continuous"}, {"ClusterName": ARN})
        stubber.add_response("list_cluster_nodes", {"ClusterNodeSummaries": nodes}, {"ClusterName": ARN})
        stack = StackState("demo-cluster", "CREATE_COMPLETE", outputs={"HyperPodClusterArn": ARN})
        return hyperpod.cluster_status(lambda service: sagemaker, HP, stack)


def test_an_in_service_cluster_whose_controller_is_still_provisioning_is_not_up_and_says_where_to_look() -> None:
    status = _status(
        [_group("controller", "ml.m5.12xlarge", 1, 0, "Creating"), _group("train", "ml.p4d.24xlarge", 2, 1, "Degraded")],
        [_node("controller", "ml.m5.12xlarge", 1, "Pending"), _node("train", "ml.p4d.24xlarge", 2, "Running"),
         _node("train", "ml.p4d.24xlarge", 3, "Failure", FAILED), _node("train", "ml.p4d.24xlarge", 4, "Failure", FAILED)])
    assert status.state == "InService" and not status.ok and not status.healthy
    facts = status.facts
    assert facts["not up yet"] == ("controller Creating, 0/1 running (1 Pending); "
                                   "train Degraded, 1/2 running (2 Failure)")
    assert facts["train says"] == "Lifecycle scripts did not run successfully. Check the CloudWatch logs for the instance."
    assert "the stack completing does not mean the nodes are up" in facts["continuous provisioning"]
    assert facts["lifecycle logs"].startswith(f"CloudWatch Logs group /aws/sagemaker/Clusters/{NAME}/abcd1234efgh, "
                                              "stream LifecycleConfig/<group>/<instance-id>")
    [train] = status.groups
    assert (train.running, train.failing) == (1, 2)


def test_a_cluster_with_every_node_up_has_no_provisioning_facts() -> None:
    status = _status(
        [_group("controller", "ml.m5.12xlarge", 1, 1, "InService"), _group("train", "ml.p4d.24xlarge", 2, 2, "InService")],
        [_node("controller", "ml.m5.12xlarge", 1, "Running"), _node("train", "ml.p4d.24xlarge", 2, "Running"),
         _node("train", "ml.p4d.24xlarge", 3, "Running")])
    assert status.ok and status.healthy
    assert not {"not up yet", "continuous provisioning", "lifecycle logs"} & set(status.facts)
