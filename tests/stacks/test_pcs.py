"""The AWS PCS construct in a bare stack: cluster, node groups from our EFA launch templates, queues, the nodes'
role; cfn-lint and cdk-nag clean, deterministic, and every PCS property accepted by botocore's ``pcs`` model."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator
from cfnlint.api import ManualArgs, lint
from support import ROOT, assert_nag_clean, load, project_dict, synth_with_nag

from fmcluster import checks, config
from fmcluster.contracts import MountContract, NetworkContract
from fmcluster.generate import pcs as generate
from fmcluster.generate import placeholders

MIXED = project_dict(
    name="pcsmix",
    os="ubuntu-24.04",  # a system AWS's PCS image recipe builds on (pcs-os)
    compute_groups=[
        {"name": "ondemand", "instance_type": "p5.48xlarge", "count": 2},
        {"name": "reserved", "instance_type": "p5en.48xlarge", "count": 4,
         "capacity": {"type": "reservation", "reservation_id": "cr-0123456789abcdef0"}},
    ],
    orchestrator={"type": "pcs", "pcs": {"ami_id": "ami-0123456789abcdef0", "login": None,
                                         "groups": {"ondemand": {"min_count": 1}}},
                  "accounting": {"enabled": True}},
)
PROJECTS = {"p5-pcs": ROOT / "examples" / "p5-pcs.yaml",
            "p5en-pcs-capacity-block": ROOT / "examples" / "p5en-pcs-capacity-block.yaml", "pcsmix": MIXED}


def _synth(outdir: Path, names: list[str]) -> dict[str, Any]:
    from aws_cdk import App, Fn, Stack
    from fmcluster.bootstrap.bundles import render_group_bundles
    from fmcluster.stacks.pcs import PcsCluster

    app = App(outdir=str(outdir))
    out: dict[str, Any] = {}
    for name in names:
        source = PROJECTS[name]
        loaded = config.load(source) if isinstance(source, Path) else load(source)
        plan, _ = checks.validate(loaded)
        stack = Stack(app, f"{name}-cluster")
        imp = lambda key, n=name: Fn.import_value(f"{n}-{key}")  # noqa: E731 -- tokens, as in the real stacks
        network = NetworkContract(imp("VpcId"), imp("ComputeSubnetId"), imp("EfaSecurityGroupId"),
                                  imp("NodeSecurityGroupId"), imp("StorageSecurityGroupId"), imp("ServicesSubnetId"))
        fsx = MountContract(imp("FileSystemId"), imp("FileSystemDnsName"), imp("FileSystemMountName"), "/fsx", False)
        metrics = placeholders.metrics()
        bundles = render_group_bundles(plan.cluster, fsx, True, outdir / "bundles" / name, metrics.remote_write_url,
                                       login=plan.cluster.pcs.login is not None)
        out[name] = {"plan": plan, "construct": PcsCluster(stack, "Pcs", plan=plan.cluster, bundles=bundles,
                                                           network=network, metrics=metrics)}
    out["error"], out["report"] = synth_with_nag(app, outdir)
    for name in names:
        out[name]["template"] = json.loads((outdir / f"{name}-cluster.template.json").read_text())
    return out


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _synth(tmp_path_factory.mktemp("cdk.out"), list(PROJECTS))


def _of_type(template: dict, kind: str) -> dict[str, dict]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def _node_groups(template: dict) -> dict[str, dict]:
    return {r["Properties"]["Name"]: r["Properties"] for r in _of_type(template, "AWS::PCS::ComputeNodeGroup").values()}


def _templates(template: dict) -> dict[str, tuple[str, dict]]:
    return {r["Properties"]["LaunchTemplateName"]: (k, r["Properties"]["LaunchTemplateData"])
            for k, r in _of_type(template, "AWS::EC2::LaunchTemplate").items()}


def test_cfn_lint_clean(synth: dict) -> None:
    for name in PROJECTS:
        matches = lint(json.dumps(synth[name]["template"]),
                       config=ManualArgs(regions=["us-east-1"], include_checks=["E", "W"]))
        assert not matches, [f"{m.rule.id} {m.message} {m.path}" for m in matches]


def test_cdk_nag_clean(synth: dict) -> None:
    assert len(synth["report"]["pluginReports"]) == 1
    assert_nag_clean(synth["report"], synth["error"])


def test_node_groups_launch_from_our_templates_with_every_efa_interface(synth: dict) -> None:
    for name in PROJECTS:
        plan, template = synth[name]["plan"], synth[name]["template"]
        templates = _templates(template)
        groups = _node_groups(template)
        for group in plan.groups:
            logical, data = templates[f"{plan.project}-{group.name}"]
            node_group = groups[group.name]
            assert node_group["CustomLaunchTemplate"] == {
                "TemplateId": {"Ref": logical}, "Version": {"Fn::GetAtt": [logical, "LatestVersionNumber"]}}
            interfaces = data["NetworkInterfaces"]
            assert len(interfaces) == len(group.interfaces)
            efa = sum(i["InterfaceType"] in ("efa", "efa-only") for i in interfaces)
            assert efa == group.efa_interfaces == (32 if group.instance_type == "p5.48xlarge" else 16)
            assert "IamInstanceProfile" not in data  # the node group names the profile
            assert node_group["InstanceConfigs"] == [{"InstanceType": group.instance_type}]
            assert data["ImageId"] == node_group["AmiId"] == plan.cluster.pcs.ami_id
            assert "ComputeSubnetId" in json.dumps(node_group["SubnetIds"])


def test_user_data_is_a_mime_archive_whose_shell_part_runs_the_bundle(synth: dict) -> None:
    _, data = _templates(synth["p5-pcs"]["template"])["p5-pcs-gpu"]
    parts = data["UserData"]["Fn::Base64"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else "<token>" for p in parts)
    assert text.startswith('Content-Type: multipart/mixed; boundary="==FMCLUSTER=="\nMIME-Version: 1.0\n\n')
    assert '--==FMCLUSTER==\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash' in text
    assert text.endswith("\n\n--==FMCLUSTER==--\n") and "cloud-config" not in text


def test_capacity_block_reservation_and_on_demand(synth: dict) -> None:
    block = synth["p5en-pcs-capacity-block"]["template"]
    node_group = _node_groups(block)["train"]
    _, data = _templates(block)["p5en-pcs-capacity-block-train"]
    assert node_group["PurchaseOption"] == "CAPACITY_BLOCK"
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0fedcba9876543210"}}
    scaling = node_group["ScalingConfiguration"]
    assert scaling["MaxInstanceCount"] <= 32 and scaling == {"MinInstanceCount": 32, "MaxInstanceCount": 32}
    assert "Placement" not in data  # the block is already placed

    mixed = synth["pcsmix"]["template"]
    groups = _node_groups(mixed)
    templates = _templates(mixed)
    assert groups["reserved"]["PurchaseOption"] == "ONDEMAND"
    assert templates["pcsmix-reserved"][1]["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}}
    assert "InstanceMarketOptions" not in templates["pcsmix-reserved"][1]
    assert groups["reserved"]["ScalingConfiguration"] == {"MinInstanceCount": 4, "MaxInstanceCount": 4}
    assert groups["ondemand"]["ScalingConfiguration"] == {"MinInstanceCount": 1, "MaxInstanceCount": 2}
    assert "Placement" in templates["pcsmix-ondemand"][1]  # a cluster placement group for on-demand nodes
    assert "login" not in groups and len(_of_type(mixed, "AWS::PCS::Queue")) == 2


def test_queues_are_the_compute_groups(synth: dict) -> None:
    for name in PROJECTS:
        plan, template = synth[name]["plan"], synth[name]["template"]
        node_groups = {k: r["Properties"]["Name"] for k, r in _of_type(template, "AWS::PCS::ComputeNodeGroup").items()}
        queues = {r["Properties"]["Name"]: [node_groups[c["ComputeNodeGroupId"]["Fn::GetAtt"][0]]
                                            for c in r["Properties"]["ComputeNodeGroupConfigurations"]]
                  for r in _of_type(template, "AWS::PCS::Queue").values()}
        assert queues == {g.name: [g.name] for g in plan.groups}


def test_login_group_beside_the_controller(synth: dict) -> None:
    template = synth["p5-pcs"]["template"]
    login = _node_groups(template)["login"]
    assert login["ScalingConfiguration"] == {"MinInstanceCount": 1, "MaxInstanceCount": 1}
    assert "ServicesSubnetId" in json.dumps(login["SubnetIds"])
    _, data = _templates(template)["p5-pcs-login"]
    assert "NetworkInterfaces" not in data and "EfaSecurityGroupId" in json.dumps(data["SecurityGroupIds"])
    assert "FileSystemDnsName" in json.dumps(data["UserData"])  # FSx on every node, the login nodes too
    # the login role's bundle (Lustre client where the image lacks one, exporters, agent), not a bare mount line
    assert "role login" in json.dumps(data["UserData"]) and "text/x-shellscript" in json.dumps(data["UserData"])


def test_cluster_size_version_networking_and_name(synth: dict) -> None:
    for name, size in (("p5-pcs", "SMALL"), ("p5en-pcs-capacity-block", "MEDIUM"), ("pcsmix", "SMALL")):
        template = synth[name]["template"]
        [cluster] = _of_type(template, "AWS::PCS::Cluster").values()
        props = cluster["Properties"]
        assert props["Size"] == size == generate.size(synth[name]["plan"].cluster)
        assert props["Scheduler"] == {"Type": "SLURM", "Version": "25.05"}
        assert "ServicesSubnetId" in json.dumps(props["Networking"]["SubnetIds"])
        separator, (head, subnet) = props["Name"]["Fn::Join"]
        assert (separator, head) == ("", f"{name[:19].rstrip('-')}-{size[0].lower()}-")
        assert subnet == {"Fn::Select": [1, {"Fn::Split": ["-", {"Fn::ImportValue": f"{name}-ServicesSubnetId"}]}]}
        outputs = template["Outputs"]
        assert {"PcsClusterId", "PcsClusterArn"} <= set(outputs)
        # `fmcluster connect` finds a login node by its group's ID (the aws:pcs:compute-node-group-id tag)
        login = next((lid for lid, r in _of_type(template, "AWS::PCS::ComputeNodeGroup").items()
                      if r["Properties"]["Name"] == "login"), None)
        assert outputs.get("PcsLoginNodeGroupId", {}).get("Value") == (
            None if login is None else {"Fn::GetAtt": [login, "Id"]}), name
    [cluster] = _of_type(synth["p5-pcs"]["template"], "AWS::PCS::Cluster").values()
    assert cluster["Properties"]["SlurmConfiguration"] == {"ScaleDownIdleTimeInSeconds": 1800}


def test_node_role_is_under_the_pcs_path_and_may_register(synth: dict) -> None:
    template = synth["p5-pcs"]["template"]
    [role] = _of_type(template, "AWS::IAM::Role").values()
    [profile] = _of_type(template, "AWS::IAM::InstanceProfile").values()
    assert role["Properties"]["Path"] == profile["Properties"]["Path"] == "/aws-pcs/"
    statements = [s for p in _of_type(template, "AWS::IAM::Policy").values()
                  for s in p["Properties"]["PolicyDocument"]["Statement"]]
    assert any(s["Action"] == "pcs:RegisterComputeNodeGroupInstance" for s in statements)
    for resource in _of_type(template, "AWS::PCS::ComputeNodeGroup").values():
        assert resource["Properties"]["IamInstanceProfileArn"]["Fn::GetAtt"][1] == "Arn"
        depends = resource["DependsOn"]
        assert any(d.startswith("PcsNodeRegistrationPolicy") for d in depends)
        assert any(d.startswith("PcsNodeRoleDefaultPolicy") for d in depends)  # the bundle's s3:GetObject


def test_synthesis_is_deterministic(synth: dict, tmp_path: Path) -> None:
    again = _synth(tmp_path / "again", ["p5-pcs"])
    assert again["p5-pcs"]["template"] == synth["p5-pcs"]["template"]


# -- botocore's pcs model --------------------------------------------------------------------------------------

PLACEHOLDERS = {
    "clusterIdentifier": "pcs_abc123def0", "subnetIds": "subnet-0123456789abcdef0",
    "securityGroupIds": "sg-0123456789abcdef0", "computeNodeGroupId": "pcs_0123456789",
    "iamInstanceProfileArn": "arn:aws:iam::111122223333:instance-profile/aws-pcs/NodeInstanceProfile-ABC",
    "id": "lt-0123456789abcdef0", "version": "1",
}
RENAMED = {"ClusterId": "clusterIdentifier", "TemplateId": "id"}


def _api(value: Any, key: str | None = None) -> Any:
    """A CloudFormation property as the API takes it: camelCase keys; an intrinsic function (a value known at
    deploy time) as a placeholder of the right shape."""
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)).startswith(("Fn::", "Ref")):
        return PLACEHOLDERS[key]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            name = RENAMED.get(k, k[0].lower() + k[1:])
            out[name] = _api(v, name)
        return out
    if isinstance(value, list):
        return [_api(v, key) for v in value]
    return value


def _validate(operation: str, params: dict) -> None:
    model = botocore.session.get_session().get_service_model("pcs").operation_model(operation)
    report = ParamValidator().validate(params, model.input_shape)
    assert not report.has_errors(), report.generate_report()


def test_every_pcs_property_is_what_the_pcs_api_takes(synth: dict) -> None:
    for name in PROJECTS:
        template = synth[name]["template"]
        [cluster] = _of_type(template, "AWS::PCS::Cluster").values()
        props = _api({k: v for k, v in cluster["Properties"].items() if k != "Name"})
        # the name: prefix, size letter, the subnet ID's 17 hex digits
        head = cluster["Properties"]["Name"]["Fn::Join"][1][0]
        props["clusterName"] = f"{head}-0123456789abcdef0"
        _validate("CreateCluster", props)
        assert len(props["clusterName"]) <= 40
        for resource in _of_type(template, "AWS::PCS::ComputeNodeGroup").values():
            props = _api(resource["Properties"])
            props["computeNodeGroupName"] = props.pop("name")
            _validate("CreateComputeNodeGroup", props)
        for resource in _of_type(template, "AWS::PCS::Queue").values():
            props = _api(resource["Properties"])
            props["queueName"] = props.pop("name")
            _validate("CreateQueue", props)
            assert re.fullmatch(r"(?!pcs_)[A-Za-z][A-Za-z0-9-]{2,24}", props["queueName"])


def test_the_api_check_would_catch_a_bad_property() -> None:
    with pytest.raises(AssertionError):
        _validate("CreateComputeNodeGroup", {"clusterIdentifier": "pcs_abc", "computeNodeGroupName": "gpu",
                                             "subnetIds": [], "scalingConfiguration": {"minInstanceCount": -1,
                                                                                       "maxInstanceCount": "1"},
                                             "instanceConfigs": [{"instanceType": "p5.48xlarge"}]})


def test_accounting_is_pcs_managed_accounting(synth) -> None:
    """``orchestrator.accounting`` on PCS: slurmConfiguration.accounting mode STANDARD (PCS keeps the records; no
    database stack); off, the cluster has no accounting block at all."""
    [cluster] = _of_type(synth["pcsmix"]["template"], "AWS::PCS::Cluster").values()
    assert cluster["Properties"]["SlurmConfiguration"]["Accounting"] == {"Mode": "STANDARD"}
    assert synth["pcsmix"]["plan"].cluster.accounting_store == "managed"
    assert synth["pcsmix"]["plan"].network.database_subnet_cidrs == ()
    for name in ("p5-pcs", "p5en-pcs-capacity-block"):
        [plain] = _of_type(synth[name]["template"], "AWS::PCS::Cluster").values()
        assert "Accounting" not in plain["Properties"].get("SlurmConfiguration", {})
