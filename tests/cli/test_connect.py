"""``fmcluster connect PROJECT [--node ...]``: the exact ``aws ssm start-session`` line for each orchestrator's head,
controller, login or compute node, from moto's CloudFormation and EC2 (the instances tagged as ParallelCluster, PCS
and fmcluster's launch templates tag them) and a stubbed SageMaker ``ListClusterNodes``; the session itself is the
AWS CLI's, run in fmcluster's place."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from support import BASE
from typer.testing import CliRunner

from fmcluster.aws import connect as aws_connect
from fmcluster.aws.session import AwsSession
from fmcluster.cli import app

runner = CliRunner()


def deploy(outputs: dict[str, str]) -> None:
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                "Outputs": {k: {"Value": v} for k, v in outputs.items()}}
    boto3.client("cloudformation", region_name="us-east-1").create_stack(StackName="demo-cluster",
                                                                         TemplateBody=json.dumps(template))


def launch(tags: dict[str, str], state: str = "running") -> str:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    [made] = ec2.run_instances(ImageId="ami-0123456789abcdef0", MinCount=1, MaxCount=1, InstanceType="m6i.xlarge",
                               TagSpecifications=[{"ResourceType": "instance",
                                                   "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
                               )["Instances"]
    if state == "stopped":
        ec2.stop_instances(InstanceIds=[made["InstanceId"]])
    return made["InstanceId"]


def project(tmp_path: Path, orchestrator: str) -> str:
    os_line = "os: ubuntu-24.04\n" if "type: pcs" in orchestrator else ""  # the systems PCS images are built on
    (tmp_path / "demo.yaml").write_text(BASE + f"region: us-east-1\n{os_line}orchestrator: {orchestrator}\n")
    return str(tmp_path / "demo.yaml")


def connect(path: str, *args: str):
    return runner.invoke(app, ["connect", path, "--print", *args])


def line(target: str) -> str:
    return f"aws ssm start-session --target {target} --region us-east-1"


PC = "{type: parallelcluster, parallelcluster: {login_nodes: {count: 1}}}"


def test_parallelcluster_head_and_login_nodes_by_their_tags(tmp_path: Path) -> None:
    path = project(tmp_path, PC)
    cluster = {"parallelcluster:cluster-name": "demo-slurm"}
    with mock_aws():
        deploy({"ParallelClusterName": "demo-slurm"})
        launch({**cluster, "parallelcluster:node-type": "HeadNode"}, state="stopped")  # an old head node, stopped
        head = launch({**cluster, "parallelcluster:node-type": "HeadNode"})
        login = launch({**cluster, "parallelcluster:node-type": "LoginNode"})
        launch({"parallelcluster:cluster-name": "other", "parallelcluster:node-type": "HeadNode"})
        default, logins = connect(path), connect(path, "--node", "login")
    assert default.exit_code == 0 and default.stdout.splitlines() == [line(head)]
    assert logins.exit_code == 0 and logins.stdout.splitlines() == [line(login)]


def test_parallelcluster_without_login_nodes_is_bad_input(tmp_path: Path) -> None:
    result = connect(project(tmp_path, "{type: parallelcluster}"), "--node", "login")
    assert result.exit_code == 2 and "has no login nodes (orchestrator.parallelcluster.login_nodes)" in result.stderr


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch):
    """Clients of the session: a stubbed one where given, moto's otherwise."""
    overrides: dict[str, object] = {}
    real = AwsSession.client
    monkeypatch.setattr(AwsSession, "client", lambda self, service, region=None: overrides.get(service) or
                        real(self, service, region))
    return overrides


ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdef123456"


def test_hyperpod_controller_and_login_as_sagemaker_cluster_targets(tmp_path: Path, stubbed: dict) -> None:
    path = project(tmp_path, "{type: hyperpod, hyperpod: {login: {count: 2}}}")
    sagemaker = boto3.client("sagemaker", region_name="us-east-1")
    stubbed["sagemaker"] = sagemaker

    def nodes(group: str, *members: tuple[str, str]) -> None:
        stubber.add_response("list_cluster_nodes", {"ClusterNodeSummaries": [
            {"InstanceGroupName": g, "InstanceId": i, "InstanceType": "ml.m5.12xlarge",
             "LaunchTime": "2026-11-30T12:00:00Z", "InstanceStatus": {"Status": s}} for g, i, s in members]},
            {"ClusterName": ARN, "InstanceGroupNameContains": group})

    with mock_aws(), Stubber(sagemaker) as stubber:
        deploy({"HyperPodClusterArn": ARN, "HyperPodClusterId": "abcdef123456"})
        nodes("controller", ("controller", "i-0aaaaaaaaaaaaaaa1", "Running"))
        nodes("login", ("login", "i-0bbbbbbbbbbbbbbb1", "Pending"), ("login", "i-0bbbbbbbbbbbbbbb2", "Running"))
        controller, login = connect(path), connect(path, "--node", "login")
        stubber.assert_no_pending_responses()
    assert controller.stdout.splitlines() == [line("sagemaker-cluster:abcdef123456_controller-i-0aaaaaaaaaaaaaaa1")]
    assert login.stdout.splitlines() == [line("sagemaker-cluster:abcdef123456_login-i-0bbbbbbbbbbbbbbb2")]


