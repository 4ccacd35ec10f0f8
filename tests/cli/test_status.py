"""``fmcluster status PROJECT``: one screen (and ``-o json``) of stacks, cluster and alerts, from moto's
CloudFormation, DynamoDB and EC2 and a loopback alert manager that takes only SigV4-signed requests."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from support import BASE
from support.alertmanager import AlertManager, alert
from typer.testing import CliRunner

from fmcluster.cli import app

PROJECT = BASE + "region: us-east-1\norchestrator: {type: parallelcluster}\n"
WORKSPACE = "ws-0123abcd-4567-89ef-0123-456789abcdef"
runner = CliRunner()


def deploy(name: str, outputs: dict[str, str] | None = None, protect: bool = False) -> None:
    template: dict = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}
    if outputs:
        template["Outputs"] = {k: {"Value": v} for k, v in outputs.items()}
    boto3.client("cloudformation", region_name="us-east-1").create_stack(
        StackName=name, TemplateBody=json.dumps(template), EnableTerminationProtection=protect)


def deployed_cluster(nodes: int = 2) -> None:
    deploy("demo-network")
    deploy("demo-storage", protect=True)
    deploy("demo-observability", {"PrometheusWorkspaceId": WORKSPACE}, protect=True)
    deploy("demo-cluster", {"ParallelClusterName": "demo-slurm"}, protect=True)
    deploy("demo-slurm")
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    ddb.create_table(TableName="parallelcluster-demo-slurm", BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": "Id", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "Id", "AttributeType": "S"}])
    ddb.put_item(TableName="parallelcluster-demo-slurm",
                 Item={"Id": {"S": "COMPUTE_FLEET"}, "Data": {"M": {"status": {"S": "RUNNING"}}}})
    ec2 = boto3.client("ec2", region_name="us-east-1")
    for kind, count in (("HeadNode", 1), ("Compute", nodes)):
        if count:
            ec2.run_instances(ImageId="ami-0123456789abcdef0", MinCount=count, MaxCount=count,
                              InstanceType="p5.48xlarge", TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                  {"Key": "parallelcluster:cluster-name", "Value": "demo-slurm"},
                                  {"Key": "parallelcluster:node-type", "Value": kind},
                                  {"Key": "parallelcluster:queue-name", "Value": "train"},
                                  {"Key": "parallelcluster:compute-resource-name", "Value": "train"}]}])


@pytest.fixture
def project(tmp_path: Path) -> str:
    (tmp_path / "demo.yaml").write_text(PROJECT)
    return str(tmp_path / "demo.yaml")


def run(project: str, answers: list, *args: str, monkeypatch: pytest.MonkeyPatch, nodes: int = 2):
    manager = AlertManager(WORKSPACE, answers)
    monkeypatch.setenv("AWS_ENDPOINT_URL_AMP", manager.url)  # the alerts only; moto answers the rest
    try:
        with mock_aws():
            deployed_cluster(nodes)
            result = runner.invoke(app, ["status", project, *args])
    finally:
        manager.close()
    return result, manager


def test_a_healthy_cluster_on_one_screen(project: str, monkeypatch: pytest.MonkeyPatch) -> None:
    result, manager = run(project, [[]], monkeypatch=monkeypatch)
    lines = result.stdout.splitlines()
    assert lines[0] == "demo in us-east-1: healthy", result.output
    network = next(line for line in lines if " demo-network " in line)
    assert network.split()[:3] == ["ok", "demo-network", "CREATE_COMPLETE"]
    assert "protected" in next(line for line in lines if " demo-storage " in line)
    assert "cluster demo-slurm: CREATE_COMPLETE" in lines
    assert any(line.split() == ["compute", "fleet", "RUNNING"] for line in lines)
    train = next(line for line in lines if line.strip().startswith("ok train "))
    assert train.split()[:6] == ["ok", "train", "p5.48xlarge", "0-2", "2", "0"]
    assert f"alerts (workspace {WORKSPACE}): 0 firing" in lines
    assert manager.requests[0]["auth"]["service"] == "aps"  # the alerts were asked, signed
    assert result.exit_code == 0
    assert max(len(line) for line in lines) <= 80


def test_firing_alerts_make_it_unhealthy_exit_1(project: str, monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = run(project, [[alert("GpuXidCritical", instance="i-0abc")]], monkeypatch=monkeypatch)
    assert result.exit_code == 1 and result.stdout.splitlines()[0] == "demo in us-east-1: NOT healthy"
    assert "  !! critical GpuXidCritical i-0abc: GpuXidCritical summary (since 2026-11-30T12:00:00.000Z)" in \
        result.stdout.splitlines()


def test_json_carries_every_section(project: str, monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = run(project, [[]], "-o", "json", monkeypatch=monkeypatch, nodes=0)
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["healthy"] is True  # on-demand: no static nodes, none running is fine
    assert [s["name"] for s in data["stacks"]] == ["demo-network", "demo-storage", "demo-observability",
                                                   "demo-cluster"]
    assert data["stacks"][1]["termination_protection"] is True
    [train] = data["cluster"]["groups"]
    assert (train["expected_min"], train["expected_max"], train["running"]) == (0, 2, 0)
    assert data["cluster"]["facts"]["compute fleet"] == "RUNNING"
    assert data["alerts"] == {"workspace_id": WORKSPACE, "firing": [], "silenced": 0, "problem": None}


def test_a_project_not_deployed_says_so_and_exits_1(project: str) -> None:
    with mock_aws():
        result = runner.invoke(app, ["status", project])
    lines = result.stdout.splitlines()
    assert result.exit_code == 1 and "cluster: not deployed (deploy it: fmcluster deploy demo --all)" in lines
    assert next(line for line in lines if "demo-network" in line).split()[:3] == ["!!", "demo-network",
                                                                                   "NOT_DEPLOYED"]
    assert "alerts: no Prometheus workspace (observability off, or its stack not deployed)" in lines


def test_a_bad_project_file_still_shows_the_stacks_and_alerts(tmp_path: Path, monkeypatch) -> None:
    """A file that no longer validates: the stacks by name and the alerts; the cluster's nodes need the file."""
    (tmp_path / "demo.yaml").write_text(PROJECT.replace("count: 2", "count: two"))
    result, _ = run(str(tmp_path / "demo.yaml"), [[]], monkeypatch=monkeypatch)
    assert result.exit_code == 1, result.output  # the nodes are not read: not known healthy
    assert "does not validate (1 error; first: " in result.stderr and "compute_groups[0].count" in result.stderr
    lines = result.stdout.splitlines()
    assert next(line for line in lines if "demo-storage" in line).split()[:3] == ["ok", "demo-storage",
                                                                                   "CREATE_COMPLETE"]
    assert any(line.startswith("cluster: !! demo-cluster is CREATE_COMPLETE; its nodes are not read: the project "
                               "file gives its orchestrator") for line in lines), lines
    assert f"alerts (workspace {WORKSPACE}): 0 firing" in lines


