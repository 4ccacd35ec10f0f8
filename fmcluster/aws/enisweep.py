"""What AWS services leave in the project's VPC after its stacks are gone, swept before ``NAME-network`` is deleted
(issue 41): CloudFormation deletes only what it created, and a subnet or VPC with a network interface in it fails
to delete (``DependencyViolation``), leaving the network stack ``DELETE_FAILED``.

- **The VPC CNI** (EKS pods' addresses): a node that went away without the CNI's cleanup leaves its secondary ENIs
  ``available``, described ``aws-K8S-<instance>`` and tagged ``node.k8s.amazonaws.com/instance_id`` (amazon-vpc-cni-k8s,
  ``pkg/awsutils``: ``eniDescriptionPrefix``, ``eniNodeTagKey``).
- **Lambda** (the kubectl handler and the other custom-resource functions in the VPC): Lambda deletes a function's
  Hyperplane ENIs itself, some time after the function (Lambda developer guide, "Connecting outbound networking to
  resources in a VPC": ENIs kept up to weeks while any function uses them; ``InterfaceType`` ``lambda``). destroy
  waits, bounded, for them to go, and deletes those left ``available``.
- **GuardDuty's endpoint**: GuardDuty Runtime Monitoring with automated agent management creates a VPC endpoint
  (service ``com.amazonaws.<region>.guardduty-data``) and a security group ``GuardDutyManagedSecurityGroup-<vpc>`` in
  every VPC with EKS or EC2 workloads (GuardDuty user guide, "Managing the security agent automatically"; AWS's own
  Terraform for HyperPod EKS deletes both before the VPC: awsome-distributed-training
  ``terraform-modules/hyperpod-eks-tf/scripts/guardduty-cleanup.sh``).

Nothing in use is touched: an ENI attached to anything (a retained file system's, a node's) or of another requester
stays, and the network is then kept with what blocks it named.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

VPC_CNI_PREFIX = "aws-K8S-"
VPC_CNI_TAG = "node.k8s.amazonaws.com/instance_id"
LAMBDA_PREFIX = "AWS Lambda VPC ENI"
GUARDDUTY_SERVICE = "guardduty-data"
GUARDDUTY_GROUP = "GuardDutyManagedSecurityGroup-"
WAIT_S = 1800.0
"""How long destroy waits for Lambda and GuardDuty's ENIs to go (Lambda's can take 20 minutes and more)."""
POLL_S = 30.0


@dataclass
class Sweep:
    deleted: list[str] = field(default_factory=list)
    """What was deleted: ``eni-...`` (by whom left), ``vpce-...``, ``sg-...``."""
    left: list[str] = field(default_factory=list)
    """What is still there at the bound, in words."""


def _left_by(eni: dict) -> str | None:
    """Which service left ``eni`` (None: not one destroy may sweep)."""
    description = eni.get("Description") or ""
    tags = {t["Key"] for t in eni.get("TagSet", [])}
    if description.startswith(VPC_CNI_PREFIX) or VPC_CNI_TAG in tags:
        return "VPC CNI"
    if description.startswith(LAMBDA_PREFIX) or eni.get("InterfaceType") == "lambda":
        return "Lambda"
    return None


def _interfaces(ec2: Any, vpc_id: str) -> list[dict]:
    out: list[dict] = []
    for page in ec2.get_paginator("describe_network_interfaces").paginate(
            Filters=[{"Name": "vpc-id", "Values": [vpc_id]}]):
        out += page["NetworkInterfaces"]
    return out


def _guardduty(ec2: Any, vpc_id: str) -> tuple[list[str], list[str]]:
    """GuardDuty's endpoints in the VPC, and its security groups there."""
    endpoints = [e["VpcEndpointId"] for e in ec2.describe_vpc_endpoints(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["VpcEndpoints"]
        if e.get("ServiceName", "").endswith(f".{GUARDDUTY_SERVICE}")
        and e.get("State", "").lower() not in ("deleted", "deleting")]
    groups = [g["GroupId"] for g in ec2.describe_security_groups(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["SecurityGroups"]
        if g.get("GroupName", "").startswith(GUARDDUTY_GROUP)]
    return endpoints, groups


def sweep(ec2: Any, vpc_id: str, *, progress: Callable[[str], None], timeout_s: float = WAIT_S,
          every_s: float = POLL_S, sleep: Callable[[float], None] = time.sleep,
          clock: Callable[[], float] = time.monotonic) -> Sweep:
    """Delete GuardDuty's endpoints, then every ``available`` ENI the VPC CNI or Lambda left in ``vpc_id``, waiting up
    to ``timeout_s`` for Lambda's and the endpoints' ENIs to be released; then GuardDuty's security groups."""
    out = Sweep()
    endpoints, groups = _guardduty(ec2, vpc_id)
    if endpoints:
        ec2.delete_vpc_endpoints(VpcEndpointIds=endpoints)
        out.deleted += endpoints
        progress(f"{vpc_id}: GuardDuty's VPC endpoint deleted ({', '.join(endpoints)})")
    deadline = clock() + timeout_s
    while True:
        waiting, endpoint_enis = [], []
        for eni in _interfaces(ec2, vpc_id):
            who = _left_by(eni)
            if eni.get("InterfaceType") == "vpc_endpoint" and any(e in (eni.get("Description") or "")
                                                                  for e in endpoints):
                endpoint_enis.append(f"{eni['NetworkInterfaceId']} (GuardDuty's endpoint, {eni.get('Status')})")
            elif who is not None and eni.get("Status") == "available":
                ec2.delete_network_interface(NetworkInterfaceId=eni["NetworkInterfaceId"])
                out.deleted.append(eni["NetworkInterfaceId"])
                progress(f"{vpc_id}: {eni['NetworkInterfaceId']} left by {who} deleted")
            elif who is not None:
                waiting.append(f"{eni['NetworkInterfaceId']} ({who}, {eni.get('Status')})")
        waiting += endpoint_enis
        if not waiting or clock() >= deadline:
            break
        progress(f"{vpc_id}: waiting for {', '.join(waiting)} to be released")
        sleep(every_s)
    out.left += waiting
    if groups and not endpoint_enis:
        for group in groups:
            ec2.delete_security_group(GroupId=group)
        out.deleted += groups
        progress(f"{vpc_id}: GuardDuty's security group deleted ({', '.join(groups)})")
    return out
