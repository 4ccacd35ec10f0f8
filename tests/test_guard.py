"""The replacement guard: `fmcluster plan NEW --against OLD` refuses changes that would replace data."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from fmcluster.stacks.app import synthesize
from support import BASE, PCS_ACCOUNTING, ROOT
from typer.testing import CliRunner

from fmcluster import guard
from fmcluster.cli import REPLACEMENT_EXIT, app
from fmcluster.cli.plandiff import compare_files

OLD = BASE + """storage:
  fsx:
    throughput_per_tib: 250
    associations:
      - file_system_path: /datasets
"""


@pytest.fixture(scope="module")
def old_templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("old")
    (folder / "demo.yaml").write_text(OLD)
    return synthesize(folder / "demo.yaml", folder / "out")


def _replacements(old_templates, tmp_path: Path, new_text: str) -> list[guard.Replacement]:
    (tmp_path / "demo.yaml").write_text(new_text)
    return guard.compare(old_templates, synthesize(tmp_path / "demo.yaml", tmp_path / "out"))


def test_raising_throughput_and_adding_an_association_pass(old_templates, tmp_path: Path) -> None:
    new = OLD.replace("throughput_per_tib: 250", "throughput_per_tib: 1000") + "      - file_system_path: /checkpoints\n"
    assert _replacements(old_templates, tmp_path, new) == []


def test_reordering_associations_passes(old_templates, tmp_path: Path) -> None:
    new = OLD.replace("      - file_system_path: /datasets\n",
                      "      - file_system_path: /aaa-first\n      - file_system_path: /datasets\n")
    assert _replacements(old_templates, tmp_path, new) == []


def test_changing_deployment_type_is_refused(old_templates, tmp_path: Path) -> None:
    new = BASE + "storage:\n  fsx:\n    deployment_type: SCRATCH_2\n"
    found = {(r.type, r.reason.split(" ")[0]) for r in _replacements(old_templates, tmp_path, new)}
    assert ("AWS::FSx::FileSystem", "LustreConfiguration/DeploymentType") in found


def test_changing_the_subnet_is_refused(old_templates, tmp_path: Path) -> None:
    new = OLD + "network:\n  compute_subnet_prefix: 21\n"
    found = _replacements(old_templates, tmp_path, new)
    fs = next(r for r in found if r.type == "AWS::FSx::FileSystem")
    assert "SubnetIds refers to demo-network/ComputeSubnet" in fs.reason and "CidrBlock" in fs.reason
    assert any(r.type == "AWS::FSx::DataRepositoryAssociation" for r in found)


def test_enabling_efa_is_refused(old_templates, tmp_path: Path) -> None:
    new = OLD.replace("    throughput_per_tib: 250\n", "    throughput_per_tib: 250\n    efa_enabled: true\n    metadata: {mode: AUTOMATIC}\n")
    found = _replacements(old_templates, tmp_path, new)
    assert any(r.logical_id == "FileSystem" for r in found)


def test_removing_an_association_is_refused_as_retained_and_orphaned(old_templates, tmp_path: Path) -> None:
    new = OLD.replace("    associations:\n      - file_system_path: /datasets\n", "")
    [found] = _replacements(old_templates, tmp_path, new)
    assert found.type == "AWS::FSx::DataRepositoryAssociation" and "no longer" in found.reason
    assert "retained and orphaned" in found.reason and "new, empty" not in found.reason


def test_removing_the_file_system_and_the_workspace_says_they_are_kept(old_templates, tmp_path: Path) -> None:
    new = BASE + "storage:\n  fsx: {enabled: false}\nobservability: {prometheus: false, grafana: {enabled: false}}\n"
    found = {r.type: r.reason for r in _replacements(old_templates, tmp_path, new)}
    for kind in ("AWS::FSx::FileSystem", "AWS::FSx::DataRepositoryAssociation"):
        assert "retained and orphaned" in found[kind], found
    # no monitoring at all: the observability stack is no longer built, and `cdk deploy` leaves it, workspace and all
    assert "demo-observability is deployed but the project no longer builds it" in found["AWS::APS::Workspace"]


def test_a_removed_resource_without_retain_is_deleted() -> None:
    old = {"demo-storage": {"Resources": {"Bucket": {"Type": "AWS::S3::Bucket", "DeletionPolicy": "Delete"}}}}
    [found] = guard.compare(old, {"demo-storage": {"Resources": {}}})
    assert "deletes it, and its data" in found.reason


def test_the_guard_judges_what_cdk_synth_builds(old_templates) -> None:
    """cdk.json's context reaches the guard's app: weak references (Fn::GetStackOutput) between the long-lived stacks;
    the cluster stack reads network and storage through their exports (Fn::ImportValue, strong)."""
    text = json.dumps({k: v for k, v in old_templates.items() if not k.endswith("-cluster")})
    assert "Fn::GetStackOutput" in text and "Fn::ImportValue" not in text
    assert "Fn::ImportValue" in json.dumps(old_templates["demo-cluster"])
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    assert context["@aws-cdk/core:defaultCrossStackReferences"] == "weak"


def test_references_through_stack_outputs_spread_replacement(old_templates, tmp_path: Path) -> None:
    """The file system reaches the subnet only through Fn::GetStackOutput: the guard must follow it."""
    fs = old_templates["demo-storage"]["Resources"]["FileSystem"]["Properties"]
    assert "Fn::GetStackOutput" in json.dumps(fs["SubnetIds"])
    found = _replacements(old_templates, tmp_path, OLD + "network:\n  compute_subnet_prefix: 21\n")
    assert any(r.logical_id == "FileSystem" and "refers to demo-network/ComputeSubnet" in r.reason for r in found)


@pytest.mark.parametrize("change, words", [
    (lambda t: t.replace("name: demo", "name: demo2"), "renamed from 'demo' to 'demo2'"),
    (lambda t: t + "region: us-east-1\n", "region changes from (the CLI default) to us-east-1"),
])
def test_a_rename_or_another_region_makes_a_second_copy(tmp_path: Path, change, words) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(OLD)
    new.write_text(change(OLD))
    found = compare_files(new, old, synthesize).replacements
    kinds = {r.type for r in found}
    assert {"AWS::FSx::FileSystem", "AWS::S3::Bucket", "AWS::APS::Workspace"} <= kinds
    assert all(words in r.reason and "second, empty one is created" in r.reason for r in found)


def test_changing_the_throughput_of_an_efa_file_system_is_refused(tmp_path: Path) -> None:
    efa = OLD.replace("    throughput_per_tib: 250\n",
                      "    throughput_per_tib: 250\n    storage_capacity_gib: 19200\n    efa_enabled: true\n"
                      "    metadata: {mode: AUTOMATIC}\n")
    (tmp_path / "old.yaml").write_text(efa)
    (tmp_path / "new.yaml").write_text(efa.replace("throughput_per_tib: 250", "throughput_per_tib: 1000"))
    [found] = compare_files(tmp_path / "new.yaml", tmp_path / "old.yaml", synthesize).replacements
    assert found.logical_id == "FileSystem" and "EFA-enabled" in found.reason and "250 to 1000" in found.reason


def test_cli_exits_3_and_allow_replace_overrides(tmp_path: Path) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(OLD.replace("name: demo", "name: demo"))
    new.write_text(BASE + "storage:\n  fsx:\n    deployment_type: SCRATCH_2\n")
    runner = CliRunner()
    result = runner.invoke(app, ["plan", str(new), "--against", str(old)])
    assert result.exit_code == REPLACEMENT_EXIT == 3
    assert "demo-storage/FileSystem" in result.stderr and "DeploymentType" in result.stderr
    result = runner.invoke(app, ["plan", str(new), "--against", str(old), "--allow-replace"])
    assert result.exit_code == 0 and "replaces" in result.stderr


def test_schema_gaps_are_still_gaps() -> None:
    """When cfn-lint's schemas start to list one of these as create-only, drop it from SCHEMA_GAPS."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    for kind, paths in guard.SCHEMA_GAPS.items():
        declared = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", kind).schema.get("createOnlyProperties", [])
        assert not set(paths) & set(declared)


