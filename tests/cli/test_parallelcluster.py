"""``fmcluster parallelcluster config``: placeholders offline, real IDs from the stacks' outputs."""

from __future__ import annotations

import boto3
import pytest
import yaml
from botocore.stub import Stubber
from support import project_dict
from typer.testing import CliRunner

from fmcluster.aws import StackOutputsError
from fmcluster.aws.session import AwsSession
from fmcluster.aws.stacks import contracts_from_stacks
from fmcluster.cli import parallelcluster as cli

NETWORK = {"VpcId": "vpc-0a1b2c3d4e5f60718", "ComputeSubnetId": "subnet-0a1b2c3d4e5f60718",
           "EfaSecurityGroupId": "sg-0aaaaaaaaaaaaaaaa", "NodeSecurityGroupId": "sg-0bbbbbbbbbbbbbbbb",
           "StorageSecurityGroupId": "sg-0cccccccccccccccc"}
STORAGE = {"BucketName": "pc-data", "BucketArn": "arn:aws:s3:::pc-data", "FileSystemId": "fs-0123456789abcdef0",
           "FileSystemDnsName": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com", "FileSystemMountName": "abcdefgh",
           "FileSystemMountPath": "/fsx", "FileSystemEfaEnabled": "true"}
CLUSTER = {"BootstrapEntryUri": "s3://cdk-assets/abc/on-node-configured.sh",
           "BootstrapBundlesUri": "s3://cdk-assets/def/bundles.zip",
           "ParallelClusterNodePolicyArn": "arn:aws:iam::123456789012:policy/parallelcluster-pc-nodes"}


