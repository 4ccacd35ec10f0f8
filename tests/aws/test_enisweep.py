"""``fmcluster destroy`` sweeps what AWS services left in the project's VPC before it deletes ``NAME-network``
(:mod:`fmcluster.aws.enisweep`, issue 41): the VPC CNI's and Lambda's released ENIs, GuardDuty's endpoint and its
security group; nothing attached and nothing another requester made. Against moto in process."""

from __future__ import annotations

import json

import boto3

from fmcluster.aws import destroy as api
from fmcluster.aws import enisweep
from fmcluster.aws.session import aws_session

REGION = "us-east-1"


def _network() -> tuple[str, str]:
    """``demo-network`` with its VPC and a subnet, as CloudFormation holds it; (VPC ID, subnet ID)."""
    cfn = boto3.client("cloudformation", region_name=REGION)
    cfn.create_stack(StackName="demo-network", TemplateBody=json.dumps({"Resources": {
        "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}},
        "Compute": {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": {"Ref": "Vpc"}, "CidrBlock": "10.0.4.0/22",
                                                                 "AvailabilityZone": f"{REGION}a"}}}}))
    resources = {r["LogicalResourceId"]: r["PhysicalResourceId"]
                 for r in cfn.list_stack_resources(StackName="demo-network")["StackResourceSummaries"]}
    return resources["Vpc"], resources["Compute"]


def _leftovers(ec2, vpc: str, subnet: str) -> dict[str, str]:
    """What a HyperPod EKS deploy's services leave behind, and two ENIs that are not theirs to sweep."""
    made = {}
    for name, description in (("cni", "aws-K8S-i-0123456789abcdef0"), ("lambda", "AWS Lambda VPC ENI-demo-kubectl"),
                              ("someone", "a teammate's interface")):
        made[name] = ec2.create_network_interface(SubnetId=subnet, Description=description)[
            "NetworkInterface"]["NetworkInterfaceId"]
    image = ec2.describe_images()["Images"] or [{"ImageId": "ami-12c6146b"}]
    instance = ec2.run_instances(ImageId=image[0]["ImageId"], MinCount=1, MaxCount=1, SubnetId=subnet)[
        "Instances"][0]["InstanceId"]
    for name, description in (("attached", "a node's own interface"), ("cni-in-use", "aws-K8S-i-0fedcba987654321")):
        made[name] = ec2.create_network_interface(SubnetId=subnet, Description=description)[
            "NetworkInterface"]["NetworkInterfaceId"]
        ec2.attach_network_interface(NetworkInterfaceId=made[name], InstanceId=instance,
                                     DeviceIndex=1 if name == "attached" else 2)
    group = ec2.create_security_group(GroupName=f"{enisweep.GUARDDUTY_GROUP}{vpc}", Description="GuardDuty",
                                      VpcId=vpc)["GroupId"]
    made["guardduty-group"] = group
    made["guardduty"] = ec2.create_vpc_endpoint(
        VpcId=vpc, ServiceName=f"com.amazonaws.{REGION}.{enisweep.GUARDDUTY_SERVICE}", VpcEndpointType="Interface",
        SubnetIds=[subnet], SecurityGroupIds=[group])["VpcEndpoint"]["VpcEndpointId"]
    return made


def test_the_sweep_deletes_what_services_left_and_nothing_else(moto) -> None:
    vpc, subnet = _network()
    ec2 = boto3.client("ec2", region_name=REGION)
    made = _leftovers(ec2, vpc, subnet)
    said: list[str] = []
    out = enisweep.sweep(ec2, vpc, progress=said.append, timeout_s=0, every_s=0, sleep=lambda _: None)
    assert set(out.deleted) == {made["cni"], made["lambda"], made["guardduty"], made["guardduty-group"]}
    assert out.left == [f"{made['cni-in-use']} (VPC CNI, in-use)"]  # attached: waited for, never deleted
    left = {e["NetworkInterfaceId"] for e in ec2.describe_network_interfaces(
        Filters=[{"Name": "vpc-id", "Values": [vpc]}])["NetworkInterfaces"]}
    assert {made["someone"], made["attached"], made["cni-in-use"]} <= left
    assert not {made["cni"], made["lambda"]} & left
    assert [e["State"].lower() for e in ec2.describe_vpc_endpoints(
        Filters=[{"Name": "vpc-id", "Values": [vpc]}])["VpcEndpoints"]] in ([], ["deleted"])
    assert f"{vpc}: {made['cni']} left by VPC CNI deleted" in said


def test_an_eni_released_while_destroy_waits_is_deleted_then(moto) -> None:
    vpc, subnet = _network()
    ec2 = boto3.client("ec2", region_name=REGION)
    made = _leftovers(ec2, vpc, subnet)
    attachment = ec2.describe_network_interfaces(NetworkInterfaceIds=[made["cni-in-use"]])[
        "NetworkInterfaces"][0]["Attachment"]["AttachmentId"]
    waits: list[float] = []

    def sleep(seconds: float) -> None:  # the node goes away during the first wait: the CNI's ENI is released
        waits.append(seconds)
        ec2.detach_network_interface(AttachmentId=attachment)

    out = enisweep.sweep(ec2, vpc, progress=lambda _: None, timeout_s=60, every_s=30, sleep=sleep)
    assert waits == [30] and out.left == [] and made["cni-in-use"] in out.deleted


def test_an_eni_still_in_use_at_the_bound_keeps_the_network_with_why(moto) -> None:
    vpc, subnet = _network()
    ec2 = boto3.client("ec2", region_name=REGION)
    _leftovers(ec2, vpc, subnet)
    session = aws_session(region=REGION, command="destroy")
    out = api.destroy(session, api.read(session, "demo"), progress=lambda _: None, every_s=0, timeout_s=0)
    assert out.deleted == [] and "demo-network is kept" in out.network_kept and "(VPC CNI, in-use)" in \
        out.network_kept


def test_destroy_sweeps_the_vpc_before_deleting_the_network(moto) -> None:
    vpc, subnet = _network()
    ec2 = boto3.client("ec2", region_name=REGION)
    made = _leftovers(ec2, vpc, subnet)
    for name in ("attached", "cni-in-use"):  # the node is gone: its interfaces are released
        attachment = ec2.describe_network_interfaces(NetworkInterfaceIds=[made[name]])[
            "NetworkInterfaces"][0]["Attachment"]["AttachmentId"]
        ec2.detach_network_interface(AttachmentId=attachment)
    for name in ("someone", "attached"):  # what is not the services' the user deletes, as told
        ec2.delete_network_interface(NetworkInterfaceId=made[name])
    session = aws_session(region=REGION, command="destroy")
    out = api.destroy(session, api.read(session, "demo"), progress=lambda _: None, every_s=0)
    assert out.deleted == ["demo-network"] and not out.network_kept
    assert {made["cni"], made["lambda"], made["cni-in-use"], made["guardduty"]} <= set(out.swept)