def test_shrinking_capacity_is_refused() -> None:
    def template(capacity: int) -> dict:
        return {"demo-storage": {"Resources": {"FileSystem": {"Type": "AWS::FSx::FileSystem", "Properties": {
            "FileSystemType": "LUSTRE", "SubnetIds": ["s"], "StorageCapacity": capacity}}}}}
    assert guard.compare(template(2400), template(4800)) == []
    [found] = guard.compare(template(4800), template(2400))
    assert "shrinks" in found.reason


def _essence(templates: dict[str, dict]) -> dict:
    """What a deploy acts on: each resource's type, properties and policies, and the outputs (no CDK metadata)."""
    keep = ("Type", "Properties", "DeletionPolicy", "UpdateReplacePolicy", "DependsOn")
    return {stack: ({rid: {k: r.get(k) for k in keep} for rid, r in t.get("Resources", {}).items()
                     if r["Type"] != "AWS::CDK::Metadata"}, t.get("Outputs", {}))
            for stack, t in templates.items()}


def test_guard_synthesis_equals_the_cdk_cli(tmp_path: Path) -> None:
    """`cdk synth` (the CLI, cdk.json, app.py) and the guard's synthesize build the same templates."""
    (tmp_path / "demo.yaml").write_text(OLD)
    cdk = ROOT / "node_modules" / ".bin" / "cdk"
    if not cdk.exists():
        pytest.fail("node_modules/.bin/cdk is missing: run `make setup`")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CDK_CONTEXT", "CDK_OUTDIR"))}
    subprocess.run([str(cdk), "synth", "-c", f"project={tmp_path / 'demo.yaml'}", "-c", "nag=false",
                    "-o", str(tmp_path / "cli"), "--quiet", "--no-notices", "--no-version-reporting"],
                   cwd=ROOT, check=True, capture_output=True, timeout=300,
                   env={**env, "CDK_DISABLE_CLI_TELEMETRY": "true"})
    cli = _essence({p.name.removesuffix(".template.json"): json.loads(p.read_text())
                    for p in (tmp_path / "cli").glob("*.template.json")})
    ours = _essence(synthesize(tmp_path / "demo.yaml", tmp_path / "guard"))
    assert sorted(cli) == sorted(ours)
    for stack in cli:
        differ = sorted(k for k in set(cli[stack][0]) | set(ours[stack][0]) if cli[stack][0].get(k) != ours[stack][0].get(k))
        assert not differ, f"{stack}: resources differ: {differ}"
        assert cli[stack][1] == ours[stack][1], f"{stack}: outputs differ"


