"""``NAME-cluster``: EFA launch templates, capacity, placement groups, the node role, the bootstrap
(every project, synthesized once)."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match
from support import PROJECTS, SELF_MANAGED, Synthesized

from fmcluster import catalog
from fmcluster.plan import efa_layout


@pytest.mark.parametrize("name", SELF_MANAGED)
def test_launch_templates_carry_the_full_efa_layout(synthesized: Synthesized, name: str) -> None:
    project = PROJECTS[name]
    templates = synthesized.launch_templates(name)
    for group in project.compute_groups:
        data = templates[f"{name}-{group.name}"]
        nics = data["NetworkInterfaces"]
        expected = efa_layout(catalog.get(group.instance_type))
        assert [(n["NetworkCardIndex"], n["DeviceIndex"], n["InterfaceType"]) for n in nics] == \
               [(e.card, e.device, e.type) for e in expected]
        # one ENA primary, every card used once for EFA, no addresses on efa-only
        assert sum(n["InterfaceType"] == "interface" for n in nics) == 1
        assert sum(n["InterfaceType"] == "efa-only" for n in nics) == catalog.get(group.instance_type).max_efa_interfaces
        for nic in nics:
            if nic["InterfaceType"] == "efa-only":
                assert "AssociatePublicIpAddress" not in nic and "PrivateIpAddress" not in nic
            assert len(nic["Groups"]) == 2
        assert data["MetadataOptions"]["HttpTokens"] == "required"
        ebs = data["BlockDeviceMappings"][0]["Ebs"]
        assert ebs["Encrypted"] is True and ebs["VolumeType"] == "gp3" and ebs["VolumeSize"] == group.root_volume_gib
        assert "KeyName" not in data
        assert data["InstanceType"] == group.instance_type


def test_p5_template_has_33_interfaces_b300_17(synthesized: Synthesized) -> None:
    p5 = synthesized.launch_templates("p5-odcr")["p5-odcr-train"]["NetworkInterfaces"]
    assert len(p5) == 33
    b300 = synthesized.launch_templates("p6-b300-capacity-block")["p6-b300-capacity-block-train"]["NetworkInterfaces"]
    assert len(b300) == 17
    assert [n["InterfaceType"] for n in b300 if n["NetworkCardIndex"] == 0] == ["interface"]


def test_capacity_targeting(synthesized: Synthesized) -> None:
    block = synthesized.launch_templates("p6-b300-capacity-block")["p6-b300-capacity-block-train"]
    assert block["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert block["CapacityReservationSpecification"]["CapacityReservationTarget"]["CapacityReservationId"] == "cr-0b0b0b0b0b0b0b0b0"
    assert "Placement" not in block

    odcr = synthesized.launch_templates("p5-odcr")["p5-odcr-train"]
    assert "InstanceMarketOptions" not in odcr
    assert odcr["CapacityReservationSpecification"]["CapacityReservationTarget"]["CapacityReservationId"] == "cr-0123456789abcdef0"
    assert "Placement" not in odcr  # made without a placement group: none can be added after the fact
    in_group = synthesized.launch_templates("p5-odcr-pg")["p5-odcr-pg-train"]
    assert in_group["Placement"] == {"GroupName": "pretrain-spine-1"}  # the reservation's own group, by name

    on_demand = synthesized.launch_templates("p4d-on-demand")["p4d-on-demand-dev"]
    assert "CapacityReservationSpecification" not in on_demand and "InstanceMarketOptions" not in on_demand


def test_placement_groups_only_where_planned(synthesized: Synthesized) -> None:
    synthesized.assertions("p4d-on-demand-cluster").resource_count_is("AWS::EC2::PlacementGroup", 1)
    synthesized.assertions("p4d-on-demand-cluster").has_resource_properties("AWS::EC2::PlacementGroup", {"Strategy": "cluster"})
    synthesized.assertions("p5-odcr-pg-cluster").resource_count_is("AWS::EC2::PlacementGroup", 0)
    synthesized.assertions("p6-b300-capacity-block-cluster").resource_count_is("AWS::EC2::PlacementGroup", 0)
    # ParallelCluster makes its own placement groups and launch templates
    synthesized.assertions("p5en-capacity-block-cluster").resource_count_is("AWS::EC2::PlacementGroup", 0)
    synthesized.assertions("p5en-capacity-block-cluster").resource_count_is("AWS::EC2::LaunchTemplate", 0)
    # one reservation group (no new placement group) and one on-demand group
    synthesized.assertions("p6-b200-mixed-cluster").resource_count_is("AWS::EC2::PlacementGroup", 1)


def test_gb200_uses_an_arm64_image(synthesized: Synthesized) -> None:
    data = synthesized.launch_templates("p6e-gb200-ultraserver")["p6e-gb200-ultraserver-nvl72a"]
    assert "/arm64/" in data["ImageId"]
    assert "/x86_64/" in synthesized.launch_templates("p4d-on-demand")["p4d-on-demand-dev"]["ImageId"]


def test_node_role_has_ssm_and_nothing_else(synthesized: Synthesized) -> None:
    t = synthesized.assertions("p4d-on-demand-cluster")
    t.has_resource_properties("AWS::IAM::Role", {
        "AssumeRolePolicyDocument": Match.object_like({"Statement": [Match.object_like({"Principal": {"Service": "ec2.amazonaws.com"}})]}),
        "ManagedPolicyArns": [Match.object_like({"Fn::Join": ["", Match.array_with([Match.string_like_regexp("AmazonSSMManagedInstanceCore")])]})],
    })
    t.resource_count_is("AWS::IAM::Policy", 3)  # read of its bootstrap bundle (below), the health policy, remote write
    health = next(r for lid, r in synthesized.template("p4d-on-demand-cluster")["Resources"].items()
                  if lid.startswith("NodeHealthPolicy"))["Properties"]["PolicyDocument"]["Statement"]
    by_sid = {st["Sid"]: st for st in health}
    assert by_sid["TagUnhealthyNode"]["Condition"]["StringEquals"] == {"aws:ResourceTag/fmcluster:project": "p4d-on-demand"}
    assert by_sid["TagUnhealthyNode"]["Condition"]["ForAllValues:StringEquals"] == {"aws:TagKeys": ["fmcluster:health"]}
    assert by_sid["MarkUnhealthyNode"]["Action"] == "autoscaling:SetInstanceHealth"


def test_launch_template_boots_the_rendered_bundle(synthesized: Synthesized) -> None:
    resources = synthesized.template("p4d-on-demand-cluster")["Resources"]
    data = synthesized.launch_templates("p4d-on-demand")["p4d-on-demand-dev"]
    parts = data["UserData"]["Fn::Base64"]["Fn::Join"][1]
    text = "".join(p for p in parts if isinstance(p, str))
    assert text.startswith("#!/bin/bash") and "set -Eeuo pipefail" in text
    tokens = [p for p in parts if not isinstance(p, str)]
    # the bundle's S3 URI, and the FSx identity the storage stack creates
    assert any(".zip" in str(t) for t in tokens)
    assert {"export FMC_FSX_ID=", "export FMC_FSX_DNS=", "export FMC_FSX_MOUNT_NAME="} <= {
        line.strip().rstrip('"') for p in parts if isinstance(p, str) for line in p.splitlines() if "export FMC_FSX" in line}
    assert {"Fn::ImportValue": "p4d-on-demand-FileSystemId"} in tokens  # the storage stack's export
    # the node may read exactly that object, nothing else in the asset bucket
    policy = next(r for lid, r in resources.items()
                  if r["Type"] == "AWS::IAM::Policy" and lid.startswith("NodeRole"))["Properties"]["PolicyDocument"]
    [staged] = [s for s in policy["Statement"] if s.get("Sid") == "ReadStagedArtefacts"]
    [statement] = [s for s in policy["Statement"] if s is not staged]
    assert statement["Action"] == "s3:GetObject" and ".zip" in str(statement["Resource"])
    # and the monitoring artefacts staged beside it, each object by its sha256 (fmcluster.stacks.staging)
    assert staged["Sid"] == "ReadStagedArtefacts" and staged["Action"] == "s3:GetObject"
    assert sorted(str(r).rsplit("/", 1)[1][:64] for r in staged["Resource"]) == sorted(
        synthesized.staged_assets("p4d-on-demand-cluster"))


def test_existing_file_system_is_rendered_into_the_bundle(synthesized: Synthesized) -> None:
    data = synthesized.launch_templates("p5e-existing-vpc")["p5e-existing-vpc-train"]
    # account and Region are known: the bundle's URL is plain text; only the metrics URL comes from another stack
    parts = data["UserData"]["Fn::Base64"]["Fn::Join"][1]
    text = "".join(p for p in parts if isinstance(p, str))
    assert "FMC_FSX_ID" not in text
    assert "s3://cdk-hnb659fds-assets-111122223333-us-east-2/" in text
    assert all("PrometheusEndpoint" in str(p) for p in parts if not isinstance(p, str))


def _pcluster(synthesized: Synthesized, project: str) -> dict:
    resources = synthesized.template(f"{project}-cluster")["Resources"]
    return next(r for r in resources.values() if r["Type"] == "Custom::PclusterCluster")["Properties"]


def test_parallelcluster_nodes_run_the_launcher_which_their_pointer_sends_to_their_bundle(
        synthesized: Synthesized) -> None:
    props = _pcluster(synthesized, "p5-parallelcluster")
    # deleted with its stack: a retained cluster would outlive the network it runs in
    assert props["DeletionPolicy"] == "Delete" and props["ClusterName"] != "p5-parallelcluster-cluster"
    config = props["ClusterConfiguration"]
    [queue] = config["Scheduling"]["SlurmQueues"]
    action = queue["CustomActions"]["OnNodeConfigured"]
    assert str(action["Script"]).endswith(".sh'}")
    assert action["Args"][0] == "configure" and "ssm:" in str(action["Args"][1])
    resources = synthesized.template("p5-parallelcluster-cluster")["Resources"]
    [compute] = [r["Properties"] for r in resources.values()
                 if r["Type"] == "AWS::SSM::Parameter" and r["Properties"]["Name"].endswith("/compute")]
    # the dispatcher, its digest, the archive of bundles, the metrics workspace's remote-write URL
    script, digest, archive, remote_write = compute["Value"]["Fn::Join"][1]
    assert str(script).endswith(".sh'}") and len(digest) == 64 and ".zip" in str(archive)
    endpoint, path = remote_write["Fn::Join"][1]
    assert "PrometheusEndpoint" in str(endpoint) and path == "api/v1/remote_write"
    [resource] = queue["ComputeResources"]
    assert resource["Efa"] == {"Enabled": True, "GdrSupport": True}
    assert resource["Networking"]["PlacementGroup"]["Enabled"] is True
    assert "default-" not in str(config)
    assert config["SharedStorage"][0]["FsxLustreSettings"]["FileSystemId"] == {
        "Fn::ImportValue": "p5-parallelcluster-FileSystemId"}  # the storage stack's export
    policies = [r for r in synthesized.template("p5-parallelcluster-cluster")["Resources"].values()
                if r["Type"] == "AWS::IAM::ManagedPolicy" and "ReadBootstrapBundle" in str(r)]
    [read] = [s for s in policies[0]["Properties"]["PolicyDocument"]["Statement"] if s["Sid"] == "ReadBootstrapBundle"]
    # the launcher, the two dispatchers, the archive, and the monitoring artefacts staged beside them (two per
    # architecture: node_exporter and Prometheus; fmcluster.stacks.staging)
    staged = synthesized.staged_assets("p5-parallelcluster-cluster")
    assert len(staged) == 2 and len(read["Resource"]) == 4 + len(staged)
    assert "*" not in str(read["Resource"]).replace("${AWS::", "")


def test_parallelcluster_capacity_block_queue(synthesized: Synthesized) -> None:
    [queue] = _pcluster(synthesized, "p5en-capacity-block")["ClusterConfiguration"]["Scheduling"]["SlurmQueues"]
    assert queue["CapacityType"] == "CAPACITY_BLOCK"
    [resource] = queue["ComputeResources"]
    assert resource["MinCount"] == resource["MaxCount"] == 32
    assert resource["CapacityReservationTarget"] == {"CapacityReservationId": "cr-0fedcba9876543210"}
    assert resource["Networking"]["PlacementGroup"]["Enabled"] is False


def test_nodes_carry_the_project_tag(synthesized: Synthesized) -> None:
    """The collector discovers nodes and the health policy limits itself by this tag: instances must have it."""
    data = synthesized.launch_templates("p5-odcr")["p5-odcr-train"]
    for spec in data["TagSpecifications"]:
        tags = {t["Key"]: t["Value"] for t in spec["Tags"]}
        assert tags["fmcluster:project"] == "p5-odcr" and tags["team"] == "pretraining", spec["ResourceType"]


def test_the_nodes_metrics_agent_gets_the_projects_remote_write_url(synthesized: Synthesized) -> None:
    """The agent remote-writes to the project's own workspace: its URL reaches the user data at deploy time."""
    parts = synthesized.launch_templates("p4d-on-demand")["p4d-on-demand-dev"]["UserData"]["Fn::Base64"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else "\x00" for p in parts)
    line = next(line for line in text.splitlines() if "FMC_METRICS_REMOTE_WRITE_URL=" in line)
    assert line.strip().startswith("export FMC_METRICS_REMOTE_WRITE_URL=") and line.rstrip().endswith('api/v1/remote_write"')
    tokens = [p for p in parts if not isinstance(p, str)]
    assert any("p4d-on-demand-observability" in str(t) and "PrometheusEndpoint" in str(t) for t in tokens)


