"""Fine-grained checks of the synthesized templates (one synthesis per session, see conftest)."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Match, Template
from support import ALL_FILES, EXAMPLE_FILES, Synthesized

from fmcluster import catalog, config
from fmcluster.plan import efa_layout

PROJECTS = {config.parse(p.read_text(), p).project.name: config.parse(p.read_text(), p).project for p in ALL_FILES}
SELF_MANAGED = sorted(name for name, p in PROJECTS.items() if p.orchestrator.type == "none")
"""Projects whose nodes come from fmcluster's own launch templates (ParallelCluster makes its own)."""


def _template(synthesized: Synthesized, stack: str) -> Template:
    return Template.from_json(synthesized.template(stack))


def _launch_templates(synthesized: Synthesized, project: str) -> dict[str, dict]:
    resources = synthesized.template(f"{project}-cluster")["Resources"]
    return {r["Properties"]["LaunchTemplateName"]: r["Properties"]["LaunchTemplateData"]
            for r in resources.values() if r["Type"] == "AWS::EC2::LaunchTemplate"}


def test_every_project_and_example_synthesized(synthesized: Synthesized) -> None:
    for name in PROJECTS:
        assert f"{name}-network" in synthesized.templates
        assert f"{name}-cluster" in synthesized.templates


def test_examples_cover_every_catalog_type() -> None:
    used = {g.instance_type for p in EXAMPLE_FILES for g in config.parse(p.read_text()).project.compute_groups}
    assert used == set(catalog.CATALOG)
    launch_templated = {g.instance_type for name in SELF_MANAGED for g in PROJECTS[name].compute_groups}
    assert launch_templated == set(catalog.CATALOG)


@pytest.mark.parametrize("name", SELF_MANAGED)
def test_launch_templates_carry_the_full_efa_layout(synthesized: Synthesized, name: str) -> None:
    project = PROJECTS[name]
    templates = _launch_templates(synthesized, name)
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
    p5 = _launch_templates(synthesized, "default")["default-train"]["NetworkInterfaces"]
    assert len(p5) == 33
    b300 = _launch_templates(synthesized, "p6-b300-capacity-block")["p6-b300-capacity-block-train"]["NetworkInterfaces"]
    assert len(b300) == 17
    assert [n["InterfaceType"] for n in b300 if n["NetworkCardIndex"] == 0] == ["interface"]


def test_capacity_targeting(synthesized: Synthesized) -> None:
    block = _launch_templates(synthesized, "p6-b300-capacity-block")["p6-b300-capacity-block-train"]
    assert block["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert block["CapacityReservationSpecification"]["CapacityReservationTarget"]["CapacityReservationId"] == "cr-0b0b0b0b0b0b0b0b0"
    assert "Placement" not in block

    odcr = _launch_templates(synthesized, "p5-odcr")["p5-odcr-train"]
    assert "InstanceMarketOptions" not in odcr
    assert odcr["CapacityReservationSpecification"]["CapacityReservationTarget"]["CapacityReservationId"] == "cr-0123456789abcdef0"
    assert "GroupName" in odcr["Placement"]

    on_demand = _launch_templates(synthesized, "default")["default-train"]
    assert "CapacityReservationSpecification" not in on_demand and "InstanceMarketOptions" not in on_demand


def test_placement_groups_only_where_planned(synthesized: Synthesized) -> None:
    _template(synthesized, "default-cluster").resource_count_is("AWS::EC2::PlacementGroup", 1)
    _template(synthesized, "default-cluster").has_resource_properties("AWS::EC2::PlacementGroup", {"Strategy": "cluster"})
    _template(synthesized, "p6-b300-capacity-block-cluster").resource_count_is("AWS::EC2::PlacementGroup", 0)
    # ParallelCluster makes its own placement groups and launch templates
    _template(synthesized, "p5en-capacity-block-cluster").resource_count_is("AWS::EC2::PlacementGroup", 0)
    _template(synthesized, "p5en-capacity-block-cluster").resource_count_is("AWS::EC2::LaunchTemplate", 0)
    _template(synthesized, "p6-b200-mixed-cluster").resource_count_is("AWS::EC2::PlacementGroup", 2)


def test_gb200_uses_an_arm64_image(synthesized: Synthesized) -> None:
    data = _launch_templates(synthesized, "p6e-gb200-ultraserver")["p6e-gb200-ultraserver-nvl72a"]
    assert "/arm64/" in data["ImageId"]
    assert "/x86_64/" in _launch_templates(synthesized, "default")["default-train"]["ImageId"]


def test_node_role_has_ssm_and_nothing_else(synthesized: Synthesized) -> None:
    t = _template(synthesized, "default-cluster")
    t.has_resource_properties("AWS::IAM::Role", {
        "AssumeRolePolicyDocument": Match.object_like({"Statement": [Match.object_like({"Principal": {"Service": "ec2.amazonaws.com"}})]}),
        "ManagedPolicyArns": [Match.object_like({"Fn::Join": ["", Match.array_with([Match.string_like_regexp("AmazonSSMManagedInstanceCore")])]})],
    })
    t.resource_count_is("AWS::IAM::Policy", 1)  # read of its bootstrap bundle, see below


def test_subnets_placed_by_az_id(synthesized: Synthesized) -> None:
    t = _template(synthesized, "default-network")
    t.resource_count_is("AWS::EC2::Subnet", 2)
    t.has_resource_properties("AWS::EC2::Subnet", {"CidrBlock": "10.0.4.0/22", "AvailabilityZoneId": "use1-az6",
                                                   "MapPublicIpOnLaunch": False})
    t.has_resource_properties("AWS::EC2::Subnet", {"CidrBlock": "10.0.0.0/24", "AvailabilityZoneId": "use1-az6"})
    for subnet in t.find_resources("AWS::EC2::Subnet").values():
        assert "AvailabilityZone" not in subnet["Properties"]


def test_private_subnet_routes_through_nat_and_s3_endpoint(synthesized: Synthesized) -> None:
    t = _template(synthesized, "default-network")
    t.resource_count_is("AWS::EC2::NatGateway", 1)
    t.has_resource_properties("AWS::EC2::Route", {"DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": Match.any_value()})
    t.has_resource_properties("AWS::EC2::VPCEndpoint", {"VpcEndpointType": "Gateway",
                                                         "ServiceName": {"Fn::Sub": "com.amazonaws.${AWS::Region}.s3"}})
    t.resource_count_is("AWS::EC2::VPCEndpoint", 1)
    _template(synthesized, "p5-odcr-network").resource_count_is("AWS::EC2::VPCEndpoint", 5)


def test_flow_logs_with_retention(synthesized: Synthesized) -> None:
    t = _template(synthesized, "p5-odcr-network")
    t.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 30})
    t.has_resource_properties("AWS::EC2::FlowLog", {"ResourceType": "VPC", "TrafficType": "ALL"})


