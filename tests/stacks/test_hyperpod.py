"""HyperPod projects: what the synthesized AWS::SageMaker::Cluster holds, a moto round trip of its properties,
and the replacement guard on its create-only properties."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import pytest
from fmcluster.stacks.app import synthesize
from moto import mock_aws
from moto.sagemaker import models as moto_sagemaker
from support import BASE, PROJECTS, Synthesized

from fmcluster import guard

HYPERPOD = sorted(name for name, p in PROJECTS.items() if p.orchestrator.type == "hyperpod")


def _cluster(synthesized: Synthesized, project: str) -> tuple[dict, dict]:
    template = synthesized.template(f"{project}-cluster")
    [(logical_id, resource)] = [(k, r) for k, r in template["Resources"].items() if r["Type"] == "AWS::SageMaker::Cluster"]
    return template, resource


def _groups(resource: dict) -> dict[str, dict]:
    return {g["InstanceGroupName"]: g for g in resource["Properties"]["InstanceGroups"]}


def test_the_examples_cover_both_kinds() -> None:
    assert {"p5en-hyperpod", "p6e-gb200-hyperpod"} <= set(HYPERPOD)


def test_p5en_groups_node_types_partitions_and_health_checks(synthesized: Synthesized) -> None:
    _, cluster = _cluster(synthesized, "p5en-hyperpod")
    props = cluster["Properties"]
    groups = _groups(cluster)
    assert list(groups) == ["controller", "login", "train"]
    assert {n: g["SlurmConfig"]["NodeType"] for n, g in groups.items()} == {
        "controller": "Controller", "login": "Login", "train": "Compute"}
    train = groups["train"]
    assert (train["InstanceType"], train["InstanceCount"]) == ("ml.p5en.48xlarge", 8)
    assert train["SlurmConfig"]["PartitionNames"] == ["dev"]  # the project's partition, not the group name
    assert "PartitionNames" not in groups["controller"]["SlurmConfig"]
    assert train["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert "OnStartDeepHealthChecks" not in groups["controller"]  # no GPU to stress
    assert train["NetworkInterface"] == {"InterfaceType": "efa-only"} and "NetworkInterface" not in groups["login"]
    assert "TrainingPlanArn" not in train
    assert props["NodeRecovery"] == "Automatic"
    assert props["Orchestrator"] == {"Slurm": {"SlurmConfigStrategy": "Managed"}}
    assert props["ClusterName"]["Fn::Join"][1][0] == "p5en-hyperpod-hyperpod"  # then the compute subnet's ID


def test_fsx_lifecycle_and_vpc(synthesized: Synthesized) -> None:
    template, cluster = _cluster(synthesized, "p5en-hyperpod")
    bucket = next(k for k, r in template["Resources"].items()
                  if r["Type"] == "AWS::S3::Bucket" and k.startswith("HyperPodLifecycleBucket"))
    for name, group in _groups(cluster).items():
        fsx = [c["FsxLustreConfig"] for c in group["InstanceStorageConfigs"] if "FsxLustreConfig" in c]
        assert len(fsx) == 1 and fsx[0]["MountPath"] == "/fsx"
        # through the storage stack's exports (strong references)
        assert fsx[0]["DnsName"] == {"Fn::ImportValue": "p5en-hyperpod-FileSystemDnsName"}
        assert fsx[0]["MountName"] == {"Fn::ImportValue": "p5en-hyperpod-FileSystemMountName"}
        assert {"EbsVolumeConfig": {"VolumeSizeInGB": 500}} in group["InstanceStorageConfigs"]
        life = group["LifeCycleConfig"]
        assert life["OnInitComplete"] == "bootstrap.sh" and "OnCreate" not in life  # extended mode: HyperPod sets up Slurm
        assert life["SourceS3Uri"] == {"Fn::Join": ["", ["s3://", {"Ref": bucket}, f"/lifecycle/{name}/"]]}
    vpc = cluster["Properties"]["VpcConfig"]
    assert "ComputeSubnet" in json.dumps(vpc["Subnets"]) and "EfaSecurityGroup" in json.dumps(vpc["SecurityGroupIds"])
    # a regular zone: no group leaves the cluster's subnet
    assert not any("OverrideVpcConfig" in g for g in _groups(cluster).values())
    # the bucket's name starts with sagemaker- (the managed policy's reach), is retained, TLS-only and encrypted
    resource = template["Resources"][bucket]
    assert resource["Properties"]["BucketName"]["Fn::Join"][1][0].startswith("sagemaker-p5en-hyperpod")
    assert resource["DeletionPolicy"] == "Retain"
    assert "BucketEncryption" in resource["Properties"]
    policy = next(r for r in template["Resources"].values() if r["Type"] == "AWS::S3::BucketPolicy")
    assert '"aws:SecureTransport": "false"' in json.dumps(policy)


def test_the_cluster_waits_for_its_role_policy_and_scripts(synthesized: Synthesized) -> None:
    template, cluster = _cluster(synthesized, "p5en-hyperpod")
    kinds = {template["Resources"][d]["Type"] for d in cluster["DependsOn"]}
    assert {"AWS::IAM::Policy", "Custom::CDKBucketDeployment"} <= kinds


def test_execution_role_is_scoped(synthesized: Synthesized) -> None:
    template, cluster = _cluster(synthesized, "p5en-hyperpod")
    role_id = cluster["Properties"]["InstanceGroups"][0]["ExecutionRole"]["Fn::GetAtt"][0]
    role = template["Resources"][role_id]["Properties"]
    assert json.dumps(role["AssumeRolePolicyDocument"]).count("sagemaker.amazonaws.com") == 1
    assert "AmazonSageMakerClusterInstanceRolePolicy" in json.dumps(role["ManagedPolicyArns"])
    [policy] = [r["Properties"] for r in template["Resources"].values()
                if r["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in r["Properties"]["Roles"]]
    by_sid = {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}
    assert by_sid["ReadLifecycleScripts"]["Action"] == "s3:GetObject"
    assert json.dumps(by_sid["ReadLifecycleScripts"]["Resource"]).endswith('"/lifecycle/*"]]}')
    assert by_sid["ListLifecycleScripts"]["Condition"] == {"StringLike": {"s3:prefix": ["lifecycle/*"]}}
    assert by_sid["RemoteWriteMetrics"]["Action"] == "aps:RemoteWrite"
    assert "Workspace" in json.dumps(by_sid["RemoteWriteMetrics"]["Resource"])  # the project's workspace only
    assert not [s for s in by_sid.values() if s["Action"] in ("s3:*", "*") or s["Action"] == ["s3:*"]]


def test_gb200_training_plan_and_local_zone(synthesized: Synthesized) -> None:
    _, cluster = _cluster(synthesized, "p6e-gb200-hyperpod")
    groups = _groups(cluster)
    assert groups["nvl72"]["TrainingPlanArn"] == "arn:aws:sagemaker:us-east-1:111122223333:training-plan/gb200"
    assert (groups["nvl72"]["InstanceType"], groups["nvl72"]["InstanceCount"]) == ("ml.p6e-gb200.36xlarge", 17)  # 18 less the plan's spare
    assert "TrainingPlanArn" not in groups["controller"]
    # the compute subnet is in the Local Zone; the controller goes beside FSx in the parent zone
    assert "ServicesSubnet" in json.dumps(groups["controller"]["OverrideVpcConfig"]["Subnets"])
    assert "OverrideVpcConfig" not in groups["nvl72"]


def test_lifecycle_bundles_are_hyperpod_flavoured_per_group(synthesized: Synthesized) -> None:
    root = synthesized.outdir / "fmcluster-bundles" / "p5en-hyperpod"
    manifests = {p.parent.name: json.loads(p.read_text()) for p in root.glob("*/manifest.json")}
    assert set(manifests) == {"controller", "login", "train"}
    assert {m["flavour"] for m in manifests.values()} == {"hyperpod"}
    assert (manifests["controller"]["role"], manifests["train"]["role"]) == ("head", "compute")
    assert manifests["train"]["instance_type"] == "p5en.48xlarge"
    # HyperPod mounts FSx itself (FsxLustreConfig): no bundle mounts it again
    assert not [s for m in manifests.values() for s in m["steps"] if s["name"] == "70-lustre"]


# --- moto round trip ----------------------------------------------------------------------------

def _placeholder(value: Any, refs: dict[str, str]) -> Any:
    """Deploy-time values as CloudFormation would fill them in, with stand-in IDs."""
    if isinstance(value, list):
        return [_placeholder(v, refs) for v in value]
    if not isinstance(value, dict):
        return value
    if "Ref" in value:
        return refs[value["Ref"]]
    if "Fn::GetAtt" in value:
        return f"arn:aws:iam::123456789012:role/{value['Fn::GetAtt'][0]}"
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(str(_placeholder(p, refs)) for p in parts)
    if "Fn::Select" in value:
        index, items = value["Fn::Select"]
        return _placeholder(items, refs)[index]
    if "Fn::Split" in value:
        sep, text = value["Fn::Split"]
        return str(_placeholder(text, refs)).split(sep)
    if "Fn::GetStackOutput" in value or "Fn::ImportValue" in value:
        name = value["Fn::ImportValue"] if "Fn::ImportValue" in value else value["Fn::GetStackOutput"]["OutputName"]
        for key, stand_in in (("Subnet", "subnet-0123456789abcdef0"), ("SecurityGroup", "sg-0123456789abcdef0"),
                              ("DNSName", "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com"),
                              ("DnsName", "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com"),
                              ("MountName", "abcdefgh")):
            if key in name:
                return stand_in
        raise AssertionError(f"no stand-in for output {name}")
    return {k: _placeholder(v, refs) for k, v in value.items()}


@pytest.fixture
def moto_takes_every_hyperpod_type(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto 5.2.5 hard-codes an old list of HyperPod types (no p5e, p5en, p6*): accept boto3's enum too."""
    enum = botocore.session.get_session().get_service_model("sagemaker").shape_for("ClusterInstanceType").enum
    original = moto_sagemaker.Cluster.valid_cluster_node_instance_types

    def valid(self: Any, instance_type: str) -> None:
        if instance_type not in enum:
            original(self, instance_type)

    monkeypatch.setattr(moto_sagemaker.Cluster, "valid_cluster_node_instance_types", valid)


