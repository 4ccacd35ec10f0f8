"""NAME-storage: FSx properties, associations, retention, encryption, security groups."""

from __future__ import annotations

from aws_cdk.assertions import Match, Template
from pathlib import Path

import pytest
from fmcluster.stacks.app import synthesize
from fmcluster.stacks.storage import association_id
from support import BASE, Synthesized


def _t(synthesized: Synthesized, project: str) -> Template:
    return Template.from_json(synthesized.template(f"{project}-storage"))


def test_file_system_from_the_plan(synthesized: Synthesized) -> None:
    t = _t(synthesized, "p5-odcr")
    t.has_resource("AWS::FSx::FileSystem", {
        "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
        "Properties": Match.object_like({
            "FileSystemType": "LUSTRE", "StorageCapacity": 19200,
            "LustreConfiguration": Match.object_like({"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 1000,
                                                      "DataCompressionType": "LZ4",
                                                      "LogConfiguration": Match.object_like({"Level": "WARN_ERROR"})}),
        })})
    fs = next(iter(t.find_resources("AWS::FSx::FileSystem").values()))["Properties"]
    assert len(fs["SubnetIds"]) == 1 and len(fs["SecurityGroupIds"]) == 1
    assert "EfaEnabled" not in fs["LustreConfiguration"]


def test_efa_file_system_joins_the_efa_group(synthesized: Synthesized) -> None:
    b300 = next(iter(_t(synthesized, "p6-b300-capacity-block").find_resources("AWS::FSx::FileSystem").values()))
    fs = b300["Properties"]
    assert fs["LustreConfiguration"]["EfaEnabled"] is True
    assert len(fs["SecurityGroupIds"]) == 2
    assert fs["LustreConfiguration"]["MetadataConfiguration"] == {"Mode": "USER_PROVISIONED", "Iops": 24000}
    # EFA-enabled sizes come in the tier's step (4,800 GiB at 1000 MB/s/TiB); 36,000 GiB would be refused
    assert fs["StorageCapacity"] % 4800 == 0 and fs["LustreConfiguration"]["PerUnitStorageThroughput"] == 1000


def test_scratch_has_no_throughput_tier(synthesized: Synthesized) -> None:
    fs = next(iter(_t(synthesized, "p4d-on-demand").find_resources("AWS::FSx::FileSystem").values()))["Properties"]
    assert fs["LustreConfiguration"]["DeploymentType"] == "SCRATCH_2"
    assert "PerUnitStorageThroughput" not in fs["LustreConfiguration"]


