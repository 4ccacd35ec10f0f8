"""`plan --against OLD`: the verdict first, then what changes in place and what is replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import BASE
from typer.testing import CliRunner

from fmcluster.cli import app, plandiff
from fmcluster.guard import Replacement

OLD = BASE + "storage:\n  fsx:\n    throughput_per_tib: 250\n"


def _lt(name: str, version: str = "1") -> dict:
    return {"Type": "AWS::EC2::LaunchTemplate",
            "Properties": {"LaunchTemplateName": name, "LaunchTemplateData": {"ImageId": version}}}


def test_differences_sort_updates_from_replacements() -> None:
    fsx = {"Type": "AWS::FSx::FileSystem", "Properties": {"StorageCapacity": 1200, "SubnetIds": ["s"], "LustreConfiguration": {
        "DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 250}}}
    old = {"demo-storage": {"Resources": {"FileSystem": fsx, "CDKMetadata": {"Type": "AWS::CDK::Metadata"}}},
           "demo-cluster": {"Resources": {"TrainLT": _lt("a"), "GoneLT": _lt("g"), "KeptLT": _lt("k")}}}
    new = {"demo-storage": {"Resources": {"FileSystem": {**fsx, "Properties": {**fsx["Properties"],
                                                                              "StorageCapacity": 2400, "LustreConfiguration": {
        "DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 500}}},
                                          "CDKMetadata": {"Type": "AWS::CDK::Metadata", "Properties": {"x": 1}}}},
           "demo-cluster": {"Resources": {"TrainLT": _lt("b", "2"), "NewLT": _lt("n"), "KeptLT": _lt("k")}}}
    found = plandiff.differences(old, new, set())
    # a nested updatable property (the throughput) beside a create-only one (the deployment type) is an update
    assert [c.format() for c in found.in_place] == [
        "demo-storage/FileSystem (AWS::FSx::FileSystem): LustreConfiguration, StorageCapacity"]
    # LaunchTemplateName is create-only in the CloudFormation schema: the template is replaced, not updated
    assert [(c.logical_id, c.properties) for c in found.replaced] == [("TrainLT", ("LaunchTemplateName",))]
    assert [c.logical_id for c in found.added] == ["NewLT"] and [c.logical_id for c in found.removed] == ["GoneLT"]


def test_what_the_guard_judged_is_not_listed_twice() -> None:
    old = {"demo-cluster": {"Resources": {"TrainLT": _lt("a")}}}
    new = {"demo-cluster": {"Resources": {"TrainLT": _lt("b")}}}
    assert plandiff.differences(old, new, {("demo-cluster", "TrainLT")}).replaced == []


def test_the_summary_starts_with_the_verdict_and_keeps_lists_short() -> None:
    many = plandiff.Comparison(replacements=[Replacement("demo-storage", "FileSystem", "AWS::FSx::FileSystem", "why")],
                               in_place=[plandiff.Change("demo-cluster", f"R{i}", "AWS::IAM::Role") for i in range(12)])
    lines = plandiff.summary("old.yaml", many)
    assert lines[0].startswith("against old.yaml: REFUSED: deploying this would replace or lose 1 resource that holds data")
    assert "exit 3" in lines[0]
    assert "  loses data (1):" in lines and "    demo-storage/FileSystem (AWS::FSx::FileSystem): why" in lines
    assert "  changes in place (12):" in lines and "    and 4 more (plan -o json lists them all)" in lines
    assert plandiff.summary("old.yaml", plandiff.Comparison([]))[:2] == [
        "against old.yaml: safe: no file system, association, bucket or workspace would be replaced",
        "  nothing changes"]


@pytest.mark.synth
def test_the_command_prints_the_verdict_before_the_plan(tmp_path: Path) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(OLD)
    new.write_text(OLD.replace("throughput_per_tib: 250", "throughput_per_tib: 250\n    storage_capacity_gib: 2400"))
    runner = CliRunner()
    result = runner.invoke(app, ["plan", str(new), "--against", str(old)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith(f"against {old}: safe")
    assert "demo-storage/FileSystem (AWS::FSx::FileSystem): StorageCapacity" in text.split("compute groups")[0]
    result = runner.invoke(app, ["plan", str(new), "--against", str(old), "-o", "json"])
    changes = json.loads(result.stdout)["changes"]
    assert changes["verdict"] == "safe"
    assert {"stack": "demo-storage", "logical_id": "FileSystem", "type": "AWS::FSx::FileSystem",
            "properties": ["StorageCapacity"]} in changes["in_place"]


def test_turning_accounting_on_is_named_as_needing_the_fleet_stopped(tmp_path: Path) -> None:
    """SlurmSettings.Database has update policy COMPUTE_FLEET_STOP (ParallelCluster 3.16.1): the plan says so, and
    nothing else: the head node's bundle, which changes with accounting, changes only its pointer and its
    OnNodeUpdated digest (SUPPORTED), never OnNodeConfigured."""
    pc = BASE + "orchestrator: {type: parallelcluster}\n"
    (tmp_path / "old.yaml").write_text(pc)
    (tmp_path / "new.yaml").write_text(pc.replace("parallelcluster}", "parallelcluster, accounting: {enabled: true}}"))
    runner = CliRunner()
    result = runner.invoke(app, ["plan", str(tmp_path / "new.yaml"), "--against", str(tmp_path / "old.yaml")])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert ("demo-slurm: Scheduling.SlurmSettings.Database added (update policy COMPUTE_FLEET_STOP: needs the compute "
            "fleet stopped)") in text
    assert "UNSUPPORTED" not in text and "CustomActions" not in text
    assert "--stop-fleet stops it around the deploy" in text
    result = runner.invoke(app, ["plan", str(tmp_path / "new.yaml"), "--against", str(tmp_path / "old.yaml"),
                                 "-o", "json"])
    updates = json.loads(result.stdout)["changes"]["cluster_updates"]
    assert {"cluster": "demo-slurm", "key": "Scheduling.SlurmSettings.Database",
            "change": "Scheduling.SlurmSettings.Database added", "update_policy": "COMPUTE_FLEET_STOP",
            "needs": "fleet"} in updates
    assert [u["key"] for u in updates] == ["Scheduling.SlurmSettings.Database"]


def test_a_change_parallelcluster_applies_running_is_not_named(tmp_path: Path) -> None:
    pc = BASE + "orchestrator: {type: parallelcluster}\n"
    (tmp_path / "old.yaml").write_text(pc)
    (tmp_path / "new.yaml").write_text(pc.replace("count: 2", "count: 4"))  # MaxCount grows: allowed running
    result = CliRunner().invoke(app, ["plan", str(tmp_path / "new.yaml"), "--against", str(tmp_path / "old.yaml")])
    assert result.exit_code == 0 and "needs more than a ParallelCluster update" not in result.output, result.output
    assert "Custom::PclusterCluster" in result.output  # it is a change, listed in place


def test_a_change_parallelcluster_never_applies_is_refused_by_plan_as_by_deploy(tmp_path: Path) -> None:
    """HeadNode.InstanceType has update policy UNSUPPORTED (ParallelCluster 3.16.1): deploy exits 3 before cdk runs
    (deployfleet.refuse_impossible), and plan --against says the same with the same exit code, not 0."""
    pc = BASE + "orchestrator: {type: parallelcluster, parallelcluster: {head_node_instance_type: m7i.xlarge}}\n"
    (tmp_path / "old.yaml").write_text(pc)
    (tmp_path / "new.yaml").write_text(pc.replace("m7i.xlarge", "m7i.2xlarge"))
    result = CliRunner().invoke(app, ["plan", str(tmp_path / "new.yaml"), "--against", str(tmp_path / "old.yaml")])
    assert result.exit_code == 3, result.output
    text = " ".join(result.output.split())
    assert "HeadNode.InstanceType" in text and "a new cluster: ParallelCluster does not update it" in text
    assert "fmcluster deploy would refuse this" in text


HYPERPOD = BASE + "orchestrator: {type: hyperpod}\n"


def test_a_hyperpod_lifecycle_change_says_running_nodes_keep_their_old_scripts(tmp_path: Path) -> None:
    """The lifecycle scripts reach HyperPod through an upload to a fixed prefix: the cluster resource does not change,
    and HyperPod runs them only on new nodes (AWS: UpdateCluster runs them for new instance groups only)."""
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(HYPERPOD)
    new.write_text(HYPERPOD + "storage:\n  scratch: {mount_path: /scratch2}\n")  # rendered into every bundle
    runner = CliRunner()
    result = runner.invoke(app, ["plan", str(new), "--against", str(old)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert ("HyperPod lifecycle scripts change in demo-cluster: nodes already running keep the scripts they started "
            "with until they are replaced") in text
    assert "aws sagemaker update-cluster-software --cluster-name ARN" in text
    same = runner.invoke(app, ["plan", str(old), "--against", str(old), "-o", "json"])
    assert json.loads(same.stdout)["changes"]["lifecycle_scripts_change"] == []


def test_the_lifecycle_note_needs_a_hyperpod_cluster_in_the_stack() -> None:
    upload = {"Type": "Custom::CDKBucketDeployment", "Properties": {"SourceObjectKeys": ["a.zip"]}}
    cluster = {"Type": "AWS::SageMaker::Cluster", "Properties": {"InstanceGroups": []}}
    old = {"demo-cluster": {"Resources": {"Upload": upload, "Cluster": cluster}},
           "demo-other": {"Resources": {"Upload": upload}}}
    new = {"demo-cluster": {"Resources": {"Upload": {**upload, "Properties": {"SourceObjectKeys": ["b.zip"]}},
                                          "Cluster": cluster}},
           "demo-other": {"Resources": {"Upload": {**upload, "Properties": {"SourceObjectKeys": ["b.zip"]}}}}}
    assert plandiff.lifecycle_changes(plandiff.differences(old, new, set()), new) == ["demo-cluster"]