def test_hyperpod_stack_before_the_id_output_takes_the_id_from_the_arn(tmp_path: Path, stubbed: dict) -> None:
    path = project(tmp_path, "{type: hyperpod}")
    sagemaker = boto3.client("sagemaker", region_name="us-east-1")
    stubbed["sagemaker"] = sagemaker
    with mock_aws(), Stubber(sagemaker) as stubber:
        deploy({"HyperPodClusterArn": ARN})
        stubber.add_response("list_cluster_nodes", {"ClusterNodeSummaries": [
            {"InstanceGroupName": "controller", "InstanceId": "i-0aaaaaaaaaaaaaaa1", "InstanceType": "ml.m5.12xlarge",
             "LaunchTime": "2026-11-30T12:00:00Z", "InstanceStatus": {"Status": "Running"}}]})
        result = connect(path, "--node", "controller")
    assert result.stdout.splitlines() == [line("sagemaker-cluster:abcdef123456_controller-i-0aaaaaaaaaaaaaaa1")]


PCS = "{type: pcs, pcs: {ami_id: ami-0123456789abcdef0}}"


def test_pcs_login_node_by_its_node_group_tag(tmp_path: Path) -> None:
    path = project(tmp_path, PCS)
    with mock_aws():
        deploy({"PcsClusterId": "pcs_abc", "PcsLoginNodeGroupId": "pcs_login"})
        launch({"aws:pcs:compute-node-group-id": "pcs_train"})
        login = launch({"aws:pcs:compute-node-group-id": "pcs_login"})
        result = connect(path)
    assert result.exit_code == 0 and result.stdout.splitlines() == [line(login)]


def test_pcs_stack_without_the_login_output_finds_the_group_by_name(tmp_path: Path, stubbed: dict) -> None:
    path = project(tmp_path, PCS)
    pcs = boto3.client("pcs", region_name="us-east-1")
    stubbed["pcs"] = pcs
    with mock_aws(), Stubber(pcs) as stubber:
        deploy({"PcsClusterId": "pcs_abc"})
        stubber.add_response("list_compute_node_groups", {"computeNodeGroups": [
            {"name": n, "id": i, "arn": f"arn:aws:pcs:us-east-1:1:computenodegroup/{i}", "clusterId": "pcs_abc",
             "createdAt": "2026-11-30T12:00:00Z", "modifiedAt": "2026-11-30T12:00:00Z", "status": "ACTIVE"}
            for n, i in (("train", "pcs_train"), ("login", "pcs_login"))]}, {"clusterIdentifier": "pcs_abc"})
        login = launch({"aws:pcs:compute-node-group-id": "pcs_login"})
        result = connect(path)
    assert result.stdout.splitlines() == [line(login)]


def test_pcs_without_login_nodes_has_nothing_to_connect_to(tmp_path: Path) -> None:
    result = connect(project(tmp_path, "{type: pcs, pcs: {ami_id: ami-0123456789abcdef0, login: null}}"))
    assert result.exit_code == 2 and "AWS runs the controller: there is no node to connect to" in result.stderr


def test_self_managed_compute_node_of_a_group(tmp_path: Path) -> None:
    path = project(tmp_path, "{type: none}")
    with mock_aws():
        deploy({})
        node = launch({"fmcluster:project": "demo", "fmcluster:group": "train"})
        launch({"fmcluster:project": "other", "fmcluster:group": "train"})
        result, unknown = connect(path), connect(path, "--node", "compute", "--group", "eval")
    assert result.stdout.splitlines() == [line(node)]
    assert unknown.exit_code == 2 and "has no compute group 'eval'; its groups: train" in unknown.stderr


def test_a_node_the_orchestrator_has_not_is_bad_input_from_its_traits(tmp_path: Path) -> None:
    result = connect(project(tmp_path, PCS), "--node", "head")
    assert result.exit_code == 2 and result.stderr.splitlines()[-1] == \
        "error: --node head: pcs clusters have login (hint: --node login)"


def test_no_running_node_and_no_stack_exit_1(tmp_path: Path) -> None:
    path = project(tmp_path, PC)
    with mock_aws():
        missing = connect(path)
        deploy({"ParallelClusterName": "demo-slurm"})
        stopped = launch({"parallelcluster:cluster-name": "demo-slurm", "parallelcluster:node-type": "HeadNode"},
                         state="stopped")
        none_running = connect(path)
    assert missing.exit_code == 1 and "stack demo-cluster is not deployed in us-east-1" in missing.stderr
    assert none_running.exit_code == 1
    assert "no running head node of ParallelCluster cluster demo-slurm" in none_running.stderr
    assert f"{stopped} stopp" in none_running.stderr  # stopping or stopped: what it found, named