def test_associations_keyed_by_path_with_their_events(synthesized: Synthesized) -> None:
    resources = synthesized.template("p5-odcr-storage")["Resources"]
    datasets = resources[association_id("/datasets")]
    checkpoints = resources[association_id("/checkpoints")]
    assert datasets["DeletionPolicy"] == "Retain" and checkpoints["DeletionPolicy"] == "Retain"
    assert datasets["Properties"]["S3"] == {"AutoImportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]}}
    # the project's own bucket: new and changed files go out by default, deletions do not
    assert checkpoints["Properties"]["S3"] == {"AutoExportPolicy": {"Events": ["NEW", "CHANGED"]}}
    assert checkpoints["Properties"]["BatchImportMetaDataOnCreate"] is False
    assert datasets["Properties"]["FileSystemPath"] == "/datasets"
    assert "/datasets/" in str(datasets["Properties"]["DataRepositoryPath"])


def test_association_ids_do_not_depend_on_position() -> None:
    assert association_id("/datasets") == association_id("/datasets")
    assert association_id("/a-b") != association_id("/a_b")  # sanitised alike, told apart by the hash


def test_bucket_is_safe(synthesized: Synthesized) -> None:
    t = _t(synthesized, "default")
    t.has_resource("AWS::S3::Bucket", {"DeletionPolicy": "Retain", "Properties": Match.object_like({
        "VersioningConfiguration": {"Status": "Enabled"},
        "PublicAccessBlockConfiguration": {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                           "IgnorePublicAcls": True, "RestrictPublicBuckets": True},
        "BucketEncryption": Match.any_value(),
        "LoggingConfiguration": Match.object_like({"LogFilePrefix": "data-bucket/"}),
    })})
    policies = t.find_resources("AWS::S3::BucketPolicy")
    assert policies and all("aws:SecureTransport" in str(p) for p in policies.values())
    for bucket in t.find_resources("AWS::S3::Bucket").values():
        assert bucket["DeletionPolicy"] == "Retain"


def test_kms_encryption_when_asked(synthesized: Synthesized) -> None:
    t = _t(synthesized, "p6-b300-capacity-block")
    t.has_resource_properties("AWS::S3::Bucket", {"BucketEncryption": {"ServerSideEncryptionConfiguration": [
        Match.object_like({"ServerSideEncryptionByDefault": Match.object_like({"SSEAlgorithm": "aws:kms"}),
                           "BucketKeyEnabled": True})]}})


def test_existing_bucket_and_file_system_need_no_stack(synthesized: Synthesized) -> None:
    assert "p5e-existing-vpc-storage" not in synthesized.templates


def test_mount_contract_outputs(synthesized: Synthesized) -> None:
    outputs = synthesized.template("default-storage")["Outputs"]
    assert {"BucketName", "FileSystemId", "FileSystemDnsName", "FileSystemMountName", "FileSystemMountPath"} <= set(outputs)
    assert outputs["FileSystemMountPath"]["Value"] == "/fsx"


INVENTORY = {
    # Logical IDs of stateful resources are promises to deployed stacks: changing one replaces
    # the data behind it. If this test fails, you renamed something a user's data lives in.
    ("p5-odcr-storage", "AccessLogsBucket83982689", "AWS::S3::Bucket"),
    ("p5-odcr-storage", "DataBucketE3889A50", "AWS::S3::Bucket"),
    ("p5-odcr-storage", "FileSystem", "AWS::FSx::FileSystem"),
    ("p5-odcr-storage", "AssociationDatasetsCB6DE1DB", "AWS::FSx::DataRepositoryAssociation"),
    ("p5-odcr-storage", "AssociationCheckpoints13DF7A11", "AWS::FSx::DataRepositoryAssociation"),
    ("p5-odcr-observability", "PrometheusWorkspace", "AWS::APS::Workspace"),
}


def test_stateful_logical_ids_are_pinned(synthesized: Synthesized) -> None:
    from fmcluster.guard import STATEFUL_TYPES

    found = {(stack, logical_id, r["Type"])
             for stack, template in synthesized.templates.items() if stack.rsplit("-", 1)[0] == "p5-odcr"
             for logical_id, r in template["Resources"].items() if r["Type"] in STATEFUL_TYPES}
    assert found == INVENTORY


def test_every_stateful_resource_is_retained(synthesized: Synthesized) -> None:
    from fmcluster.guard import STATEFUL_TYPES

    for stack, template in synthesized.templates.items():
        for logical_id, r in template["Resources"].items():
            # a HyperPod or PCS cluster holds no data: like ParallelCluster's it goes with its stack (the guard
            # still refuses to replace it, which would end every running job)
            if r["Type"] in STATEFUL_TYPES and r["Type"] not in ("AWS::SageMaker::Cluster", "AWS::PCS::Cluster",
                                                                  "AWS::EKS::Cluster"):
                assert r.get("DeletionPolicy") == "Retain" and r.get("UpdateReplacePolicy") == "Retain", (stack, logical_id)


EXPORTS = BASE + """storage:
  external_buckets: [team-datasets]
  fsx:
    associations:
      - file_system_path: /datasets
        data_repository_path: s3://team-datasets/llm/
      - file_system_path: /checkpoints
      - file_system_path: /mirror
        export_events: [NEW, CHANGED, DELETED]
      - file_system_path: /shared
        data_repository_path: s3://team-datasets/shared/
        export_events: [NEW]
"""


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("exports")
    (folder / "demo.yaml").write_text(EXPORTS)
    return synthesize(folder / "demo.yaml", folder / "out")["demo-storage"]["Resources"]


def test_an_association_into_a_bucket_the_project_does_not_own_imports_only(exports: dict) -> None:
    s3 = exports[association_id("/datasets")]["Properties"]["S3"]
    assert "AutoExportPolicy" not in s3  # `rm -r /fsx/datasets` deletes nothing in the team's bucket
    assert s3["AutoImportPolicy"] == {"Events": ["NEW", "CHANGED", "DELETED"]}


def test_no_association_exports_deletions_unless_asked(exports: dict) -> None:
    events = {path: exports[association_id(path)]["Properties"]["S3"].get("AutoExportPolicy", {}).get("Events")
              for path in ("/datasets", "/checkpoints", "/mirror", "/shared")}
    assert events == {"/datasets": None, "/checkpoints": ["NEW", "CHANGED"], "/mirror": ["NEW", "CHANGED", "DELETED"],
                      "/shared": ["NEW"]}


def test_the_plan_says_what_an_association_deletes(tmp_path: Path) -> None:
    from fmcluster.plan.associations import plan_associations
    from support import plan_of

    planned = {a.file_system_path: a for a in plan_associations(plan_of(EXPORTS).storage.spec)}
    mirror = "\n".join(planned["/mirror"].words("demo"))
    assert "deleting a file under /mirror deletes it in s3://<the demo-storage bucket>/mirror/" in mirror
    datasets = "\n".join(planned["/datasets"].words("demo"))
    assert "a bucket the project does not own" in datasets and "exports nothing (import only)" in datasets
    assert "deletes it" not in datasets
    assert "deleting a file under /checkpoints leaves it in" in "\n".join(planned["/checkpoints"].words("demo"))