@pytest.mark.parametrize("project", ["p5en-hyperpod", "p6e-gb200-hyperpod"])
def test_moto_round_trip(synthesized: Synthesized, project: str, moto_takes_every_hyperpod_type: None) -> None:
    template, cluster = _cluster(synthesized, project)
    bucket = next(k for k, r in template["Resources"].items() if k.startswith("HyperPodLifecycleBucket")
                  and r["Type"] == "AWS::S3::Bucket")
    props = _placeholder(cluster["Properties"], {bucket: f"sagemaker-{project}-0a1b2c3d"})
    with mock_aws():
        client = boto3.client("sagemaker", region_name="us-east-1")
        client.create_cluster(**props)  # botocore validates every member against the service model first
        described = client.describe_cluster(ClusterName=props["ClusterName"])
        nodes = client.list_cluster_nodes(ClusterName=props["ClusterName"])["ClusterNodeSummaries"]
    assert described["ClusterStatus"] == "InService"
    want = {g["InstanceGroupName"]: (g["InstanceType"], g["InstanceCount"]) for g in props["InstanceGroups"]}
    got = {g["InstanceGroupName"]: (g["InstanceType"], g["TargetCount"]) for g in described["InstanceGroups"]}
    assert got == want
    per_group: dict[str, int] = {}
    for node in nodes:
        per_group[node["InstanceGroupName"]] = per_group.get(node["InstanceGroupName"], 0) + 1
    assert per_group == {name: count for name, (_, count) in want.items()}
    assert {g["LifeCycleConfig"]["SourceS3Uri"] for g in described["InstanceGroups"]} == {
        f"s3://sagemaker-{project}-0a1b2c3d/lifecycle/{name}/" for name in want}


