"""``NAME-network``: subnets by AZ ID, routes, flow logs, security groups (every project, synthesized once)."""

from __future__ import annotations

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
