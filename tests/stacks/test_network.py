"""``NAME-network``: subnets by AZ ID, routes, flow logs, security groups (every project, synthesized once)."""

from __future__ import annotations

import re

from aws_cdk.assertions import Match
from support import Synthesized


def test_subnets_placed_by_az_id(synthesized: Synthesized) -> None:
    t = synthesized.assertions("default-network")
    t.resource_count_is("AWS::EC2::Subnet", 2)
    t.has_resource_properties("AWS::EC2::Subnet", {"CidrBlock": "10.0.4.0/22", "AvailabilityZoneId": "use1-az6",
                                                   "MapPublicIpOnLaunch": False})
    t.has_resource_properties("AWS::EC2::Subnet", {"CidrBlock": "10.0.0.0/24", "AvailabilityZoneId": "use1-az6"})
    for subnet in t.find_resources("AWS::EC2::Subnet").values():
        assert "AvailabilityZone" not in subnet["Properties"]


def test_private_subnet_routes_through_nat_and_s3_endpoint(synthesized: Synthesized) -> None:
    t = synthesized.assertions("default-network")
    t.resource_count_is("AWS::EC2::NatGateway", 1)
    t.has_resource_properties("AWS::EC2::Route", {"DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": Match.any_value()})
    t.has_resource_properties("AWS::EC2::VPCEndpoint", {"VpcEndpointType": "Gateway",
                                                         "ServiceName": {"Fn::Sub": "com.amazonaws.${AWS::Region}.s3"}})
    t.resource_count_is("AWS::EC2::VPCEndpoint", 1)
    synthesized.assertions("p5-odcr-network").resource_count_is("AWS::EC2::VPCEndpoint", 5)


def test_flow_logs_with_retention(synthesized: Synthesized) -> None:
    t = synthesized.assertions("p5-odcr-network")
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
    t = synthesized.assertions("p5e-existing-vpc-network")
    t.resource_count_is("AWS::EC2::VPC", 0)
    t.resource_count_is("AWS::EC2::Subnet", 0)
    t.has_resource_properties("AWS::EC2::SecurityGroup", {"VpcId": "vpc-0a1b2c3d4e5f67890"})
    nic = synthesized.launch_templates("p5e-existing-vpc")["p5e-existing-vpc-train"]["NetworkInterfaces"][0]
    assert nic["SubnetId"] == "subnet-0a1b2c3d4e5f67890"


EC2_DESCRIPTION = re.compile(r"^[a-zA-Z0-9 ._\-:/()#,@\[\]+=&;{}!$*]{0,255}$")
"""What EC2 accepts in a security group's and a rule's description (EC2 API Reference,
AuthorizeSecurityGroupIngress ``IpPermissions.IpRanges.Description``, CreateSecurityGroup
``GroupDescription``). '<' and '>' are refused, so a Python object's repr fails the deploy."""


def _texts(value: object) -> list[str]:
    """The literal text of a property: a string, or the string parts of an Fn::Join."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict) and "Fn::Join" in value:
        return ["".join(p for p in value["Fn::Join"][1] if isinstance(p, str))]
    return []


def test_every_security_group_description_is_one_ec2_accepts(synthesized: Synthesized) -> None:
    bad = []
    for stack, template in synthesized.templates.items():
        for logical_id, resource in template.get("Resources", {}).items():
            props = resource.get("Properties", {})
            found = []
            if resource["Type"] == "AWS::EC2::SecurityGroup":
                found += _texts(props.get("GroupDescription"))
                for rule in props.get("SecurityGroupIngress", []) + props.get("SecurityGroupEgress", []):
                    found += _texts(rule.get("Description"))
            elif resource["Type"] in ("AWS::EC2::SecurityGroupIngress", "AWS::EC2::SecurityGroupEgress"):
                found += _texts(props.get("Description"))
            bad += [f"{stack}/{logical_id}: {text!r}" for text in found if not EC2_DESCRIPTION.match(text)]
    assert not bad, "EC2 refuses these descriptions:\n" + "\n".join(bad)
    assert EC2_DESCRIPTION.match("Lustre TCP 1018-1023 from nodes")
    assert not EC2_DESCRIPTION.match("Lustre <aws_cdk.aws_ec2.Port object at 0x7f> from nodes")


def test_a_local_zone_project_puts_each_piece_where_it_exists(synthesized: Synthesized) -> None:
    """GB200 UltraServers in the Dallas Local Zone: nodes there; NAT, FSx and endpoints in the parent zone."""
    resources = synthesized.template("p6e-gb200-ultraserver-network")["Resources"]
    zone_of = {lid: r["Properties"]["AvailabilityZoneId"] for lid, r in resources.items() if r["Type"] == "AWS::EC2::Subnet"}
    assert zone_of == {"PublicSubnet": "use1-az4", "ServicesSubnet": "use1-az4", "ComputeSubnet": "use1-dfw2-az1"}
    [nat] = [r for r in resources.values() if r["Type"] == "AWS::EC2::NatGateway"]
    assert nat["Properties"]["SubnetId"] == {"Ref": "PublicSubnet"}
    outputs = synthesized.template("p6e-gb200-ultraserver-network")["Outputs"]
    assert outputs["ServicesSubnetId"]["Value"] == {"Ref": "ServicesSubnet"}
    fs = next(r for r in synthesized.template("p6e-gb200-ultraserver-storage")["Resources"].values()
              if r["Type"] == "AWS::FSx::FileSystem")
    assert "ServicesSubnet" in str(fs["Properties"]["SubnetIds"]) and "ComputeSubnet" not in str(fs["Properties"]["SubnetIds"])


def test_a_regular_zone_project_keeps_everything_in_its_zone(synthesized: Synthesized) -> None:
    resources = synthesized.template("default-network")["Resources"]
    zones = {r["Properties"]["AvailabilityZoneId"] for r in resources.values() if r["Type"] == "AWS::EC2::Subnet"}
    assert zones == {"use1-az6"} and "ServicesSubnet" not in resources
    assert synthesized.template("default-network")["Outputs"]["ServicesSubnetId"]["Value"] == {"Ref": "ComputeSubnet"}