def _intrinsics(node, kind: str) -> list:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == kind] + [x for v in node.values() for x in _intrinsics(v, kind)]
    if isinstance(node, list):
        return [x for v in node for x in _intrinsics(v, kind)]
    return []


def test_the_cluster_reads_network_and_storage_by_strong_references(synthesized: Synthesized) -> None:
    """Fn::ImportValue of the producers' own exports: CloudFormation refuses to change or delete an export in use, so a
    network or storage change cannot leave the cluster on stale IDs, nor the producer be deleted under it."""
    checked = 0
    for name, template in synthesized.templates.items():
        if not name.endswith("-cluster"):
            continue
        project = name.removesuffix("-cluster")
        weak = {ref["StackName"] for ref in _intrinsics(template, "Fn::GetStackOutput")}
        assert weak <= {f"{project}-observability"}, (name, weak)  # metrics only; never network or storage
        exports = {spec["Export"]["Name"] for producer in ("network", "storage", "accounting")
                   for spec in synthesized.templates.get(f"{project}-{producer}", {}).get("Outputs", {}).values()
                   if "Export" in spec}
        imports = set(_intrinsics(template, "Fn::ImportValue"))
        assert imports and imports <= exports, (name, imports - exports)
        checked += 1
    assert checked == len([n for n in synthesized.templates if n.endswith("-cluster")]) >= 10
