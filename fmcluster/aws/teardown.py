"""What ``fmcluster destroy`` reads before it deletes anything: the project's stacks as CloudFormation holds them,
the order they go in, and what each keeps.

- **The stacks**: ``NAME-<role>`` for every role of :data:`fmcluster.contracts.STACKS` that is deployed
  (``DescribeStacks``), and the same names' deleted stacks (``ListStacks``, ``DELETE_COMPLETE``): CloudFormation
  answers ``GetTemplate`` and ``ListStackResources`` for a deleted stack by its ID for 90 days (API reference,
  ListStackResources: "For deleted stacks, ListStackResources returns resource information for up to 90 days after
  the stack has been deleted"), so what an earlier destroy kept is found again.
- **The order**: from the deployed templates, not a list: a stack that reads another's output (``Fn::ImportValue``
  of its export, or ``Fn::GetStackOutput`` naming it) goes first; stacks that do not read each other go in the
  reverse of the deploy order (:data:`~fmcluster.contracts.STACKS`): cluster, accounting, observability, storage,
  network.
- **What is kept**: the resources whose deployed template says ``DeletionPolicy: Retain``, by the physical ID
  CloudFormation lists; one *lives in the network* when its properties reach a value of ``NAME-network`` (a subnet,
  a security group, the VPC), directly or through a resource of its own template (the Aurora cluster through its
  subnet group): the network's subnets and VPC cannot be deleted under it (EC2 ``DeleteSubnet``/``DeleteVpc``:
  DependencyViolation while network interfaces or security groups are in them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from fmcluster.aws.kept import Kept
from fmcluster.aws.session import is_account_problem
from fmcluster.contracts import DATABASE_SUBNET_OUTPUTS, NETWORK_OUTPUTS, STACKS, export_name, stack_name
from fmcluster.facts import PROJECT_TAG
from fmcluster.guard import RETAINED

NETWORK = "network"


@dataclass
class DeployedStack:
    """One of the project's stacks as CloudFormation holds it (live, or deleted within 90 days)."""

    name: str
    stack_id: str
    status: str
    protected: bool
    template: dict = field(default_factory=dict)
    resources: list[dict] = field(default_factory=list)
    """ListStackResources' summaries."""
    deleted_at: str | None = None
    """When a deleted stack was deleted (ListStacks' ``DeletionTime``, ISO 8601): which destroy kept its resources."""
    tags: dict[str, str] = field(default_factory=dict)
    """The stack's tags (DescribeStacks; none for a deleted stack, which ListStacks lists without them)."""

    @property
    def role(self) -> str:
        return self.name.rsplit("-", 1)[-1]

    @property
    def deleted(self) -> bool:
        return self.status == "DELETE_COMPLETE"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "termination_protection": self.protected}


def project_tag(stack: DeployedStack) -> str | None:
    """The project ``stack`` was deployed for: its ``fmcluster:project`` tag, on the stack or, as CDK deploys
    fmcluster's stacks (``Tags.of(stack)`` tags every resource; the stack itself carries none), on the resources of
    its template. None: nothing in it carries the tag (fmcluster did not deploy it)."""
    if PROJECT_TAG in stack.tags:
        return stack.tags[PROJECT_TAG]
    for spec in stack.template.get("Resources", {}).values():
        tags = spec.get("Properties", {}).get("Tags") if isinstance(spec, dict) else None
        if isinstance(tags, dict) and isinstance(tags.get(PROJECT_TAG), str):
            return tags[PROJECT_TAG]
        for tag in tags if isinstance(tags, list) else []:
            if isinstance(tag, dict) and tag.get("Key") == PROJECT_TAG and isinstance(tag.get("Value"), str):
                return tag["Value"]
    return None


def _live(cfn: Any, name: str) -> dict | None:
    try:
        return cfn.describe_stacks(StackName=name)["Stacks"][0]
    except ClientError as exc:
        if is_account_problem(exc) or "does not exist" not in str(exc.response.get("Error", {}).get("Message", "")):
            raise
        return None


def _read(cfn: Any, described: dict) -> DeployedStack:
    stack_id = described["StackId"]
    body = cfn.get_template(StackName=stack_id, TemplateStage="Original")["TemplateBody"]
    resources: list[dict] = []
    for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack_id):
        resources.extend(page.get("StackResourceSummaries", []))
    when = described.get("DeletionTime")
    return DeployedStack(name=described["StackName"], stack_id=stack_id, status=described["StackStatus"],
                         protected=bool(described.get("EnableTerminationProtection")),
                         template=json.loads(body) if isinstance(body, str) else dict(body), resources=resources,
                         deleted_at=when.isoformat() if hasattr(when, "isoformat") else (str(when) if when else None),
                         tags={t["Key"]: t["Value"] for t in described.get("Tags") or [] if "Key" in t})