def test_hyperpod_status_through_the_same_command(tmp_path: Path) -> None:
    """The cluster part is the orchestrator's (here HyperPod's DescribeCluster and ListClusterNodes); the command and
    the stacks part are the same."""
    (tmp_path / "hp.yaml").write_text(BASE.replace("p5.48xlarge", "p4d.24xlarge")
                                      + "region: us-east-1\norchestrator: {type: hyperpod}\n"
                                      "observability: {prometheus: false, grafana: {enabled: false}}\n")
    with mock_aws():
        sagemaker = boto3.client("sagemaker", region_name="us-east-1")
        made = sagemaker.create_cluster(ClusterName="demo-hyperpod-0123456789abcdef0", InstanceGroups=[
            {"InstanceGroupName": g, "InstanceType": t, "InstanceCount": n, "ThreadsPerCore": 1,
             "ExecutionRole": "arn:aws:iam::123456789012:role/exec",
             "LifeCycleConfig": {"SourceS3Uri": f"s3://sagemaker-demo/lifecycle/{g}/", "OnCreate": "bootstrap.sh"}}
            for g, t, n in (("controller", "ml.m5.12xlarge", 1), ("train", "ml.p4d.24xlarge", 2))],
            VpcConfig={"SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-0123456789abcdef0"]})
        for stack in ("network", "storage"):
            deploy(f"demo-{stack}")
        deploy("demo-cluster", {"HyperPodClusterArn": made["ClusterArn"]}, protect=True)
        result = runner.invoke(app, ["status", str(tmp_path / "hp.yaml"), "-o", "json"])
    data = json.loads(result.stdout)
    assert [s["name"] for s in data["stacks"]] == ["demo-network", "demo-storage", "demo-cluster"]
    assert (data["cluster"]["state"], data["cluster"]["orchestrator"]) == ("InService", "hyperpod")
    assert [(g["name"], g["running"], g["expected_max"]) for g in data["cluster"]["groups"]] == [("train", 2, 2)]
    assert data["alerts"] is None and result.exit_code == 0
