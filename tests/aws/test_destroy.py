"""``fmcluster destroy``'s logic against moto in process (CloudFormation with termination protection as AWS has it:
``tests/rehearsal/moto_teardown.py``), and botocore's Stubber where moto cannot fail as CloudFormation does."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import boto3
import jmespath
import pytest
from botocore.stub import Stubber
from support import BASE
from typer.testing import CliRunner

from fmcluster.aws import destroy as api
from fmcluster.aws.kept import BUCKET_VERSIONS_QUERY, Kept, describe
from fmcluster.aws.session import aws_session
from fmcluster.aws.teardown import DeployedStack, delete_order, in_network
from fmcluster.cli import app

REGION = "us-east-1"


def _stack(name: str, resources: dict, outputs: dict | None = None, protect: bool = False) -> None:
    body = {"Resources": resources, "Outputs": outputs or {}}
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName=name, TemplateBody=json.dumps(body), EnableTerminationProtection=protect,
        Tags=[{"Key": "fmcluster:project", "Value": name.rsplit("-", 1)[0]}])  # as stacks/app.py tags every stack


RETAIN = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}


def _deploy() -> None:
    """A small project as fmcluster's stacks shape it: a network that exports its VPC, a protected storage stack with a
    retained bucket and log group, a protected accounting stack whose retained security group sits in the network's
    VPC, and a protected cluster stack that reads the network."""
    _stack("demo-network", {
        "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}},
        "FlowLogs": {"Type": "AWS::Logs::LogGroup", **RETAIN, "Properties": {"LogGroupName": "demo-flow"}}},
        {"VpcId": {"Value": {"Ref": "Vpc"}, "Export": {"Name": "demo-VpcId"}}})
    _stack("demo-storage", {
        "Data": {"Type": "AWS::S3::Bucket", **RETAIN, "Properties": {
            "BucketName": "demo-data", "VersioningConfiguration": {"Status": "Enabled"}}},
        "Scratch": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "demo-scratch"}}}, protect=True)
    boto3.client("s3", region_name=REGION).put_bucket_versioning(  # moto's CloudFormation leaves it unversioned
        Bucket="demo-data", VersioningConfiguration={"Status": "Enabled"})
    _stack("demo-accounting", {
        "DatabaseSecurityGroup": {"Type": "AWS::EC2::SecurityGroup", **RETAIN, "Properties": {
            "GroupDescription": "db", "VpcId": {"Fn::ImportValue": "demo-VpcId"}}}}, protect=True)
    _stack("demo-cluster", {
        "Nodes": {"Type": "AWS::EC2::SecurityGroup", "Properties": {
            "GroupDescription": "nodes", "VpcId": {"Fn::ImportValue": "demo-VpcId"}}}}, protect=True)


def _status() -> dict[str, str]:
    cfn = boto3.client("cloudformation", region_name=REGION)
    return {s["StackName"]: s["StackStatus"] for s in cfn.describe_stacks()["Stacks"]}


def test_moto_refuses_a_protected_stack_as_cloudformation_does(moto) -> None:
    _deploy()
    cfn = boto3.client("cloudformation", region_name=REGION)
    with pytest.raises(cfn.exceptions.ClientError, match=r"Stack \[demo-storage\] cannot be deleted while "
                                                         "TerminationProtection is enabled"):
        cfn.delete_stack(StackName="demo-storage")
    assert cfn.describe_stacks(StackName="demo-storage")["Stacks"][0]["EnableTerminationProtection"] is True


def test_destroy_lifts_protection_deletes_readers_first_and_keeps_the_network_under_a_kept_group(moto) -> None:
    _deploy()
    session = aws_session(region=REGION, command="destroy")
    said: list[str] = []
    teardown = api.read(session, "demo")
    assert [s.name for s in teardown.stacks] == ["demo-cluster", "demo-accounting", "demo-storage", "demo-network"]
    out = api.destroy(session, teardown, progress=said.append, every_s=0)
    assert out.deleted == ["demo-cluster", "demo-accounting", "demo-storage"]
    assert out.lifted == ["demo-cluster", "demo-accounting", "demo-storage"]
    assert set(_status()) == {"demo-network"}
    group = next(k for k in out.kept if k.type == "AWS::EC2::SecurityGroup")
    assert group.in_network and group.physical_id in out.network_kept
    assert {(k.type, k.physical_id) for k in out.kept} >= {("AWS::S3::Bucket", "demo-data"),
                                                           ("AWS::Logs::LogGroup", "demo-flow")}
    assert not any(k.physical_id == "demo-scratch" for k in out.kept)  # not retained: deleted with its stack
    assert group.commands == [f"aws ec2 delete-security-group --group-id {group.physical_id} --region {REGION}"]
    assert "demo-storage: termination protection lifted" in said and "demo-storage: DELETE_COMPLETE (0 min)" in said

    # the user deletes the group as told; a second destroy finds what the deleted stacks kept and takes the network
    boto3.client("ec2", region_name=REGION).delete_security_group(GroupId=group.physical_id)
    again = api.read(session, "demo")
    assert [s.name for s in again.stacks] == ["demo-network"]
    out = api.destroy(session, again, progress=said.append, every_s=0)
    assert out.deleted == ["demo-network"] and not out.network_kept and _status() == {}
    assert sorted(k.physical_id for k in out.kept) == ["demo-data", "demo-flow"]


def test_delete_retained_empties_and_deletes_what_was_kept(moto) -> None:
    _deploy()
    s3 = boto3.client("s3", region_name=REGION)
    for body in (b"one", b"two"):
        s3.put_object(Bucket="demo-data", Key="ckpt/step-1.pt", Body=body)
    s3.delete_object(Bucket="demo-data", Key="ckpt/step-1.pt")  # a delete marker on top of two versions
    session = aws_session(region=REGION, command="destroy")
    out = api.destroy(session, api.read(session, "demo"), delete_retained=True, progress=lambda _: None, every_s=0)
    assert out.deleted[-1] == "demo-network" and _status() == {}
    assert out.kept == [] and len(out.deleted_retained) == 3
    assert "demo-data" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


def test_the_printed_bucket_query_selects_every_version_and_marker(moto) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="demo-versions")
    s3.put_bucket_versioning(Bucket="demo-versions", VersioningConfiguration={"Status": "Enabled"})
    for body in (b"1", b"2"):
        s3.put_object(Bucket="demo-versions", Key="k", Body=body)
    s3.delete_object(Bucket="demo-versions", Key="k")
    listed = s3.list_object_versions(Bucket="demo-versions")
    objects = jmespath.search(BUCKET_VERSIONS_QUERY, listed)["Objects"]
    assert len(objects) == 3 and all(set(o) == {"Key", "VersionId"} for o in objects)
    s3.delete_objects(Bucket="demo-versions", Delete={"Objects": objects})
    s3.delete_bucket(Bucket="demo-versions")  # empty: every version and marker went


def test_an_aurora_writer_is_priced_at_its_floor_and_the_cluster_deleted_after_a_final_snapshot(moto) -> None:
    rds = boto3.client("rds", region_name=REGION)
    rds.create_db_cluster(DBClusterIdentifier="acct", Engine="aurora-mysql", MasterUsername="slurm_admin",
                          MasterUserPassword="x" * 16, DeletionProtection=True,
                          ServerlessV2ScalingConfiguration={"MinCapacity": 0.5, "MaxCapacity": 2})
    rds.create_db_instance(DBInstanceIdentifier="writer", DBClusterIdentifier="acct", Engine="aurora-mysql",
                           DBInstanceClass="db.serverless")
    session = aws_session(region=REGION, command="destroy")
    writer = Kept("demo-accounting", "Writer", "AWS::RDS::DBInstance", "writer", region=REGION)
    cluster = Kept("demo-accounting", "Cluster", "AWS::RDS::DBCluster", "acct", region=REGION)
    assert describe(session, writer) and describe(session, cluster)
    assert writer.monthly_usd == pytest.approx(0.5 * 0.12 * 730)  # the table's ACU-hour price, 730 hours
    assert "at least" in writer.cost and cluster.cost.startswith("by use")
    assert cluster.commands[0].startswith("aws rds modify-db-cluster --db-cluster-identifier acct "
                                          "--no-deletion-protection")
    out = api.Outcome()
    for k in (writer, cluster):
        from fmcluster.aws.kept import delete, poll

        left = delete(session, k, lambda what, done: poll(what, done, timeout_s=5, every_s=0, progress=print))
        out.left.append(left)
    assert rds.describe_db_clusters()["DBClusters"] == []
    assert [s["DBClusterSnapshotIdentifier"] for s in rds.describe_db_cluster_snapshots()["DBClusterSnapshots"]
            if s["SnapshotType"] == "manual"] == ["acct-final"]
    assert "acct-final" in out.left[1]


def test_delete_order_follows_the_references_not_the_names() -> None:
    def stack(name: str, resources: dict, exports: tuple[str, ...] = ()) -> DeployedStack:
        outputs = {e: {"Value": "x", "Export": {"Name": e}} for e in exports}
        return DeployedStack(name, name, "CREATE_COMPLETE", False, {"Resources": resources, "Outputs": outputs})

    # the deploy order alone would delete observability before storage; here storage reads observability
    reader = {"R": {"Type": "T", "Properties": {"X": {"Fn::GetStackOutput": {"StackName": "p-observability",
                                                                            "OutputName": "O"}}}}}
    stacks = [stack("p-network", {}, ("p-VpcId",)), stack("p-observability", {}), stack("p-storage", reader),
              stack("p-cluster", {"R": {"Type": "T", "Properties": {"V": {"Fn::ImportValue": "p-VpcId"}}}})]
    assert [s.name for s in delete_order(stacks)] == ["p-cluster", "p-storage", "p-observability", "p-network"]
    cycle = [stack("p-a", {"R": {"Type": "T", "Properties": {"V": {"Fn::ImportValue": "b"}}}}, ("a",)),
             stack("p-b", {"R": {"Type": "T", "Properties": {"V": {"Fn::ImportValue": "a"}}}}, ("b",))]
    with pytest.raises(ValueError, match="cycle"):
        delete_order(cycle)


def test_the_database_lives_in_the_network_through_its_subnet_group_and_a_bucket_does_not() -> None:
    template = {"Resources": {
        "SubnetGroup": {"Type": "AWS::RDS::DBSubnetGroup", "Properties": {"SubnetIds": [
            {"Fn::ImportValue": "p-DatabaseSubnet1Id"}]}},
        "Cluster": {"Type": "AWS::RDS::DBCluster", "Properties": {"DBSubnetGroupName": {"Ref": "SubnetGroup"}}},
        "Writer": {"Type": "AWS::RDS::DBInstance", "Properties": {"DBClusterIdentifier": {"Ref": "Cluster"}}},
        "Bucket": {"Type": "AWS::S3::Bucket", "Properties": {}}}}
    assert in_network(template, "p-network", {"p-DatabaseSubnet1Id"}) == {"SubnetGroup", "Cluster", "Writer"}


def _stubbed(events: list[dict], statuses: list[str]) -> tuple[object, Stubber]:
    cfn = boto3.client("cloudformation", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(cfn)
    now = datetime.datetime(2026, 1, 1)
    for status in statuses:
        stub.add_response("describe_stacks", {"Stacks": [{"StackName": "p-cluster", "StackId": "id",
                                                          "StackStatus": status, "CreationTime": now}]},
                          {"StackName": "id"})
    if events:
        stub.add_response("describe_stack_events", {"StackEvents": events}, {"StackName": "id"})
    return cfn, stub


def test_a_failed_delete_stops_with_the_resources_reasons() -> None:
    now = datetime.datetime(2026, 1, 1)
    reason = "The subnet group 'x' is in use by DB cluster 'y'"
    events = [{"StackId": "id", "EventId": "e", "StackName": "p-cluster", "LogicalResourceId": "SubnetGroup",
               "ResourceStatus": "DELETE_FAILED", "ResourceStatusReason": reason, "Timestamp": now}]
    cfn, stub = _stubbed(events, ["DELETE_IN_PROGRESS", "DELETE_FAILED"])
    stack = DeployedStack("p-cluster", "id", "CREATE_COMPLETE", False)
    with stub, pytest.raises(api.DestroyError, match=f"p-cluster ended DELETE_FAILED: SubnetGroup: {reason}"):
        api.wait_deleted(cfn, stack, timeout_s=60, every_s=0, progress=lambda _: None, sleep=lambda _: None)


def test_a_delete_past_the_bound_says_so_and_how_to_follow_it() -> None:
    cfn, stub = _stubbed([], ["DELETE_IN_PROGRESS"] * 3)
    stack = DeployedStack("p-cluster", "id", "CREATE_COMPLETE", False)
    with stub, pytest.raises(api.DestroyError, match="still DELETE_IN_PROGRESS after 0 min.*run `fmcluster destroy`"):
        api.wait_deleted(cfn, stack, timeout_s=0.0, every_s=0, progress=lambda _: None, sleep=lambda _: None)


# --- the command ---------------------------------------------------------------------------------

def _project(tmp_path: Path) -> str:
    (tmp_path / "demo.yaml").write_text(BASE + f"region: {REGION}\n")
    return str(tmp_path / "demo.yaml")


@pytest.mark.parametrize("args, says", [
    ([], "confirm with --yes or --confirm demo"),
    (["--delete-retained", "--yes"], "it needs --confirm demo (--yes is not enough)"),
    (["--confirm", "other"], "--confirm 'other' does not name the project 'demo'"),
])
def test_nothing_is_deleted_without_the_projects_name(moto, tmp_path: Path, args: list[str], says: str) -> None:
    _deploy()
    result = CliRunner().invoke(app, ["destroy", _project(tmp_path), *args])
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert set(_status()) == {"demo-network", "demo-storage", "demo-accounting", "demo-cluster"}


def test_json_lists_what_is_deleted_and_kept_with_costs(moto, tmp_path: Path) -> None:
    _deploy()
    result = CliRunner().invoke(app, ["destroy", _project(tmp_path), "--yes", "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["deleted"] == ["demo-cluster", "demo-accounting", "demo-storage"]
    assert data["network_kept"].startswith("demo-network is kept: AWS::EC2::SecurityGroup sg-")
    assert data["network_monthly_usd"] == 0.0  # no NAT gateway in this network
    kept = {k["id"]: k for k in data["kept"]}
    assert kept["demo-data"]["cost"].startswith("by use: $0.023/GB-month")
    assert kept["demo-data"]["detail"] == "versioned"
    assert kept["demo-flow"]["delete"] == [f"aws logs delete-log-group --log-group-name demo-flow --region {REGION}"]


def test_dry_run_deletes_nothing(moto, tmp_path: Path) -> None:
    _deploy()
    result = CliRunner().invoke(app, ["destroy", _project(tmp_path), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "demo-storage  CREATE_COMPLETE (termination protection on: lifted first)" in result.output
    assert len(_status()) == 4