def _stack(name: str, outputs: dict[str, str]) -> dict:
    return {"Stacks": [{"StackName": name, "CreationTime": "2026-01-01T00:00:00Z", "StackStatus": "CREATE_COMPLETE",
                        "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in outputs.items()]}]}


def _stubbed(*stacks: tuple[str, dict[str, str] | None]):
    client = boto3.client("cloudformation", region_name="us-east-1")
    stubber = Stubber(client)
    for name, outputs in stacks:
        if outputs is None:
            stubber.add_client_error("describe_stacks", "ValidationError", f"Stack with id {name} does not exist",
                                     expected_params={"StackName": name})
        else:
            stubber.add_response("describe_stacks", _stack(name, outputs), {"StackName": name})
    stubber.activate()
    return client, stubber


def test_contracts_come_from_the_three_stacks_outputs():
    client, stubber = _stubbed(("pc-network", NETWORK), ("pc-storage", STORAGE), ("pc-cluster", CLUSTER))
    network, storage, uri, args, policy = contracts_from_stacks(client, "pc")
    assert args == [CLUSTER["BootstrapBundlesUri"]]
    stubber.assert_no_pending_responses()
    assert network.compute_subnet_id == "subnet-0a1b2c3d4e5f60718"
    assert network.efa_security_group_id == "sg-0aaaaaaaaaaaaaaaa"
    assert storage.fsx is not None and storage.fsx.file_system_id == "fs-0123456789abcdef0" and storage.fsx.efa_enabled
    assert (uri, policy) == (CLUSTER["BootstrapEntryUri"], CLUSTER["ParallelClusterNodePolicyArn"])


def test_storage_without_a_file_system_has_no_mount():
    client, _ = _stubbed(("pc-network", NETWORK), ("pc-storage", {"BucketName": "b", "BucketArn": "arn:aws:s3:::b"}),
                         ("pc-cluster", CLUSTER))
    assert contracts_from_stacks(client, "pc")[1].fsx is None


def test_a_missing_stack_or_output_says_what_to_deploy():
    client, _ = _stubbed(("pc-network", None))
    with pytest.raises(StackOutputsError, match="npx cdk deploy pc-network"):
        contracts_from_stacks(client, "pc")
    client, _ = _stubbed(("pc-network", {k: v for k, v in NETWORK.items() if k != "ComputeSubnetId"}))
    with pytest.raises(StackOutputsError, match="pc-network has no output ComputeSubnetId"):
        contracts_from_stacks(client, "pc")


@pytest.fixture
def project_file(tmp_path):
    path = tmp_path / "pc.yaml"
    path.write_text(yaml.safe_dump(project_dict(region="us-east-1")), encoding="utf-8")
    return path


def test_config_offline_writes_placeholders(project_file, tmp_path):
    out = tmp_path / "cluster.yaml"
    result = CliRunner().invoke(cli.app, ["config", str(project_file), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert text.startswith("# ParallelCluster 3.16.1 configuration") and "placeholders" in text.splitlines()[1]
    data = yaml.safe_load(text)
    assert data["HeadNode"]["Networking"]["SubnetId"] == "subnet-00000000000000000"
    assert data["Region"] == "us-east-1"


def test_config_from_stacks_writes_real_ids(project_file, tmp_path, monkeypatch):
    client, stubber = _stubbed(("pc-network", NETWORK), ("pc-storage", STORAGE), ("pc-cluster", CLUSTER))
    monkeypatch.setattr(AwsSession, "client", lambda *a, **k: client)
    out = tmp_path / "cluster.yaml"
    result = CliRunner().invoke(cli.app, ["config", str(project_file), "--out", str(out), "--from-stacks"])
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(out.read_text())
    assert data["HeadNode"]["Networking"]["SubnetId"] == "subnet-0a1b2c3d4e5f60718"
    assert data["SharedStorage"][0]["FsxLustreSettings"]["FileSystemId"] == "fs-0123456789abcdef0"
    assert data["Scheduling"]["SlurmQueues"][0]["CustomActions"]["OnNodeConfigured"] == \
        {"Script": CLUSTER["BootstrapEntryUri"], "Args": [CLUSTER["BootstrapBundlesUri"]]}
    assert {"Policy": CLUSTER["ParallelClusterNodePolicyArn"]} in data["HeadNode"]["Iam"]["AdditionalIamPolicies"]
    stubber.assert_no_pending_responses()


def test_config_refuses_other_orchestrators_with_file_and_line(tmp_path):
    path = tmp_path / "pc.yaml"
    path.write_text(yaml.safe_dump(project_dict(orchestrator={"type": "none"}), sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(cli.app, ["config", str(path), "--out", str(tmp_path / "c.yaml")])
    assert result.exit_code == 2
    assert f"{path}:" in result.output and "orchestrator.type" in result.output


def test_config_reports_parallelcluster_check_errors_with_lines(tmp_path):
    path = tmp_path / "pc.yaml"
    data = project_dict(orchestrator={"type": "parallelcluster", "parallelcluster": {"queues": {"Bad_Q": ["train"]}}})
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(cli.app, ["config", str(path), "--out", str(tmp_path / "c.yaml")])
    assert result.exit_code == 2
    assert "orchestrator.parallelcluster.queues.Bad_Q" in result.output and f"{path}:" in result.output
    assert not (tmp_path / "c.yaml").exists()


def test_existing_storage_needs_no_storage_stack(tmp_path, monkeypatch):
    from support import ROOT

    client, stubber = _stubbed(("p5e-existing-vpc-network", NETWORK), ("p5e-existing-vpc-cluster", CLUSTER))
    monkeypatch.setattr(AwsSession, "client", lambda *a, **k: client)
    source = (ROOT / "examples" / "p5e-existing-vpc.yaml").read_text() + "orchestrator: {type: parallelcluster}\n"
    (tmp_path / "p5e-existing-vpc.yaml").write_text(source)
    out = tmp_path / "cluster.yaml"
    result = CliRunner().invoke(cli.app, ["config", str(tmp_path / "p5e-existing-vpc.yaml"), "--out", str(out),
                                          "--from-stacks"])
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(out.read_text())
    assert data["SharedStorage"][0]["FsxLustreSettings"]["FileSystemId"] == "fs-0123456789abcdef0"
    stubber.assert_no_pending_responses()


def test_a_cluster_cdk_deploy_creates_is_never_offered_to_create_cluster(tmp_path):
    """The default (create_cluster: true): the header and the command say describe/update, never create-cluster."""
    from support import ROOT

    out = tmp_path / "cluster.yaml"
    result = CliRunner().invoke(cli.app, ["config", str(ROOT / "projects" / "default.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    header = [line for line in out.read_text().splitlines() if line.startswith("#")]
    text = "\n".join(header)
    assert "pcluster create-cluster --cluster-name" not in text and "do not run pcluster create-cluster" in text
    assert "pcluster describe-cluster --cluster-name default-slurm" in text
    assert f"pcluster update-cluster --cluster-name default-slurm --cluster-configuration {out} --dryrun true" in text
    assert "stack default-cluster" in text
    assert f"wrote {out.resolve()}" in result.stdout and "create-cluster --" not in result.stdout


def test_a_cluster_only_written_for_pcluster_says_create_cluster(tmp_path):
    path = tmp_path / "pc.yaml"
    data = project_dict(orchestrator={"type": "parallelcluster", "parallelcluster": {"create_cluster": False}})
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    out = tmp_path / "c.yaml"
    result = CliRunner().invoke(cli.app, ["config", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"# Create: pcluster create-cluster --cluster-name {data['name']}-slurm --cluster-configuration {out}" \
        in out.read_text()


def test_dash_writes_to_stdout_and_no_file(tmp_path, monkeypatch):
    from support import ROOT

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli.app, ["config", str(ROOT / "projects" / "default.yaml"), "--out", "-"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# ParallelCluster ") and yaml.safe_load(result.stdout)["HeadNode"]
    assert list(tmp_path.iterdir()) == []


def test_dash_o_is_a_format_everywhere_so_config_refuses_it_and_writes_under_out(tmp_path, monkeypatch) -> None:
    """`-o` is an output format in every command; the file is `--out`, by default out/PROJECT/cluster.yaml."""
    from support import ROOT

    refused = CliRunner().invoke(cli.app, ["config", str(ROOT / "projects" / "default.yaml"), "-o", "-"])
    assert refused.exit_code == 2
    monkeypatch.chdir(tmp_path)
    written = CliRunner().invoke(cli.app, ["config", str(ROOT / "projects" / "default.yaml")])
    assert written.exit_code == 0, written.output
    assert (tmp_path / "out" / "default" / "cluster.yaml").is_file() and not (tmp_path / "cluster.yaml").exists()