def read_stacks(cfn: Any, project: str) -> tuple[list[DeployedStack], list[DeployedStack]]:
    """(live stacks, deleted stacks) of ``project``, with their templates and resources."""
    names = {stack_name(project, role) for role in STACKS}
    live = [_read(cfn, d) for d in (_live(cfn, n) for n in sorted(names)) if d is not None]
    deleted = []
    for page in cfn.get_paginator("list_stacks").paginate(StackStatusFilter=["DELETE_COMPLETE"]):
        for summary in page.get("StackSummaries", []):
            if summary["StackName"] in names:
                deleted.append(_read(cfn, {**summary, "StackStatus": "DELETE_COMPLETE"}))
    return live, deleted


# --- references between stacks and to the network -----------------------------------------------

def _walk(node: Any, kind: str) -> list[Any]:
    found: list[Any] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == kind:
                found.append(value)
            found.extend(_walk(value, kind))
    elif isinstance(node, list):
        for value in node:
            found.extend(_walk(value, kind))
    return found


def exports_of(template: dict) -> set[str]:
    return {o["Export"]["Name"] for o in template.get("Outputs", {}).values()
            if isinstance(o, dict) and isinstance(o.get("Export", {}).get("Name"), str)}


def reads(node: Any, stacks: dict[str, set[str]]) -> set[str]:
    """The stacks (by name, of ``stacks``: name -> its export names) whose outputs ``node`` reads."""
    imported = {v for v in _walk(node, "Fn::ImportValue") if isinstance(v, str)}
    named = {v.get("StackName") for v in _walk(node, "Fn::GetStackOutput") if isinstance(v, dict)}
    return {name for name, exports in stacks.items() if name in named or exports & imported}


def delete_order(stacks: list[DeployedStack]) -> list[DeployedStack]:
    """Readers before what they read; otherwise the reverse of the deploy order. Raises ValueError on a cycle."""
    exports = {s.name: exports_of(s.template) for s in stacks}
    needs = {s.name: reads(s.template.get("Resources", {}), exports) - {s.name} for s in stacks}
    rank = {s.name: STACKS.index(s.role) if s.role in STACKS else -1 for s in stacks}
    left = {s.name: s for s in stacks}
    order = []
    while left:
        free = [n for n in left if not any(n in needs[m] for m in left if m != n)]
        if not free:
            raise ValueError(f"the stacks read each other's outputs in a cycle: {', '.join(sorted(left))}")
        pick = max(free, key=lambda n: (rank[n], n))
        order.append(left.pop(pick))
    return order


def network_exports(project: str, network: DeployedStack | None) -> set[str]:
    """The network's export names: its template's, and the contract's (a network deleted long ago still counts)."""
    names = {export_name(project, key) for key in (*NETWORK_OUTPUTS, *DATABASE_SUBNET_OUTPUTS)}
    return names | (exports_of(network.template) if network else set())


def in_network(template: dict, network: str, exports: set[str]) -> set[str]:
    """Logical IDs of ``template`` whose properties reach the network stack's values, directly or through
    ``Ref``/``Fn::GetAtt`` of resources in the same template."""
    resources = template.get("Resources", {})
    direct = {lid for lid, r in resources.items() if reads(r.get("Properties", {}), {network: exports})}
    uses = {lid: {v for v in _walk(r.get("Properties", {}), "Ref") if isinstance(v, str)} |
            {v[0] for v in _walk(r.get("Properties", {}), "Fn::GetAtt") if isinstance(v, list)}
            for lid, r in resources.items()}
    reached = set(direct)
    changed = True
    while changed:
        more = {lid for lid, used in uses.items() if lid not in reached and used & reached}
        reached |= more
        changed = bool(more)
    return reached


def retained(stack: DeployedStack, network: str, exports: set[str], region: str) -> list[Kept]:
    """The resources ``stack`` keeps (or kept) when deleted: ``DeletionPolicy: Retain`` in its deployed template and a
    physical ID (a resource never created has none)."""
    resources = stack.template.get("Resources", {})
    reach = in_network(stack.template, network, exports)
    kept = []
    for summary in stack.resources:
        lid, pid = summary.get("LogicalResourceId"), summary.get("PhysicalResourceId")
        spec = resources.get(lid or "", {})
        if pid and spec.get("DeletionPolicy") in RETAINED:
            kept.append(Kept(stack=stack.name, logical_id=lid, type=spec["Type"], physical_id=pid,
                             in_network=lid in reach, region=region))
    return kept
