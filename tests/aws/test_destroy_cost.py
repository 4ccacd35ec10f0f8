"""``destroy``'s kept cost is the plan's "destroyed" column: one project, its retained resources found in moto as
``destroy --dry-run`` finds them (the file system at the plan's size and tier, the database at its floor, the alerts
key, the secret, the network kept under them with its NAT gateway and public IPv4 address), priced by the same
functions (:mod:`fmcluster.plan.cost`)."""

from __future__ import annotations

import json

import boto3
import pytest
from support import ROOT

from fmcluster import config
from fmcluster.aws import destroy as api
from fmcluster.aws.kept import Kept
from fmcluster.aws.session import aws_session
from fmcluster.cli.destroy import total
from fmcluster.plan import make_plan
from fmcluster.plan.cost import CostSummary, cost_summary

REGION = "us-east-1"


def _network() -> str:
    """``NAME-network`` as the stacks shape it (fmcluster.stacks.network): a VPC, a public subnet, one Elastic IP and
    one NAT gateway on it. Returns the subnet's ID."""
    body = {"Resources": {
        "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}},
        "Public": {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": {"Ref": "Vpc"}, "CidrBlock": "10.0.0.0/24"}},
        "NatAddress": {"Type": "AWS::EC2::EIP", "Properties": {"Domain": "vpc"}},
        "NatGateway": {"Type": "AWS::EC2::NatGateway", "Properties": {
            "SubnetId": {"Ref": "Public"}, "AllocationId": {"Fn::GetAtt": ["NatAddress", "AllocationId"]}}}},
        "Outputs": {"VpcId": {"Value": {"Ref": "Vpc"}, "Export": {"Name": "demo-VpcId"}},
                    "SubnetId": {"Value": {"Ref": "Public"}}}}
    cfn = boto3.client("cloudformation", region_name=REGION)
    cfn.create_stack(StackName="demo-network", TemplateBody=json.dumps(body))
    [stack] = cfn.describe_stacks(StackName="demo-network")["Stacks"]
    return next(o["OutputValue"] for o in stack["Outputs"] if o["OutputKey"] == "SubnetId")


def _retained(plan, subnet: str) -> list[Kept]:
    """The project's retained resources as they stand after its stacks are gone (moto's CloudFormation creates no
    file system, database or secret: they are made through their own APIs, as their stacks would)."""
    st, db = plan.storage, plan.cluster.accounting.database
    fs = boto3.client("fsx", region_name=REGION).create_file_system(
        FileSystemType="LUSTRE", StorageCapacity=st.capacity_gib, SubnetIds=[subnet],
        LustreConfiguration={"DeploymentType": st.deployment_type,
                             "PerUnitStorageThroughput": st.throughput_per_tib})["FileSystem"]["FileSystemId"]
    key = boto3.client("kms", region_name=REGION).create_key()["KeyMetadata"]["KeyId"]
    secret = boto3.client("secretsmanager", region_name=REGION).create_secret(Name="demo-db", SecretString="x")["ARN"]
    rds = boto3.client("rds", region_name=REGION)
    rds.create_db_cluster(DBClusterIdentifier="demo-db", Engine="aurora-mysql", MasterUsername="slurm_admin",
                          MasterUserPassword="x" * 16, ServerlessV2ScalingConfiguration={
                              "MinCapacity": db.min_capacity_acu, "MaxCapacity": db.max_capacity_acu})
    rds.create_db_instance(DBInstanceIdentifier="demo-db-writer", DBClusterIdentifier="demo-db",
                           Engine="aurora-mysql", DBInstanceClass="db.serverless")
    boto3.client("s3", region_name=REGION).create_bucket(Bucket="demo-data")
    boto3.client("logs", region_name=REGION).create_log_group(logGroupName="demo-logs")

    def kept(stack: str, lid: str, type_: str, pid: str, in_network: bool = False) -> Kept:
        return Kept(f"demo-{stack}", lid, type_, pid, in_network=in_network, region=REGION)

    return [kept("storage", "FileSystem", "AWS::FSx::FileSystem", fs, in_network=True),
            kept("storage", "Data", "AWS::S3::Bucket", "demo-data"),
            kept("storage", "Logs", "AWS::Logs::LogGroup", "demo-logs"),
            kept("observability", "AlertsKey", "AWS::KMS::Key", key),
            kept("accounting", "Secret", "AWS::SecretsManager::Secret", secret),
            kept("accounting", "Cluster", "AWS::RDS::DBCluster", "demo-db", in_network=True),
            kept("accounting", "Writer", "AWS::RDS::DBInstance", "demo-db-writer", in_network=True)]


def test_destroy_dry_runs_kept_total_is_the_plans_destroyed_column(moto) -> None:
    plan = make_plan(config.load(ROOT / "examples" / "p5-slurm-accounting.yaml").project)
    column = cost_summary(plan).after_destroy_per_month
    subnet = _network()
    session = aws_session(region=REGION, command="destroy")
    read = api.read(session, "demo")
    teardown = api.Teardown("demo", REGION, read.stacks, api.present(session, _retained(plan, subnet)))
    # what `destroy --dry-run` reports (fmcluster.cli.destroy): the kept resources, and the network they keep
    outcome = api.Outcome(kept=teardown.kept)
    assert teardown.network is not None and teardown.blocking()
    outcome.network_cost = api.network_cost(teardown.network)
    assert total(outcome) == pytest.approx(CostSummary.total(column), abs=0.005)
    fsx = next(k for k in outcome.kept if k.type == "AWS::FSx::FileSystem")
    assert fsx.monthly_usd == pytest.approx(next(i.usd for i in column if i.item == "FSx for Lustre"))
    assert "public IPv4" in outcome.network_cost[1]


def test_a_kept_2400_gib_file_system_is_priced_by_its_size_and_tier(moto) -> None:
    subnet = _network()
    fs = boto3.client("fsx", region_name=REGION).create_file_system(
        FileSystemType="LUSTRE", StorageCapacity=2400, SubnetIds=[subnet],
        LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 500})
    session = aws_session(region=REGION, command="destroy")
    [k] = api.present(session, [Kept("demo-storage", "Fs", "AWS::FSx::FileSystem",
                                     fs["FileSystem"]["FileSystemId"], region=REGION)])
    assert 750 < k.monthly_usd < 900 and "by use" not in k.cost  # issue 42: "about $800/month", not "billed by use"
    assert k.cost.startswith("~$")  # the 500 MB/s/TiB tier's price is an estimate, and says so