# --- replacement guard ----------------------------------------------------------------------------

HP_OLD = BASE + "orchestrator:\n  type: hyperpod\n"


@pytest.fixture(scope="module")
def hp_old(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("hp-old")
    (folder / "demo.yaml").write_text(HP_OLD)
    return synthesize(folder / "demo.yaml", folder / "out")


def _compare(old: dict, tmp_path: Path, text: str) -> list[guard.Replacement]:
    (tmp_path / "demo.yaml").write_text(text)
    return guard.compare(old, synthesize(tmp_path / "demo.yaml", tmp_path / "out"))


def test_guard_refuses_a_new_cluster_name(hp_old: dict, tmp_path: Path) -> None:
    found = _compare(hp_old, tmp_path, HP_OLD + "  hyperpod: {cluster_name: other}\n")
    [cluster] = [r for r in found if r.type == "AWS::SageMaker::Cluster"]
    assert "ClusterName changes from" in cluster.reason and '"other"' in cluster.reason


def test_guard_refuses_a_new_subnet_for_the_cluster(hp_old: dict, tmp_path: Path) -> None:
    found = _compare(hp_old, tmp_path, HP_OLD + "network: {vpc_cidr: 10.9.0.0/16}\n")
    [cluster] = [r for r in found if r.type == "AWS::SageMaker::Cluster"]
    assert "ComputeSubnet, which is replaced" in cluster.reason
    # a replacement CloudFormation can carry out: the new subnet's ID gives the new cluster a new name
    assert "custom name" not in cluster.reason


def test_the_cluster_has_no_literal_name(hp_old: dict) -> None:
    """ClusterName and VpcConfig are create-only: the name carries the compute subnet's ID, so a new subnet comes with
    a new name and CloudFormation can replace the cluster instead of refusing (a custom-named resource)."""
    template = hp_old["demo-cluster"]
    [cluster] = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Cluster"]
    name = cluster["Properties"]["ClusterName"]
    assert not isinstance(name, str)
    subnet = cluster["Properties"]["VpcConfig"]["Subnets"][0]
    assert name == {"Fn::Join": ["-", ["demo-hyperpod", {"Fn::Select": [1, {"Fn::Split": ["-", subnet]}]}]]}
    # what `fmcluster hyperpod status` reads: the ARN (the name is known once deployed)
    arn = {"Fn::GetAtt": [next(
        lid for lid, r in template["Resources"].items() if r["Type"] == "AWS::SageMaker::Cluster"), "ClusterArn"]}
    assert template["Outputs"]["HyperPodClusterArn"]["Value"] == arn
    # what `fmcluster connect` names in a sagemaker-cluster:<id>_<group>-<instance> target: the ARN's last part
    assert template["Outputs"]["HyperPodClusterId"]["Value"] == {"Fn::Select": [1, {"Fn::Split": ["/", arn]}]}


def test_guard_says_a_custom_named_cluster_cannot_be_replaced(hp_old: dict) -> None:
    """A cluster with a literal name (as fmcluster made before) whose VpcConfig changes wedges the stack: the guard
    says why, in CloudFormation's terms."""
    import copy

    old = copy.deepcopy(hp_old)
    new = copy.deepcopy(hp_old)
    for templates in (old, new):
        cluster = next(r for r in templates["demo-cluster"]["Resources"].values() if r["Type"] == "AWS::SageMaker::Cluster")
        cluster["Properties"]["ClusterName"] = "demo-hyperpod"
    cluster["Properties"]["VpcConfig"]["Subnets"] = ["subnet-0123456789abcdef0"]  # the new one's
    [found] = [r for r in guard.compare(old, new) if r.type == "AWS::SageMaker::Cluster"]
    assert found.reason.startswith("VpcConfig changes from")
    assert 'custom name (ClusterName "demo-hyperpod") stays the same' in found.reason
    assert "the update fails and the stack rolls back" in found.reason


def test_guard_lets_settings_change_in_place(hp_old: dict, tmp_path: Path) -> None:
    text = HP_OLD + "  hyperpod: {node_recovery: None, groups: {train: {deep_health_checks: []}}}\n"
    assert _compare(hp_old, tmp_path, text) == []


def test_the_schema_lists_the_create_only_properties() -> None:
    paths = guard.create_only_paths("AWS::SageMaker::Cluster")
    assert {"/properties/ClusterName", "/properties/VpcConfig"} <= set(paths)
    assert "AWS::SageMaker::Cluster" not in guard.SCHEMA_GAPS  # cfn-lint's schema has them: no gap to fill


def test_every_instance_group_learns_the_projects_remote_write_url(synthesized: Synthesized) -> None:
    """Lifecycle bundles are assets (no tokens): the URL goes beside each bundle, written at deploy time."""
    resources = synthesized.template("p5en-hyperpod-cluster")["Resources"]
    upload = next(r for r in resources.values() if r["Type"] == "Custom::CDKBucketDeployment")["Properties"]
    markers = [m for m in upload["SourceMarkers"] if m]
    _, resource = _cluster(synthesized, "p5en-hyperpod")
    assert len(markers) == len(resource["Properties"]["InstanceGroups"])  # one env file per instance group
    assert all("PrometheusEndpoint" in json.dumps(m) for m in markers)


def _execution_statements(text: str, tmp_path: Path) -> list[dict]:
    """The execution policy's statements, the stack built from the plan alone (whatever the checks say of it)."""
    from fmcluster.plan import make_plan
    from fmcluster.stacks.app import build_project, new_app
    from support import load

    loaded = load(text, "demo.yaml")
    app = new_app(outdir=str(tmp_path / "out"), context={"nag": "false"})
    build_project(app, loaded, make_plan(loaded.project))
    template = app.synth().get_stack_by_name("demo-cluster").template
    [policy] = [r for lid, r in template["Resources"].items()
                if r["Type"] == "AWS::IAM::Policy" and lid.startswith("HyperPodExecutionPolicy")]
    return policy["Properties"]["PolicyDocument"]["Statement"]


EFA_FSX = "storage:\n  fsx: {efa_enabled: true, metadata: {mode: AUTOMATIC}}\n"


def test_the_role_may_describe_an_efa_enabled_file_system(tmp_path: Path) -> None:
    statements = _execution_statements(HP_OLD + EFA_FSX, tmp_path)
    [describe] = [s for s in statements if s.get("Sid") == "DescribeEfaFileSystem"]
    assert describe["Action"] == "fsx:DescribeFileSystems"


def test_no_fsx_describe_without_efa(tmp_path: Path) -> None:
    assert not [s for s in _execution_statements(HP_OLD, tmp_path) if "fsx:" in json.dumps(s["Action"])]