def test_efa_security_group_is_closed_on_itself(synthesized: Synthesized) -> None:
    t = synthesized.template("default-network")["Resources"]
    efa_id = next(k for k, r in t.items() if r["Type"] == "AWS::EC2::SecurityGroup" and "EFA" in r["Properties"]["GroupDescription"])
    ingress = [r["Properties"] for r in t.values() if r["Type"] == "AWS::EC2::SecurityGroupIngress"
               and r["Properties"]["GroupId"] == {"Fn::GetAtt": [efa_id, "GroupId"]}]
    egress = [r["Properties"] for r in t.values() if r["Type"] == "AWS::EC2::SecurityGroupEgress"
              and r["Properties"]["GroupId"] == {"Fn::GetAtt": [efa_id, "GroupId"]}]
    self_ref = {"Fn::GetAtt": [efa_id, "GroupId"]}
    assert [(r["IpProtocol"], r["SourceSecurityGroupId"]) for r in ingress] == [("-1", self_ref)]
    assert [(r["IpProtocol"], r["DestinationSecurityGroupId"]) for r in egress] == [("-1", self_ref)]
    # no inline allow-all egress on the EFA group
    inline = t[efa_id]["Properties"].get("SecurityGroupEgress", [])
    assert all(rule.get("CidrIp") != "0.0.0.0/0" for rule in inline)


def test_lustre_ports_open_to_the_file_servers(synthesized: Synthesized) -> None:
    t = synthesized.template("default-network")["Resources"]
    ports = sorted({(r["Properties"]["FromPort"], r["Properties"]["ToPort"]) for r in t.values()
                    if r["Type"] == "AWS::EC2::SecurityGroupIngress" and r["Properties"].get("IpProtocol") == "tcp"})
    assert ports == [(988, 988), (1018, 1023)]


def test_no_ingress_from_the_internet(synthesized: Synthesized) -> None:
    for name, template in synthesized.templates.items():
        for logical_id, resource in template["Resources"].items():
            props = resource.get("Properties", {})
            rules = props.get("SecurityGroupIngress", []) if resource["Type"] == "AWS::EC2::SecurityGroup" else (
                [props] if resource["Type"] == "AWS::EC2::SecurityGroupIngress" else [])
            for rule in rules:
                assert rule.get("CidrIp") != "0.0.0.0/0", f"{name}/{logical_id}"


def test_existing_vpc_is_imported_not_created(synthesized: Synthesized) -> None:
    t = _template(synthesized, "p5e-existing-vpc-network")
    t.resource_count_is("AWS::EC2::VPC", 0)
    t.resource_count_is("AWS::EC2::Subnet", 0)
    t.has_resource_properties("AWS::EC2::SecurityGroup", {"VpcId": "vpc-0a1b2c3d4e5f67890"})
    nic = _launch_templates(synthesized, "p5e-existing-vpc")["p5e-existing-vpc-train"]["NetworkInterfaces"][0]
    assert nic["SubnetId"] == "subnet-0a1b2c3d4e5f67890"


