"""Would AWS accept what we synthesize? Every template of every project and example, read the way the
AWS APIs read it (:mod:`support.api_rules`), and synthesis that gives the same bytes in two processes.

The API checker maps each literal property to the API parameter it becomes and checks it against
botocore's service model and the rules the API documentation adds. CloudFormation intrinsics and
dynamic references are skipped (they have values only at deploy time); policy documents and the
ParallelCluster configuration are left to cfn-lint, cdk-nag and ParallelCluster's own schema.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import ALL_FILES, ROOT, Synthesized
from support import api_rules as rules
from support.api_rules import Report, check_resource, check_template

KNOWN_DEFECTS: dict[tuple[str, str, str], str] = {
    # (stack, logical id, property path as in a Finding) -> the defect; each becomes a strict xfail below,
    # so the fix that removes the defect turns it into a failure that asks for the entry's removal.
}


@pytest.fixture(scope="session")
def api_report(synthesized: Synthesized) -> Report:
    report = Report()
    for stack, template in sorted(synthesized.templates.items()):
        report.extend(check_template(stack, template))
    return report


def test_every_template_meets_the_api_rules(api_report: Report) -> None:
    assert api_report.checked > 1000  # every project and example, not an empty walk
    unexpected = [f for f in api_report.findings if f.key not in KNOWN_DEFECTS]
    assert not unexpected, "\n".join(map(str, unexpected))


if KNOWN_DEFECTS:  # an empty parametrization would be reported as a skip
    @pytest.mark.parametrize("key", [
        pytest.param(key, id="/".join(key), marks=pytest.mark.xfail(strict=True, reason=f"{why} (issue 10)"))
        for key, why in KNOWN_DEFECTS.items()])
    def test_known_defect(api_report: Report, key: tuple[str, str, str]) -> None:
        assert not [str(f) for f in api_report.findings if f.key == key]


def test_every_literal_property_maps_to_an_api_parameter(api_report: Report) -> None:
    """A property nobody mapped would pass unchecked: map it in TABLE, or say in NOT_API why not."""
    assert not api_report.unmapped, "\n".join(map(str, api_report.unmapped))


def test_intrinsics_are_skipped_and_listed(api_report: Report) -> None:
    assert api_report.skipped
    assert {f.message for f in api_report.skipped} == {"intrinsic: known only at deploy time"}


# --- the tables themselves ------------------------------------------------------------------------

def _rows() -> list[tuple[str, str]]:
    out = []
    for rtype, (base, rows) in rules.TABLE.items():
        out.append((rtype, base))
        for path, target in rows.items():
            params = (rules.Param(target),) if isinstance(target, str) else target
            out += [(f"{rtype} {path} ({p.when or 'always'})", p.api) for p in params]
    return out


@pytest.mark.parametrize(("row", "api"), _rows(), ids=[r[0] for r in _rows()])
def test_table_rows_name_real_api_parameters(row: str, api: str) -> None:
    shape, owner = rules.resolve(api)  # KeyError: the model has no such member
    assert owner.split(":")[0] in rules.EXTERNAL_APIS or shape is not None, row


@pytest.mark.parametrize("owner", sorted(rules.DOCUMENTED))
def test_documented_rules_name_a_parameter_and_quote_its_source(owner: str) -> None:
    service = owner.split(":")[0]
    for rule in rules.DOCUMENTED[owner]:
        assert rule.source and rule.says
        if service in rules.EXTERNAL_APIS:
            assert rule.quote is None
            continue
        text = rules.documentation(owner)  # KeyError: no such structure member in the model
        if rule.quote is not None:
            assert rule.quote in text, f"{owner}: botocore's documentation no longer says {rule.quote!r}:\n{text}"
        else:
            assert "docs.aws.amazon.com" in rule.source, f"{owner}: a rule not from botocore names its document"


# --- each check can fail: plant a bad value in a copy of a real resource ----------------------------

PLANTED: list[tuple[str, str, dict[str, Any], str, str]] = [
    # (case, resource type, {property path: bad value}, property the finding names, what it says)
    ("sg-rule-object-repr", "AWS::EC2::SecurityGroupIngress",
     {"Description": "Lustre <aws_cdk.aws_ec2.Port object at 0x7f3a>"}, "Description", "not allowed: '<>'"),
    ("sg-description-charset", "AWS::EC2::SecurityGroup", {"GroupDescription": "nodes \u2192 FSx"},
     "GroupDescription", "not allowed"),
    ("sg-group-pair-no-ampersand", "AWS::EC2::SecurityGroupIngress",
     {"Description": "EFA & Lustre", "SourceSecurityGroupId": {"Ref": "Sg"}}, "Description", "not allowed: '&'"),
    ("launch-template-name", "AWS::EC2::LaunchTemplate", {"LaunchTemplateName": "train group"},
     "LaunchTemplateName", "does not match"),
    ("instance-type-enum", "AWS::EC2::LaunchTemplate", {"LaunchTemplateData.InstanceType": "p5.96xlarge"},
     "LaunchTemplateData.InstanceType", "is not one of"),
    ("efa-only-with-ip", "AWS::EC2::LaunchTemplate",
     {"LaunchTemplateData.NetworkInterfaces": [{"DeviceIndex": 0, "InterfaceType": "efa-only",
                                                 "PrivateIpAddress": "10.0.0.5"}]},
     "LaunchTemplateData.NetworkInterfaces[].InterfaceType", "efa-only with ['PrivateIpAddress']"),
    ("lustre-capacity-step", "AWS::FSx::FileSystem", {"StorageCapacity": 3000}, "StorageCapacity", "multiple of 2400"),
    ("efa-capacity-step", "AWS::FSx::FileSystem",
     {"StorageCapacity": 36000, "LustreConfiguration.EfaEnabled": True,
      "LustreConfiguration.PerUnitStorageThroughput": 1000, "LustreConfiguration.DeploymentType": "PERSISTENT_2"},
     "StorageCapacity", "multiples of 4800 GiB"),
    ("lustre-throughput-max", "AWS::FSx::FileSystem",
     {"LustreConfiguration.PerUnitStorageThroughput": 2000, "LustreConfiguration.DeploymentType": "PERSISTENT_2"},
     "LustreConfiguration.PerUnitStorageThroughput", "above the maximum 1000"),
    ("lustre-deployment-enum", "AWS::FSx::FileSystem", {"LustreConfiguration.DeploymentType": "PERSISTENT_3"},
     "LustreConfiguration.DeploymentType", "is not one of"),
    ("metadata-iops-step", "AWS::FSx::FileSystem",
     {"LustreConfiguration.MetadataConfiguration": {"Mode": "USER_PROVISIONED", "Iops": 20000}},
     "LustreConfiguration.MetadataConfiguration.Iops", "multiple of 12000"),
    ("grafana-permission-type", "AWS::Grafana::Workspace", {"PermissionType": "SERVICE_MANAGED"},
     "PermissionType", "only the console"),
    ("grafana-data-sources", "AWS::Grafana::Workspace", {"DataSources": ["PROMETHEUS"]}, "DataSources[]",
     "internal use"),
    ("grafana-name-pattern", "AWS::Grafana::Workspace", {"Name": "my workspace!"}, "Name", "does not match"),
    ("log-retention", "AWS::Logs::LogGroup", {"RetentionInDays": 42}, "RetentionInDays", "retention periods"),
    ("ec2-tag-prefix", "AWS::EC2::VPC", {"Tags": [{"Key": "aws:owner", "Value": "x"}]}, "Tags[].Key", "aws:"),
    ("fsx-tag-pattern", "AWS::FSx::FileSystem", {"Tags": [{"Key": "cost#centre", "Value": "x"}]}, "Tags[].Key",
     "does not match"),
    ("iam-role-description", "AWS::IAM::Role", {"Description": "nodes \u2192 S3"}, "Description", "does not match"),
    ("aps-alias-length", "AWS::APS::Workspace", {"Alias": ""}, "Alias", "outside 1..100"),
    ("bucket-lifecycle-days", "AWS::S3::Bucket",
     {"LifecycleConfiguration": {"Rules": [{"Status": "Enabled", "ExpirationInDays": 0}]}},
     "LifecycleConfiguration.Rules[].ExpirationInDays", "not a positive integer"),
    ("pcluster-name", "Custom::PclusterCluster", {"ClusterName": "1-cluster"}, "ClusterName", "'1-cluster'"),
]


def _first(synthesized: Synthesized, rtype: str) -> tuple[str, str, dict]:
    for stack, template in sorted(synthesized.templates.items()):
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] == rtype:
                return stack, logical_id, copy.deepcopy(resource)
    raise AssertionError(f"no {rtype} in any synthesized template")


def _plant(resource: dict, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = resource.setdefault("Properties", {})
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


@pytest.mark.parametrize(("rtype", "edits", "prop", "says"), [p[1:] for p in PLANTED], ids=[p[0] for p in PLANTED])
def test_checker_catches_a_planted_value(synthesized: Synthesized, rtype: str, edits: dict, prop: str,
                                         says: str) -> None:
    stack, logical_id, resource = _first(synthesized, rtype)
    before = [f for f in check_resource(stack, logical_id, resource).findings if f.prop == prop]
    for path, value in edits.items():
        _plant(resource, path, value)
    report = check_resource(stack, logical_id, resource)
    after = [str(f) for f in report.findings if f.prop == prop]
    assert not before, before
    assert any(says in f for f in after), f"expected {says!r} at {prop}; got {after or report.findings}"


def test_an_intrinsic_is_skipped_not_judged(synthesized: Synthesized) -> None:
    stack, logical_id, resource = _first(synthesized, "AWS::EC2::SecurityGroup")
    _plant(resource, "GroupDescription", {"Fn::Sub": "<not checked: ${AWS::StackName}>"})
    report = check_resource(stack, logical_id, resource)
    assert not [f for f in report.findings if f.prop == "GroupDescription"]
    assert [f for f in report.skipped if f.prop == "GroupDescription"]


def test_an_unmapped_property_or_type_is_reported(synthesized: Synthesized) -> None:
    stack, logical_id, resource = _first(synthesized, "AWS::EC2::VPC")
    _plant(resource, "Ipv4NetmaskLengthish", 16)
    assert [f.prop for f in check_resource(stack, logical_id, resource).unmapped] == ["Ipv4NetmaskLengthish"]
    unknown = check_resource(stack, "Thing", {"Type": "AWS::Made::Up", "Properties": {"Name": "x"}})
    assert [f.message for f in unknown.unmapped] == ["no row in TABLE for AWS::Made::Up"]


# --- synthesis is deterministic across processes ---------------------------------------------------

def _synth_in_a_process(outdir: Path, hash_seed: str) -> dict[str, bytes]:
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    context["project"] = ",".join(str(p) for p in ALL_FILES)
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(outdir),
           "PYTHONHASHSEED": hash_seed}  # different set/dict-of-str orders in the two processes
    result = subprocess.run([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env, capture_output=True,
                            text=True, check=False, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return {str(p.relative_to(outdir)): p.read_bytes() for p in sorted(outdir.rglob("*")) if p.is_file()}


@pytest.mark.synth
def test_synthesis_is_byte_identical_across_processes(synthesized: Synthesized, tmp_path: Path) -> None:
    """Every project and example, synthesized twice: by the test session's shared synthesis (this worker's process,
    its own random hash seed) and by app.py in a process of its own (a fixed seed): same files, same bytes
    (templates, asset manifests and the bootstrap bundle assets)."""
    outdir = synthesized.outdir
    first = {str(p.relative_to(outdir)): p.read_bytes() for p in sorted(outdir.rglob("*")) if p.is_file()}
    second = _synth_in_a_process(tmp_path / "two", "2")
    assert sum(name.endswith(".template.json") for name in first) >= 4 * len(ALL_FILES) - 2
    assert any(name.startswith("asset.") for name in first)
    assert sorted(first) == sorted(second)
    differing = [name for name in first if first[name] != second[name]]
    assert not differing, differing


# --- AWS PCS: a hand-written template that mirrors CloudFormation's AWS::PCS::* schemas -----------------
# (the PCS stack is built elsewhere; once examples synthesize PCS resources, api_report above checks them too,
# because check_resource knows the types: TABLE rows and api_requests.REQUESTS)

PCS_FRAGMENT: dict[str, Any] = {"Resources": {
    "Cluster": {"Type": "AWS::PCS::Cluster", "Properties": {
        "Name": "demo",
        "Networking": {"SubnetIds": [{"Ref": "ComputeSubnet"}], "SecurityGroupIds": [{"Ref": "ClusterSg"}],
                       "NetworkType": "IPV4"},
        "Scheduler": {"Type": "SLURM", "Version": "25.05"},
        "Size": "SMALL",
        "SlurmConfiguration": {"ScaleDownIdleTimeInSeconds": 600,
                               "SlurmCustomSettings": [{"ParameterName": "PrologFlags", "ParameterValue": "Alloc"}],
                               "Accounting": {"Mode": "STANDARD", "DefaultPurgeTimeInDays": 30},
                               "SlurmRest": {"Mode": "NONE"}},
        "Tags": {"fmcluster:project": "demo", "team": "research"}}},
    "Nodes": {"Type": "AWS::PCS::ComputeNodeGroup", "Properties": {
        "ClusterId": {"Fn::GetAtt": ["Cluster", "Id"]},
        "Name": "gpu",
        "AmiId": "ami-0123456789abcdef0",
        "IamInstanceProfileArn": {"Fn::GetAtt": ["NodeProfile", "Arn"]},
        "CustomLaunchTemplate": {"TemplateId": {"Ref": "GpuLaunchTemplate"},
                                 "Version": {"Fn::GetAtt": ["GpuLaunchTemplate", "LatestVersionNumber"]}},
        "InstanceConfigs": [{"InstanceType": "p5.48xlarge"}],
        "PurchaseOption": "CAPACITY_BLOCK",
        "ScalingConfiguration": {"MinInstanceCount": 2, "MaxInstanceCount": 2},
        "SubnetIds": [{"Ref": "ComputeSubnet"}],
        "SlurmConfiguration": {"ScaleDownIdleTimeInSeconds": 600,
                               "SlurmCustomSettings": [{"ParameterName": "Weight", "ParameterValue": "1"}]},
        "NodeLifecycleActions": {"ScriptCachingPolicy": "CACHE_ONCE", "Stages": {"NodeReady": [
            {"Name": "fmcluster-bootstrap", "OnError": "TERMINATE", "ExecutionPolicy": "EVERY_BOOT",
             "ScriptSource": {"ScriptLocation": {"Fn::Sub": "s3://${Bucket}/bootstrap/entry.sh"}}}]}},
        "Tags": {"fmcluster:project": "demo"}}},
    "Queue": {"Type": "AWS::PCS::Queue", "Properties": {
        "ClusterId": {"Fn::GetAtt": ["Cluster", "Id"]},
        "Name": "gpu",
        "ComputeNodeGroupConfigurations": [{"ComputeNodeGroupId": {"Fn::GetAtt": ["Nodes", "Id"]}}],
        "SlurmConfiguration": {"SlurmCustomSettings": [{"ParameterName": "MaxTime", "ParameterValue": "UNLIMITED"}]},
        "Tags": {"fmcluster:project": "demo"}}},
}}

PCS_TYPES = ("AWS::PCS::Cluster", "AWS::PCS::ComputeNodeGroup", "AWS::PCS::Queue")


def _pcs_schema(rtype: str) -> dict:
    """cfn-lint's copy of CloudFormation's resource schema (us-east-1) for ``rtype``."""
    import cfnlint

    schemas = Path(cfnlint.__file__).parent / "data" / "schemas"
    digest = json.loads((schemas / "providers" / "us-east-1.json").read_text())[rtype]
    return json.loads((schemas / "resources" / f"{digest}.json").read_text())


def test_the_pcs_fragment_meets_the_api_rules() -> None:
    report = check_template("pcs-fragment", PCS_FRAGMENT)
    assert not report.findings, "\n".join(map(str, report.findings))
    assert not report.unmapped, "\n".join(map(str, report.unmapped))
    assert report.checked >= 30  # the literals were checked, not skipped
    assert {f.logical_id for f in report.skipped} == {"Cluster", "Nodes", "Queue"}


def test_the_pcs_fragment_is_what_cloudformation_accepts() -> None:
    """The fragment itself against the CloudFormation schemas (cfn-lint), so the API check reads real properties."""
    from cfnlint.api import ManualArgs, lint

    template = copy.deepcopy(PCS_FRAGMENT)
    template["AWSTemplateFormatVersion"] = "2010-09-09"
    template["Parameters"] = {name: {"Type": "String"} for name in
                              ("ComputeSubnet", "ClusterSg", "GpuLaunchTemplate", "Bucket")}
    template["Resources"]["NodeProfile"] = {"Type": "AWS::IAM::InstanceProfile", "Properties": {"Roles": ["r"]}}
    template["Resources"]["GpuLaunchTemplate"] = {"Type": "AWS::EC2::LaunchTemplate", "Properties": {
        "LaunchTemplateData": {"InstanceType": "p5.48xlarge"}}}
    del template["Parameters"]["GpuLaunchTemplate"]
    errors = [m for m in lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"]))
              if m.rule.id.startswith("E")]
    assert not errors, "\n".join(str(m)[:300] for m in errors[:10])


@pytest.mark.parametrize("rtype", PCS_TYPES)
def test_every_writable_pcs_property_is_mapped(rtype: str) -> None:
    """Each property CloudFormation lets a template write is named in api_requests.REQUESTS (or its TABLE row
    resolves), so a PCS stack cannot carry one that passes unchecked."""
    schema = _pcs_schema(rtype)
    read_only = {p.rsplit("/", 1)[-1] for p in schema.get("readOnlyProperties", [])}
    writable = set(schema["properties"]) - read_only
    request = rules.api_requests.REQUESTS[rtype]
    missing = writable - set(request.top) - set(request.not_api)
    # AuthKey and JwtAuth (Cluster.SlurmConfiguration) are nested: they are reported when used (see below)
    assert not missing, f"{rtype}: properties REQUESTS does not map: {sorted(missing)}"
    shape = rules.api_requests.input_shape(request.operation)
    assert set(request.top.values()) <= set(shape.members), sorted(set(request.top.values()) - set(shape.members))


PCS_PLANTED: list[tuple[str, str, dict[str, Any], str, str]] = [
    # (case, logical id, {property path: bad value}, the finding's property, what it says)
    ("size-enum", "Cluster", {"Size": "HUGE"}, "Size", "is not one of"),
    ("purchase-option-enum", "Nodes", {"PurchaseOption": "RESERVED"}, "PurchaseOption", "is not one of"),
    ("accounting-mode-enum", "Cluster", {"SlurmConfiguration.Accounting.Mode": "FULL"},
     "SlurmConfiguration.Accounting.Mode", "is not one of"),
    ("cluster-name-prefix", "Cluster", {"Name": "pcs_demo"}, "Name", "does not match"),
    ("node-group-name-length", "Nodes", {"Name": "a-name-longer-than-25-chars"}, "Name", "outside 3..25"),
    ("queue-name-pattern", "Queue", {"Name": "1gpu"}, "Name", "does not match"),
    ("slurm-version", "Cluster", {"Scheduler.Version": "22.05"}, "Scheduler.Version", "Slurm versions PCS offers"),
    ("scale-down-max", "Nodes", {"SlurmConfiguration.ScaleDownIdleTimeInSeconds": 20_000_000},
     "SlurmConfiguration.ScaleDownIdleTimeInSeconds", "above the maximum"),
    ("min-count-not-a-number", "Nodes", {"ScalingConfiguration.MinInstanceCount": "two"},
     "ScalingConfiguration.MinInstanceCount", "not a number"),
    ("script-location", "Nodes", {"NodeLifecycleActions.Stages.NodeReady": [
        {"Name": "x", "ScriptSource": {"ScriptLocation": "ftp://host/entry.sh"}}]},
     "NodeLifecycleActions.Stages.NodeReady[].ScriptSource.ScriptLocation", "does not match"),
    ("ami-pattern", "Nodes", {"AmiId": "image-0123"}, "AmiId", "does not match"),
    ("tag-key-length", "Queue", {"Tags": {"k" * 129: "v"}}, f"Tags.{'k' * 129}", "map key: 129 characters"),
    # botocore's request validation: the whole request, required members and kinds
    ("scheduler-version-missing", "Cluster", {"Scheduler": {"Type": "SLURM"}}, "",
     "botocore: Missing required parameter in scheduler: \"version\""),
    ("scaling-max-missing", "Nodes", {"ScalingConfiguration": {"MinInstanceCount": 0}}, "",
     "Missing required parameter in scalingConfiguration: \"maxInstanceCount\""),
    ("instance-configs-not-a-list", "Nodes", {"InstanceConfigs": {"InstanceType": "p5.48xlarge"}}, "",
     "Invalid type for parameter instanceConfigs"),
]


def _pcs_planted(logical_id: str, edits: dict[str, Any]) -> dict:
    resource = copy.deepcopy(PCS_FRAGMENT["Resources"][logical_id])
    for path, value in edits.items():
        _plant(resource, path, value)
    return resource


@pytest.mark.parametrize(("logical_id", "edits", "prop", "says"), [p[1:] for p in PCS_PLANTED],
                         ids=[p[0] for p in PCS_PLANTED])
def test_pcs_checker_catches_a_planted_value(logical_id: str, edits: dict, prop: str, says: str) -> None:
    report = check_resource("pcs-fragment", logical_id, _pcs_planted(logical_id, edits))
    found = [str(f) for f in report.findings if f.prop == prop]
    assert any(says in f for f in found), f"expected {says!r} at {prop!r}; got {report.findings}"


@pytest.mark.parametrize(("logical_id", "path", "value"), [
    ("Cluster", "Networking.SubnetId", ["subnet-0123"]),          # a typo of SubnetIds
    ("Cluster", "SlurmConfiguration.AuthKey", {"SecretArn": "arn:aws:secretsmanager:us-east-1:1:secret:k",
                                               "SecretVersion": "1"}),  # in CloudFormation, not in botocore's API
    ("Nodes", "CustomLaunchTemplate.LaunchTemplateId", "lt-0123"),  # the EC2 name, not PCS's TemplateId
    ("Queue", "ComputeNodeGroups", ["x"]),                          # no such property
], ids=["typo", "cfn-only-member", "wrong-rename", "unknown-top-level"])
def test_an_unmapped_pcs_property_fails_loudly(logical_id: str, path: str, value: Any) -> None:
    report = check_resource("pcs-fragment", logical_id, _pcs_planted(logical_id, {path: value}))
    assert [f.prop for f in report.unmapped if f.prop.startswith(path)], report
    assert not [f for f in report.unmapped if not f.prop.startswith(path)], report.unmapped


def test_pcs_resources_in_a_synthesized_template_are_picked_up() -> None:
    """check_template, which api_report runs on every synthesized template, checks PCS resources with no
    further wiring: a bad value in a template of several stacks' kinds is found."""
    template = {"Resources": {**copy.deepcopy(PCS_FRAGMENT["Resources"]),
                              "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}}}}
    template["Resources"]["Queue"]["Properties"]["Name"] = "pcs_gpu"
    report = check_template("demo-cluster", template)
    assert [(f.logical_id, f.prop) for f in report.findings] == [("Queue", "Name")]
