"""`fmcluster hyperpod status`: node health per instance group, read from moto's SageMaker."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from support import BASE
from typer.testing import CliRunner

from fmcluster.aws.hyperpod import HyperPodError, cluster_health
from fmcluster.cli import app

PROJECT = BASE.replace("p5.48xlarge", "p4d.24xlarge") + "region: us-east-1\norchestrator: {type: hyperpod}\n"
URI = "s3://sagemaker-demo-0a1b2c3d/lifecycle/{}/"


def _group(name: str, itype: str, count: int) -> dict:
    return {"InstanceGroupName": name, "InstanceType": itype, "InstanceCount": count, "ThreadsPerCore": 1,
            "ExecutionRole": "arn:aws:iam::123456789012:role/exec",
            "LifeCycleConfig": {"SourceS3Uri": URI.format(name), "OnCreate": "bootstrap.sh"}}


NAME = "demo-hyperpod-0123456789abcdef0"
"""As the demo-cluster stack names it: the prefix and the compute subnet's ID (never a literal name)."""


ARN = f"arn:aws:sagemaker:us-east-1:123456789012:cluster/{NAME}"  # moto's form: the name last


def _deploy_stack(arn: str = ARN) -> None:
    """A demo-cluster stack whose output holds the cluster's ARN, as the real stack's does."""
    import json

    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                "Outputs": {"HyperPodClusterArn": {"Value": arn}}}
    boto3.client("cloudformation", region_name="us-east-1").create_stack(
        StackName="demo-cluster", TemplateBody=json.dumps(template))


def _create(client) -> None:
    _deploy_stack()
    client.create_cluster(ClusterName=NAME, InstanceGroups=[
        _group("controller", "ml.m5.12xlarge", 1), _group("train", "ml.p4d.24xlarge", 2)],
        VpcConfig={"SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-0123456789abcdef0"]})


def test_cluster_health_counts_nodes_per_group() -> None:
    with mock_aws():
        client = boto3.client("sagemaker", region_name="us-east-1")
        _create(client)
        health = cluster_health(client, NAME)
    assert health.status == "InService"
    by_name = {g.name: g for g in health.groups}
    assert (by_name["train"].instance_type, by_name["train"].target, by_name["train"].current) == ("ml.p4d.24xlarge", 2, 2)
    assert by_name["train"].statuses == {"Running": 2} and by_name["controller"].statuses == {"Running": 1}
    assert all(g.healthy for g in health.groups)


def test_a_group_with_a_failed_node_is_not_healthy() -> None:
    from fmcluster.aws.hyperpod import GroupHealth

    assert not GroupHealth("train", "ml.p5.48xlarge", 2, 2, {"Running": 1, "Failure": 1}).healthy
    assert not GroupHealth("train", "ml.p5.48xlarge", 2, 1, {"Running": 1}).healthy
    assert GroupHealth("train", "ml.p5.48xlarge", 2, 2, {"Running": 2}).healthy


def test_a_missing_cluster_is_an_error_not_a_traceback() -> None:
    with mock_aws():
        with pytest.raises(HyperPodError, match="cannot read HyperPod cluster nope"):
            cluster_health(boto3.client("sagemaker", region_name="us-east-1"), "nope")


def test_status_prints_each_group(tmp_path: Path) -> None:
    (tmp_path / "demo.yaml").write_text(PROJECT)
    with mock_aws():
        _create(boto3.client("sagemaker", region_name="us-east-1"))
        result = CliRunner().invoke(app, ["hyperpod", "status", str(tmp_path / "demo.yaml")])
    lines = result.output.splitlines()
    assert lines[0] == f"cluster {NAME}: InService"  # the name the stack resolved, not one guessed offline
    train = next(line for line in lines if " train " in line)
    assert "ml.p4d.24xlarge" in train and "2/2" in train
    assert "ok train" in train and "2 Running" in train
    assert result.exit_code == 0  # moto reports every node Running


def test_status_of_a_cluster_never_created_exits_1(tmp_path: Path) -> None:
    (tmp_path / "demo.yaml").write_text(PROJECT)
    with mock_aws():
        _deploy_stack()
        result = CliRunner().invoke(app, ["hyperpod", "status", str(tmp_path / "demo.yaml")])
    assert result.exit_code == 1 and f"cannot read HyperPod cluster {ARN}" in result.output


def test_status_before_the_stack_is_deployed_exits_1(tmp_path: Path) -> None:
    (tmp_path / "demo.yaml").write_text(PROJECT)
    with mock_aws():
        result = CliRunner().invoke(app, ["hyperpod", "status", str(tmp_path / "demo.yaml")])
    assert result.exit_code == 1 and "cannot read stack demo-cluster" in result.output


def test_status_of_a_project_without_hyperpod_exits_2(tmp_path: Path) -> None:
    (tmp_path / "demo.yaml").write_text(BASE)
    result = CliRunner().invoke(app, ["hyperpod", "status", str(tmp_path / "demo.yaml")])
    assert result.exit_code == 2 and "not 'hyperpod'" in result.output and "demo.yaml" in result.output
