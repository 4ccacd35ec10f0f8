"""``destroy``, ``status`` and ``connect`` need only the project's name and Region: with the project file deleted, or
one that no longer validates (a half-edited file, a stricter release), they read the deployed stacks by name
(moto in process, the project deployed as in ``tests/aws/test_destroy.py``) and say in one line what they did not
use. Nothing is synthesized."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from support import BASE, ROOT
from typer.testing import CliRunner

from fmcluster.cli import app

REGION = "us-east-1"
RETAIN = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}


@pytest.fixture
def moto(monkeypatch: pytest.MonkeyPatch):
    spec = importlib.util.spec_from_file_location("moto_teardown", ROOT / "tests" / "rehearsal" / "moto_teardown.py")
    patch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(patch)
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")  # no profile Region: only the file or --region gives one
    with mock_aws():
        patch.install(monkeypatch.setattr)
        yield


def _stack(name: str, resources: dict, outputs: dict | None = None, protect: bool = False) -> None:
    body = {"Resources": resources, "Outputs": outputs or {}}
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName=name, TemplateBody=json.dumps(body), EnableTerminationProtection=protect,
        Tags=[{"Key": "fmcluster:project", "Value": name.rsplit("-", 1)[0]}])  # as stacks/app.py tags every stack


def _deploy() -> None:
    _stack("demo-network", {"Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}}},
           {"VpcId": {"Value": {"Ref": "Vpc"}, "Export": {"Name": "demo-VpcId"}}})
    _stack("demo-storage", {"Data": {"Type": "AWS::S3::Bucket", **RETAIN, "Properties": {"BucketName": "demo-data"}}},
           protect=True)
    _stack("demo-cluster", {"Nodes": {"Type": "AWS::EC2::SecurityGroup", "Properties": {
        "GroupDescription": "nodes", "VpcId": {"Fn::ImportValue": "demo-VpcId"}}}}, protect=True)


def _stacks() -> set[str]:
    return {s["StackName"] for s in boto3.client("cloudformation", region_name=REGION).describe_stacks()["Stacks"]}


INVALID = {
    "count 0": BASE.replace("count: 2", "count: 0") + f"region: {REGION}\n",
    "a mistyped instance type": BASE.replace("p5.48xlarge", "p5.48xlarg") + f"region: {REGION}\n",
    "an unknown key": BASE + f"region: {REGION}\nfuture_setting: true\n",
    "not YAML": "name: demo\nregion: [unclosed\n",
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_destroy_dry_run_of_a_deployed_project_works_with_an_invalid_project_file(moto, tmp_path: Path, case):
    _deploy()
    file = tmp_path / "demo.yaml"
    file.write_text(INVALID[case])
    args = ["destroy", str(file), "--dry-run"] + (["--region", REGION] if case == "not YAML" else [])
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"{file} does not validate (" in result.output
    assert "destroy reads the deployed stacks of demo by name" in result.output
    assert "demo-storage  CREATE_COMPLETE (termination protection on: lifted first)" in result.output
    assert "AWS::S3::Bucket  demo-data" in result.output
    assert "Traceback" not in result.output
    assert _stacks() == {"demo-network", "demo-storage", "demo-cluster"}


def test_destroy_dry_run_works_with_the_project_file_deleted(moto, tmp_path: Path, monkeypatch):
    _deploy()
    monkeypatch.chdir(tmp_path)  # projects/demo.yaml: not there
    result = CliRunner().invoke(app, ["destroy", "demo", "--dry-run", "--region", REGION, "-o", "json"])
    assert result.exit_code == 0, result.output
    assert "no project file at projects/demo.yaml: destroy reads the deployed stacks of demo by name" in result.stderr
    data = json.loads(result.stdout)
    assert [s["name"] for s in data["stacks"]] == ["demo-cluster", "demo-storage", "demo-network"]
    assert [k["id"] for k in data["kept"]] == ["demo-data"]


def test_destroy_deletes_with_the_project_file_deleted(moto, tmp_path: Path, monkeypatch):
    _deploy()
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["destroy", "demo", "--confirm", "demo", "--region", REGION])
    assert result.exit_code == 0, result.output
    assert _stacks() == set()


def test_without_a_region_anywhere_it_says_where_it_looked(moto, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["destroy", "demo", "--dry-run"])
    assert result.exit_code == 2, result.output
    assert "no AWS Region" in result.output and "--region" in result.output
    assert "Traceback" not in result.output


def test_delete_retained_lists_each_resource_with_its_size_cost_and_the_destroy_that_kept_it(moto, tmp_path: Path):
    """What --delete-retained would delete, one line each: type, name, size or state, monthly cost, and which destroy
    kept it: data an earlier destroy kept is said so, not swept in on a count."""
    _stack("demo-storage", {"Data": {"Type": "AWS::S3::Bucket", **RETAIN, "Properties": {"BucketName": "demo-data"}}})
    file = tmp_path / "demo.yaml"
    file.write_text(BASE + f"region: {REGION}\n")
    first = CliRunner().invoke(app, ["destroy", str(file), "--confirm", "demo"])
    assert first.exit_code == 0, first.output
    _stack("demo-storage", {"Logs": {"Type": "AWS::Logs::LogGroup", **RETAIN,
                                     "Properties": {"LogGroupName": "demo-logs"}}})  # deployed again, new data
    result = CliRunner().invoke(app, ["destroy", str(file), "--dry-run", "--delete-retained"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "and deletes too (--delete-retained): 2 resources:" in lines
    bucket = next(line for line in lines if "AWS::S3::Bucket  demo-data" in line)
    assert "by use: $" in bucket and bucket.endswith("kept by an earlier destroy (demo-storage)")
    logs = next(line for line in lines if "AWS::Logs::LogGroup  demo-logs" in line)
    assert logs.endswith("kept by this destroy (demo-storage)")
    data = json.loads(CliRunner().invoke(app, ["destroy", str(file), "--dry-run", "-o", "json"]).stdout)
    assert {k["id"]: k["kept_by"] for k in data["kept"]} == {"demo-logs": "this destroy (demo-storage)",
                                                              "demo-data": "an earlier destroy (demo-storage)"}


def test_an_earlier_destroy_is_named_by_its_date() -> None:
    """CloudFormation's ListStacks gives a deleted stack's DeletionTime (moto leaves it out)."""
    from fmcluster.aws.destroy import kept_by
    from fmcluster.aws.teardown import DeployedStack

    gone = DeployedStack("demo-storage", "arn:1", "DELETE_COMPLETE", False, deleted_at="2026-11-30T12:00:00+00:00")
    assert kept_by(gone) == "an earlier destroy (demo-storage, deleted 2026-11-30)"
    assert kept_by(DeployedStack("demo-storage", "arn:2", "CREATE_COMPLETE", True)) == "this destroy (demo-storage)"


def test_without_a_name_to_read_the_stacks_by_it_says_how_to_give_one(moto, tmp_path: Path):
    file = tmp_path / "Not A Name.yaml"
    file.write_text("compute_groups: [\n")
    result = CliRunner().invoke(app, ["destroy", str(file), "--dry-run", "--region", REGION])
    assert result.exit_code == 2, result.output
    assert "destroy needs the project's name: give the name its stacks carry (NAME-network, ...)" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("tags", [[], [{"Key": "fmcluster:project", "Value": "other"}]])
def test_a_stack_fmcluster_did_not_deploy_for_the_project_is_never_deleted(moto, tmp_path: Path, monkeypatch, tags):
    """The stacks are read by name, and a name can be mistyped or taken: a stack without the project's tag
    (``fmcluster:project=NAME``, on every stack fmcluster deploys) stops destroy before anything is deleted."""
    _deploy()
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName="demo-observability", TemplateBody=json.dumps({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}),
        Tags=tags)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["destroy", "demo", "--confirm", "demo", "--region", REGION])
    assert result.exit_code == 2, result.output
    said = "(no fmcluster:project tag)" if not tags else "(fmcluster:project=other)"
    assert f"error: demo-observability {said}: not deployed by fmcluster for demo" in result.output
    assert "nothing deleted" in result.output
    assert _stacks() == {"demo-network", "demo-storage", "demo-cluster", "demo-observability"}


def test_the_project_tag_is_read_from_the_stack_or_its_resources() -> None:
    """CDK deploys fmcluster's stacks untagged and tags their resources (stacks/app.py's Tags.of(stack)): either says."""
    from fmcluster.aws.teardown import DeployedStack, project_tag

    def stack(template: dict, tags: dict | None = None) -> DeployedStack:
        return DeployedStack("demo-network", "arn:1", "CREATE_COMPLETE", False, template=template, tags=tags or {})

    untagged = {"Type": "AWS::EC2::Subnet", "Properties": {"CidrBlock": "10.0.0.0/24"}}
    listed = {"Type": "AWS::EC2::VPC", "Properties": {"Tags": [{"Key": "fmcluster:project", "Value": "demo"}]}}
    mapped = {"Type": "AWS::SageMaker::Cluster", "Properties": {"Tags": {"fmcluster:project": "demo"}}}
    assert project_tag(stack({"Resources": {"A": untagged, "B": listed}})) == "demo"
    assert project_tag(stack({"Resources": {"A": untagged, "B": mapped}})) == "demo"
    assert project_tag(stack({"Resources": {"A": untagged}}, {"fmcluster:project": "other"})) == "other"
    assert project_tag(stack({"Resources": {"A": untagged}})) is None


def test_an_empty_stack_is_not_judged_by_its_tags() -> None:
    """A change set never executed (REVIEW_IN_PROGRESS) leaves a stack with no template and no resources: there is
    nothing to tag, and deleting it deletes nothing (the rehearsal's ParallelCluster cluster stack is one)."""
    from fmcluster.aws.destroy import Teardown
    from fmcluster.aws.teardown import DeployedStack

    empty = DeployedStack("demo-cluster", "arn:1", "REVIEW_IN_PROGRESS", False)
    full = DeployedStack("demo-network", "arn:2", "CREATE_COMPLETE", False,
                         template={"Resources": {"Vpc": {"Type": "AWS::EC2::VPC", "Properties": {}}}})
    assert [s.name for s in Teardown("demo", REGION, [empty, full], []).foreign()] == ["demo-network"]