def test_without_the_plugin_it_prints_the_command_and_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = project(tmp_path, PC)
    monkeypatch.setattr(aws_connect.shutil, "which", lambda tool: "/usr/bin/aws" if tool == "aws" else None)
    with mock_aws():
        deploy({"ParallelClusterName": "demo-slurm"})
        head = launch({"parallelcluster:cluster-name": "demo-slurm", "parallelcluster:node-type": "HeadNode"})
        result = runner.invoke(app, ["connect", path])
    assert result.exit_code == 1 and result.stdout.splitlines() == [line(head)]
    assert "session-manager-plugin not found on PATH" in result.stderr and aws_connect.PLUGIN_DOCS in result.stderr


def test_with_the_plugin_the_aws_cli_takes_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = project(tmp_path, PC)
    ran: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(aws_connect.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr("fmcluster.cli.connect.os.execvp", lambda file, args: ran.append((file, args)))
    with mock_aws():
        deploy({"ParallelClusterName": "demo-slurm"})
        head = launch({"parallelcluster:cluster-name": "demo-slurm", "parallelcluster:node-type": "HeadNode"})
        result = runner.invoke(app, ["connect", path])
    assert result.exit_code == 0 and result.stdout == ""
    assert ran == [("aws", ["aws", "ssm", "start-session", "--target", head, "--region", "us-east-1"])]


def test_the_command_names_the_profile_that_signed() -> None:
    assert aws_connect.session_command("i-1", "eu-west-1", "dev") == [
        "aws", "ssm", "start-session", "--target", "i-1", "--region", "eu-west-1", "--profile", "dev"]


@pytest.mark.parametrize("os_line, user", [("", "ubuntu"), ("os: al2023\n", "ec2-user")])
def test_it_says_which_user_to_become(tmp_path: Path, os_line: str, user: str) -> None:
    """Session Manager starts the shell as ssm-user; the cluster's home and jobs are the image's default user's."""
    (tmp_path / "demo.yaml").write_text(BASE + f"region: us-east-1\n{os_line}orchestrator: {PC}\n")
    with mock_aws():
        deploy({"ParallelClusterName": "demo-slurm"})
        launch({"parallelcluster:cluster-name": "demo-slurm", "parallelcluster:node-type": "HeadNode"})
        result = connect(str(tmp_path / "demo.yaml"))
    assert result.exit_code == 0, result.output
    assert f"the session starts as ssm-user; become the cluster's user (its home, its jobs): sudo su - {user}" \
        in result.stderr


@pytest.mark.parametrize("file", ["deleted", "invalid"])
def test_without_a_usable_project_file_the_node_is_found_from_the_stack(tmp_path: Path, file: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    if file == "invalid":
        (tmp_path / "projects").mkdir()
        (tmp_path / "projects/demo.yaml").write_text(BASE.replace("count: 2", "count: 0") + "region: us-east-1\n")
    cluster = {"parallelcluster:cluster-name": "demo-slurm"}
    with mock_aws():
        deploy({"ParallelClusterName": "demo-slurm"})
        head = launch({**cluster, "parallelcluster:node-type": "HeadNode"})
        login = launch({**cluster, "parallelcluster:node-type": "LoginNode"})
        default = runner.invoke(app, ["connect", "demo", "--print", "--region", "us-east-1"])
        logins = runner.invoke(app, ["connect", "demo", "--print", "--region", "us-east-1", "--node", "login"])
    assert default.exit_code == 0, default.output
    assert default.stdout.splitlines() == [line(head)] and logins.stdout.splitlines() == [line(login)]
    said = "no project file at projects/demo.yaml" if file == "deleted" else "projects/demo.yaml does not validate"
    assert f"{said}" in default.stderr and "connect reads the deployed stacks of demo by name" in default.stderr
    assert "sudo su - ubuntu (ec2-user on Amazon Linux 2023)" in default.stderr


def test_without_a_project_file_a_hyperpod_controller_is_found_from_the_stack(tmp_path: Path, stubbed: dict,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    sagemaker = boto3.client("sagemaker", region_name="us-east-1")
    stub = Stubber(sagemaker)
    stub.add_response("list_cluster_nodes", {"ClusterNodeSummaries": [
        {"InstanceGroupName": "controller", "InstanceId": "i-0c0c0c0c0c0c0c0c0", "InstanceType": "ml.m5.2xlarge",
         "LaunchTime": "2026-11-30T12:00:00Z", "InstanceStatus": {"Status": "Running"}}]},
        {"ClusterName": ARN, "InstanceGroupNameContains": "controller"})
    stubbed["sagemaker"] = sagemaker
    with mock_aws(), stub:
        deploy({"HyperPodClusterArn": ARN, "HyperPodClusterId": "abcdef123456"})
        result = runner.invoke(app, ["connect", "demo", "--print", "--region", "us-east-1"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [line("sagemaker-cluster:abcdef123456_controller-i-0c0c0c0c0c0c0c0c0")]


def test_without_a_project_file_a_node_the_cluster_has_not_is_bad_input(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with mock_aws():
        deploy({"ParallelClusterName": "demo-slurm"})
        result = runner.invoke(app, ["connect", "demo", "--print", "--region", "us-east-1", "--node", "controller"])
    assert result.exit_code == 2 and "--node controller: a ParallelCluster cluster has head and login nodes" \
        in result.stderr