NOT_NAMES = {
    ("AWS::EC2::VPCEndpoint", "/properties/ServiceName"): "the AWS service it reaches, not its own name",
    ("AWS::EC2::FlowLog", "/properties/LogGroupName"): "the log group it writes to, not its own name",
    ("AWS::RDS::DBCluster", "/properties/DBSubnetGroupName"): "the subnet group it sits in, not its own name",
    ("AWS::EKS::AccessEntry", "/properties/ClusterName"): "the cluster it grants access to, not its own name",
    ("AWS::EKS::Addon", "/properties/ClusterName"): "the cluster it is installed in, not its own name",
}


def test_every_custom_named_resource_is_known_to_the_guard(synthesized) -> None:
    """The audit: every resource any project or example builds with a create-only `...Name` property set is one
    the guard knows (so it can say that CloudFormation will not replace it while the name stays)."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    unknown = set()
    for template in synthesized.templates.values():
        for resource in template.get("Resources", {}).values():
            kind = resource["Type"]
            if kind.startswith("Custom::"):
                continue
            create_only = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", kind).schema.get(
                "createOnlyProperties", [])
            for prop in resource.get("Properties", {}):
                path = f"/properties/{prop}"
                if prop.endswith("Name") and path in create_only and (kind, path) not in NOT_NAMES:
                    if guard.CUSTOM_NAMES.get(kind) != path:
                        unknown.add((kind, path))
    assert not unknown, f"custom-named resources the guard does not know: {sorted(unknown)}"


def test_the_custom_name_table_names_real_create_only_properties() -> None:
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    for kind, path in guard.CUSTOM_NAMES.items():
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", kind).schema
        assert path in schema.get("createOnlyProperties", []), (kind, path)


def test_a_custom_named_policy_whose_description_changes_is_refused() -> None:
    """ManagedPolicy: Description is create-only, the name custom -> CloudFormation would have to replace a
    custom-named resource; the guard reports it although a policy holds no data."""
    policy = {"Type": "AWS::IAM::ManagedPolicy",
              "Properties": {"ManagedPolicyName": "parallelcluster-demo-nodes", "Description": "a",
                             "PolicyDocument": {}}}
    old = {"demo-cluster": {"Resources": {"NodePolicy": policy}}}
    new = {"demo-cluster": {"Resources": {"NodePolicy": {**policy, "Properties": {**policy["Properties"],
                                                                                    "Description": "b"}}}}}
    [found] = guard.compare(old, new)
    assert found.logical_id == "NodePolicy" and "custom name (ManagedPolicyName" in found.reason
    renamed = {"demo-cluster": {"Resources": {"NodePolicy": {**policy, "Properties": {
        **policy["Properties"], "Description": "b", "ManagedPolicyName": "other"}}}}}
    assert guard.compare(old, renamed) == []  # a new name: CloudFormation replaces it, nothing is lost


def _accounting(**changes) -> dict[str, dict]:
    """A stack holding the accounting database, as ``stacks/accounting.py`` writes it (the parts the guard reads)."""
    cluster = {"Type": "AWS::RDS::DBCluster", "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
               "Properties": {"Engine": "aurora-mysql", "StorageEncrypted": True,
                              "DBSubnetGroupName": {"Ref": "SubnetGroup"},
                              "ServerlessV2ScalingConfiguration": {"MinCapacity": 0.5, "MaxCapacity": 2}}}
    cluster["Properties"].update(changes)
    writer = {"Type": "AWS::RDS::DBInstance", "DeletionPolicy": "Retain",
              "Properties": {"DBClusterIdentifier": {"Ref": "Cluster"}, "DBInstanceClass": "db.serverless"}}
    return {"demo-accounting": {"Resources": {"Cluster": cluster, "Writer": writer}}}


def test_the_accounting_database_is_judged_like_the_other_stateful_resources() -> None:
    # resizing is an update in place
    assert guard.compare(_accounting(), _accounting(ServerlessV2ScalingConfiguration={"MinCapacity": 1,
                                                                                       "MaxCapacity": 4})) == []
    # a create-only property replaces the cluster, and every job record with it
    found = {r.logical_id: r for r in guard.compare(_accounting(), _accounting(StorageEncrypted=False))}
    assert found["Cluster"].type == "AWS::RDS::DBCluster" and "StorageEncrypted" in found["Cluster"].reason
    # ... and its writer (DBClusterIdentifier is create-only) goes with it
    assert set(found) == {"Cluster", "Writer"} and "Cluster" in found["Writer"].reason
    # a database the accounting stack no longer holds is kept, orphaned: the guard says so
    found = guard.compare(_accounting(), {"demo-accounting": {"Resources": {}}})
    assert {r.type for r in found} == {"AWS::RDS::DBCluster", "AWS::RDS::DBInstance"}
    assert all("retained and orphaned" in r.reason for r in found if r.type == "AWS::RDS::DBCluster")


def test_turning_accounting_off_with_the_database_stack_deployed_is_refused_naming_what_to_delete() -> None:
    """`cdk deploy` leaves a stack the app no longer has, but that stack's imports pin the network's exports: the
    network update that drops the database subnets would fail ("export in use"), so the guard says so first."""
    def network(database: bool) -> dict:
        outputs = {"VpcId": {"Value": {"Ref": "Vpc"}, "Export": {"Name": "demo-VpcId"}}}
        if database:
            outputs |= {key: {"Value": {"Ref": key.removesuffix("Id")}, "Export": {"Name": f"demo-{key}"}}
                        for key in ("DatabaseSubnet1Id", "DatabaseSubnet2Id")}
        return {"Resources": {"Vpc": {"Type": "AWS::EC2::VPC"}}, "Outputs": outputs}

    accounting = _accounting()["demo-accounting"]
    accounting["Resources"]["SubnetGroup"] = {"Type": "AWS::RDS::DBSubnetGroup", "Properties": {"SubnetIds": [
        {"Fn::ImportValue": "demo-DatabaseSubnet1Id"}, {"Fn::ImportValue": "demo-DatabaseSubnet2Id"}]}}
    old = {"demo-network": network(True), "demo-accounting": accounting}
    found = guard.compare(old, {"demo-network": network(False)})
    assert {r.logical_id for r in found} == {"Cluster", "Writer"}
    why = found[0].reason
    assert "imports demo-DatabaseSubnet1Id, demo-DatabaseSubnet2Id" in why and "the new demo-network" in why
    assert "Delete demo-accounting first" in why
    # the network keeps exporting them: the database stack is only left as it is, and the guard says that instead
    kept = guard.compare(old, {"demo-network": network(True)})
    assert {r.logical_id for r in kept} == {"Cluster", "Writer"}
    assert all("no longer builds it: `cdk deploy` leaves that stack" in r.reason for r in kept)


def test_hyperpod_refuses_to_give_up_its_external_accounting_database() -> None:
    def cluster(slurm: dict) -> dict[str, dict]:
        props = {"ClusterName": "demo-hyperpod", "Orchestrator": {"Slurm": slurm},
                 "VpcConfig": {"SecurityGroupIds": ["sg-1"], "Subnets": ["subnet-1"]}}
        return {"demo-cluster": {"Resources": {"Cluster": {"Type": "AWS::SageMaker::Cluster", "Properties": props}}}}

    database = {"Endpoint": "db.example", "SecretArn": "arn:aws:secretsmanager:us-east-1:000000000000:secret:x"}
    managed = {"SlurmConfigStrategy": "Managed"}
    # attaching one, or moving to another endpoint, is an update the guard lets through
    assert guard.compare(cluster(managed), cluster({**managed, "AccountingDatabase": database})) == []
    moved = {**database, "Endpoint": "db2.example"}
    assert guard.compare(cluster({**managed, "AccountingDatabase": database}),
                         cluster({**managed, "AccountingDatabase": moved})) == []
    # going back to the controller's own database is refused by HyperPod
    [found] = guard.compare(cluster({**managed, "AccountingDatabase": database}), cluster(managed))
    assert found.type == "AWS::SageMaker::Cluster" and "cannot revert" in found.reason


def _pcs(cluster_props: dict, group_type: str = "p5.48xlarge") -> dict:
    return {"demo-cluster": {"Resources": {
        "Cluster": {"Type": "AWS::PCS::Cluster", "Properties": {
            "Name": {"Fn::Join": ["-", ["demo", {"Fn::ImportValue": "demo-ComputeSubnetId"}]]},
            "Networking": {"SubnetIds": [{"Fn::ImportValue": "demo-ComputeSubnetId"}]},
            "Scheduler": {"Type": "SLURM", "Version": "25.05"}, **cluster_props}},
        "GpuNodeGroup": {"Type": "AWS::PCS::ComputeNodeGroup", "Properties": {
            "Name": "gpu", "ClusterId": {"Fn::GetAtt": ["Cluster", "Id"]},
            "InstanceConfigs": [{"InstanceType": group_type}]}},
        "GpuQueue": {"Type": "AWS::PCS::Queue", "Properties": {
            "Name": "gpu", "ClusterId": {"Fn::GetAtt": ["Cluster", "Id"]}}},
    }}}


def test_a_pcs_cluster_replaced_by_size_is_refused_but_its_node_groups_are_not_wedged() -> None:
    """Size is create-only: the cluster is replaced (its jobs end), here under the same name, which the guard
    reports; its node groups and queues follow it into the new cluster, where their names are free (NAME_SCOPES)."""
    found = guard.compare(_pcs({"Size": "SMALL"}), _pcs({"Size": "MEDIUM"}))
    assert [f.logical_id for f in found] == ["Cluster"] and "custom name (Name" in found[0].reason


def test_a_pcs_node_group_with_a_new_instance_type_keeps_its_name_and_is_refused() -> None:
    """InstanceConfigs is create-only: the node group is replaced in the same cluster, under the same name, which
    PCS refuses (names are unique in a cluster)."""
    found = guard.compare(_pcs({"Size": "SMALL"}), _pcs({"Size": "SMALL"}, "p5en.48xlarge"))
    assert [f.logical_id for f in found] == ["GpuNodeGroup"] and "custom name (Name" in found[0].reason


def _eks(role: str) -> dict:
    cluster_id = {"Fn::Select": [1, {"Fn::Split": ["/", {"Fn::GetAtt": ["HyperPod", "ClusterArn"]}]}]}
    return {"demo-cluster": {"Resources": {
        "Eks": {"Type": "AWS::EKS::Cluster", "Properties": {"Version": "1.33", "RoleArn": role}},
        "HyperPod": {"Type": "AWS::SageMaker::Cluster", "Properties": {
            "ClusterName": {"Fn::Join": ["-", ["demo-hyperpod", {"Fn::ImportValue": "demo-ComputeSubnetId"}]]},
            "Orchestrator": {"Eks": {"ClusterArn": {"Fn::GetAtt": ["Eks", "Arn"]}}}}},
        "Quota": {"Type": "AWS::SageMaker::ComputeQuota", "Properties": {
            "Name": {"Fn::Join": ["-", ["research", cluster_id]]},
            "ClusterArn": {"Fn::GetAtt": ["HyperPod", "ClusterArn"]}}},
    }}}


def test_a_replaced_eks_cluster_replaces_the_hyperpod_cluster_on_it() -> None:
    """RoleArn is create-only on AWS::EKS::Cluster and Orchestrator/Eks on the HyperPod cluster: a new control-plane
    role replaces both (every pod ends), which the guard reports; the HyperPod cluster, under the same name, would
    wedge the stack. The quotas, named after the cluster's ID, follow it under new names."""
    found = guard.compare(_eks("arn:aws:iam::111122223333:role/a"), _eks("arn:aws:iam::111122223333:role/b"))
    assert {f.logical_id for f in found} == {"Eks", "HyperPod"}
    assert guard.compare(_eks("arn:aws:iam::111122223333:role/a"), _eks("arn:aws:iam::111122223333:role/a")) == []