def test_project_tags_on_resources(synthesized: Synthesized) -> None:
    t = _template(synthesized, "default-network")
    t.has_resource_properties("AWS::EC2::VPC", {"Tags": Match.array_with([
        {"Key": "fmcluster:project", "Value": "default"}, {"Key": "owner", "Value": "ml-infra"}])})


def test_stable_logical_ids(synthesized: Synthesized) -> None:
    """Logical IDs come from names, never positions: pin the ones later stacks and users depend on."""
    network = set(synthesized.template("default-network")["Resources"])
    assert {"Vpc", "ComputeSubnet", "PublicSubnet", "NatGateway", "FlowLog", "S3GatewayEndpoint"} <= network
    cluster = set(synthesized.template("p6-b200-mixed-cluster")["Resources"])
    assert {"TrainLaunchTemplate", "EvalLaunchTemplate", "TrainPlacementGroup", "EvalPlacementGroup"} <= cluster


def test_launch_template_boots_the_rendered_bundle(synthesized: Synthesized) -> None:
    resources = synthesized.template("default-cluster")["Resources"]
    data = _launch_templates(synthesized, "default")["default-train"]
    parts = data["UserData"]["Fn::Base64"]["Fn::Join"][1]
    text = "".join(p for p in parts if isinstance(p, str))
    assert text.startswith("#!/bin/bash") and "set -Eeuo pipefail" in text
    tokens = [p for p in parts if not isinstance(p, str)]
    # the bundle's S3 URI, and the FSx identity the storage stack creates
    assert any(".zip" in str(t) for t in tokens)
    assert {"export FMC_FSX_ID=", "export FMC_FSX_DNS=", "export FMC_FSX_MOUNT_NAME="} <= {
        line.strip().rstrip('"') for p in parts if isinstance(p, str) for line in p.splitlines() if "export FMC_FSX" in line}
    assert any("default-storage" in str(t) for t in tokens)
    # the node may read exactly that object, nothing else in the asset bucket
    policy = next(r for r in resources.values() if r["Type"] == "AWS::IAM::Policy")["Properties"]["PolicyDocument"]
    [statement] = policy["Statement"]
    assert statement["Action"] == "s3:GetObject" and ".zip" in str(statement["Resource"])


def test_existing_file_system_is_rendered_into_the_bundle(synthesized: Synthesized) -> None:
    data = _launch_templates(synthesized, "p5e-existing-vpc")["p5e-existing-vpc-train"]
    # account and Region are known, so the whole script is a plain string
    text = data["UserData"]["Fn::Base64"]
    assert "FMC_FSX_ID" not in text
    assert "s3://cdk-hnb659fds-assets-111122223333-us-east-2/" in text


def _pcluster(synthesized: Synthesized, project: str) -> dict:
    resources = synthesized.template(f"{project}-cluster")["Resources"]
    return next(r for r in resources.values() if r["Type"] == "Custom::PclusterCluster")["Properties"]


def test_parallelcluster_nodes_run_the_dispatcher_on_their_bundle(synthesized: Synthesized) -> None:
    props = _pcluster(synthesized, "p5-parallelcluster")
    assert props["DeletionPolicy"] == "Retain" and props["ClusterName"] != "p5-parallelcluster-cluster"
    config = props["ClusterConfiguration"]
    [queue] = config["Scheduling"]["SlurmQueues"]
    action = queue["CustomActions"]["OnNodeConfigured"]
    assert str(action["Script"]).endswith(".sh'}")
    assert len(action["Args"]) == 1 and ".zip" in str(action["Args"][0])
    [resource] = queue["ComputeResources"]
    assert resource["Efa"] == {"Enabled": True, "GdrSupport": True}
    assert resource["Networking"]["PlacementGroup"]["Enabled"] is True
    assert "default-storage" not in str(config) and "p5-parallelcluster-storage" in str(config["SharedStorage"])
    policies = [r for r in synthesized.template("p5-parallelcluster-cluster")["Resources"].values()
                if r["Type"] == "AWS::IAM::ManagedPolicy" and "ReadBootstrapBundle" in str(r)]
    [read] = [s for s in policies[0]["Properties"]["PolicyDocument"]["Statement"] if s["Sid"] == "ReadBootstrapBundle"]
    assert len(read["Resource"]) == 2 and "*" not in str(read["Resource"]).replace("${AWS::", "")


def test_parallelcluster_capacity_block_queue(synthesized: Synthesized) -> None:
    [queue] = _pcluster(synthesized, "p5en-capacity-block")["ClusterConfiguration"]["Scheduling"]["SlurmQueues"]
    assert queue["CapacityType"] == "CAPACITY_BLOCK"
    [resource] = queue["ComputeResources"]
    assert resource["MinCount"] == resource["MaxCount"] == 32
    assert resource["CapacityReservationTarget"] == {"CapacityReservationId": "cr-0fedcba9876543210"}
    assert resource["Networking"]["PlacementGroup"]["Enabled"] is False