def test_pcs_refuses_to_turn_accounting_off() -> None:
    on = {"Size": "SMALL", "SlurmConfiguration": {"Accounting": {"Mode": "STANDARD"}}}
    assert guard.compare(_pcs({"Size": "SMALL"}), _pcs(on)) == []  # turning it on is an update PCS takes
    for off in ({"Size": "SMALL"}, {"Size": "SMALL", "SlurmConfiguration": {"Accounting": {"Mode": "NONE"}}}):
        [found] = guard.compare(_pcs(on), _pcs(off))
        assert found.logical_id == "Cluster" and "cannot turn Slurm accounting off" in found.reason
        assert "the cluster must be deleted" in found.reason


def test_plan_against_a_pcs_project_that_drops_accounting_exits_3(tmp_path: Path) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(PCS_ACCOUNTING)
    new.write_text(PCS_ACCOUNTING.replace("enabled: true", "enabled: false"))
    result = CliRunner().invoke(app, ["plan", str(new), "--against", str(old)])
    assert result.exit_code == REPLACEMENT_EXIT == 3, result.output
    assert "(AWS::PCS::Cluster): SlurmConfiguration/Accounting is removed" in result.stderr
    assert "cannot turn Slurm accounting off" in result.stderr and "the cluster must be deleted" in result.stderr
