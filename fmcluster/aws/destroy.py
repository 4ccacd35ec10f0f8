"""``fmcluster destroy``'s work: the reverse of deploy, on the stacks CloudFormation holds.

1. read the project's stacks, their order and what each keeps (:mod:`fmcluster.aws.teardown`);
2. for each stack, readers first: lift its termination protection (``UpdateTerminationProtection``: a stack
   delete alone never does; FACTS.md section 8), ``DeleteStack``, and wait for ``DELETE_COMPLETE`` with a bound,
   saying what happens (a ``DELETE_FAILED`` stops it with the resources' reasons);
3. the network last, and only when nothing kept lives in it: a retained file system or database keeps its network
   interfaces in the network's subnets and its security groups in the VPC, so CloudFormation would fail to delete
   the subnets and the VPC under it (DependencyViolation) and leave ``NAME-network`` in ``DELETE_FAILED``. The network
   stays (and is listed, with what it costs) until they are gone; ``--delete-retained`` deletes them first. Before
   it, what AWS services left in the project's own VPC (the VPC CNI's and Lambda's ENIs, GuardDuty's endpoint) is
   swept (:mod:`fmcluster.aws.enisweep`), for the same reason;
4. with ``--delete-retained``: every kept resource, dependents first (:func:`fmcluster.aws.kept.delete`), the Aurora
   cluster after a final snapshot and the file system after a final backup;
5. what is still there: every kept resource, described again, with its monthly cost and its delete commands.

Protection is lifted only on the stack about to be deleted: if a delete fails, the stacks after it keep theirs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fmcluster.aws import enisweep
from fmcluster.aws.kept import Kept, delete, describe, poll
from fmcluster.aws.teardown import (
    NETWORK,
    DeployedStack,
    delete_order,
    network_exports,
    project_tag,
    read_stacks,
    retained,
)
from fmcluster.contracts import stack_name
from fmcluster.plan.cost import CostSummary, network_month
from fmcluster.prices import lookup

STACK_WAIT_S = 3600
"""The longest fmcluster waits for one stack to delete (a ParallelCluster cluster stack takes some minutes)."""
POLL_S = 10.0


class DestroyError(RuntimeError):
    """A stack did not delete (``DELETE_FAILED``, or still deleting at the bound); nothing after it was touched."""


@dataclass
class Teardown:
    """What destroy will do and keep, read before it deletes anything."""

    project: str
    region: str
    stacks: list[DeployedStack]
    """Live stacks, in the order they are deleted."""
    kept: list[Kept]
    """Retained resources of the live and the deleted stacks that are still there."""
    kept_by: dict[tuple[str, str], str] = field(default_factory=dict)
    """(type, physical ID) of each of :attr:`kept` -> which destroy keeps or kept it: this one (its stack is live) or
    an earlier one (its stack deleted, and when)."""

    def who_kept(self, k: Kept) -> str:
        return self.kept_by.get((k.type, k.physical_id), f"{k.stack}")

    def foreign(self) -> list[DeployedStack]:
        """Live stacks with the project's names that fmcluster did not deploy for it: it tags every stack's resources
        ``fmcluster:project=NAME`` (``stacks/app.py``; :func:`~fmcluster.aws.teardown.project_tag`). destroy deletes
        none of them, and so nothing. A stack that holds nothing (a change set never executed: REVIEW_IN_PROGRESS, no
        template) is not judged: deleting it deletes nothing."""
        return [s for s in self.stacks if (tag := project_tag(s)) != self.project
                and (tag is not None or s.resources or s.template.get("Resources"))]

    @property
    def network(self) -> DeployedStack | None:
        return next((s for s in self.stacks if s.role == NETWORK), None)

    def blocking(self) -> list[Kept]:
        return [k for k in self.kept if k.in_network]


@dataclass
class Outcome:
    deleted: list[str] = field(default_factory=list)
    lifted: list[str] = field(default_factory=list)
    network_kept: str = ""
    """Why ``NAME-network`` was not deleted (empty: deleted, or not deployed)."""
    network_cost: tuple[float | None, str] = (None, "")
    kept: list[Kept] = field(default_factory=list)
    deleted_retained: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    """What --delete-retained left instead: final snapshot and backup, key and secret pending deletion."""
    swept: list[str] = field(default_factory=list)
    """What services had left in the project's VPC, deleted before the network (:mod:`fmcluster.aws.enisweep`)."""


def read(session: Any, project: str) -> Teardown:
    """Everything destroy needs to know, read-only."""
    live, deleted = read_stacks(session.client("cloudformation"), project)
    network_name = stack_name(project, NETWORK)
    network = next((s for s in live + deleted if s.name == network_name), None)
    exports = network_exports(project, network)
    kept, by = [], {}
    for stack in live + deleted:
        for k in retained(stack, network_name, exports, session.region):
            if (k.type, k.physical_id) not in by:
                by[(k.type, k.physical_id)] = kept_by(stack)
                kept.append(k)
    return Teardown(project, session.region, delete_order(live), present(session, kept), by)


def kept_by(stack: DeployedStack) -> str:
    """Which destroy keeps what ``stack`` retains: this one while the stack is live, else the one that deleted it."""
    if not stack.deleted:
        return f"this destroy ({stack.name})"
    when = f", deleted {stack.deleted_at[:10]}" if stack.deleted_at else ""
    return f"an earlier destroy ({stack.name}{when})"


def present(session: Any, kept: list[Kept]) -> list[Kept]:
    """Those of ``kept`` still there, described (size, state, cost, commands), in the order they can be deleted."""
    return sorted((k for k in kept if describe(session, k)), key=lambda k: (k.rank, k.stack, k.logical_id))


def wait_deleted(cfn: Any, stack: DeployedStack, *, timeout_s: float, every_s: float,
                 progress: Callable[[str], None], sleep: Callable[[float], None] = time.sleep) -> None:
    """Until ``stack`` is ``DELETE_COMPLETE``; DestroyError on ``DELETE_FAILED`` (with the reasons) or at the bound."""
    started, last = time.monotonic(), ""
    said = started
    while True:
        status = cfn.describe_stacks(StackName=stack.stack_id)["Stacks"][0]["StackStatus"]
        minutes = (time.monotonic() - started) / 60
        if status == "DELETE_COMPLETE":
            progress(f"{stack.name}: DELETE_COMPLETE ({minutes:.0f} min)")
            return
        if status == "DELETE_FAILED":
            raise DestroyError(f"{stack.name} ended DELETE_FAILED: {failure_reasons(cfn, stack)} (hint: fix what it "
                               f"names, then run `fmcluster destroy` again)")
        if status != last or time.monotonic() - said >= 60:
            progress(f"{stack.name}: {status} ({minutes:.0f} min)")
            last, said = status, time.monotonic()
        if time.monotonic() - started > timeout_s:
            raise DestroyError(f"{stack.name} is still {status} after {timeout_s / 60:.0f} min; CloudFormation goes "
                               "on deleting it (hint: run `fmcluster destroy` again to follow it)")
        sleep(every_s)


def failure_reasons(cfn: Any, stack: DeployedStack) -> str:
    events = cfn.describe_stack_events(StackName=stack.stack_id).get("StackEvents", [])
    reasons = [f"{e['LogicalResourceId']}: {e.get('ResourceStatusReason', '?')}" for e in events
               if e.get("ResourceStatus") == "DELETE_FAILED" and e.get("LogicalResourceId") != stack.name]
    return "; ".join(dict.fromkeys(reasons)) or "no reason given (see its events in the console)"


def delete_stack(session: Any, stack: DeployedStack, out: Outcome, *, timeout_s: float, every_s: float,
                 progress: Callable[[str], None], sleep: Callable[[float], None]) -> None:
    cfn = session.client("cloudformation")
    if stack.protected:
        cfn.update_termination_protection(StackName=stack.stack_id, EnableTerminationProtection=False)
        out.lifted.append(stack.name)
        progress(f"{stack.name}: termination protection lifted")
    cfn.delete_stack(StackName=stack.stack_id)
    progress(f"{stack.name}: deleting")
    wait_deleted(cfn, stack, timeout_s=timeout_s, every_s=every_s, progress=progress, sleep=sleep)
    out.deleted.append(stack.name)


def network_cost(stack: DeployedStack, region: str | None = None) -> tuple[float | None, str]:
    """What keeping ``NAME-network`` costs a month: its NAT gateways and their public IPv4 addresses (the stack's
    Elastic IPs) by the hour, data by use; priced as the plan's "destroyed" column prices them
    (:func:`fmcluster.plan.cost.network_month`). ``region``: else the stack ID's."""
    nat = sum(1 for r in stack.resources if r.get("ResourceType") == "AWS::EC2::NatGateway")
    eips = sum(1 for r in stack.resources if r.get("ResourceType") == "AWS::EC2::EIP")
    endpoints = sum(1 for r in stack.template.get("Resources", {}).values()
                    if r.get("Type") == "AWS::EC2::VPCEndpoint"
                    and r.get("Properties", {}).get("VpcEndpointType") == "Interface")
    if not nat and not eips and not endpoints:
        return 0.0, "no NAT gateway"
    region = region or _arn_region(stack.stack_id)
    items = tuple(network_month(nat, eips, endpoints, lookup(region)))
    if CostSummary.unpriced(items):
        return None, f"{nat} NAT gateway(s): price not in the table"
    usd = CostSummary.total(items)
    about = "~" if CostSummary.estimated(items) else ""
    more = f", {endpoints} interface endpoint{'s' if endpoints > 1 else ''}" if endpoints else ""
    return usd, (f"{about}${usd:,.2f}/month ({nat} NAT gateway{'s' if nat > 1 else ''} and {eips} public IPv4 "
                 f"address{'es' if eips != 1 else ''}{more}, plus data processed)")


def _arn_region(stack_id: str) -> str | None:
    parts = stack_id.split(":")
    return parts[3] if len(parts) > 4 and parts[0] == "arn" else None


def destroy(session: Any, teardown: Teardown, *, delete_retained: bool = False, progress: Callable[[str], None],
            timeout_s: float = STACK_WAIT_S, every_s: float = POLL_S,
            sleep: Callable[[float], None] = time.sleep) -> Outcome:
    """Delete ``teardown``'s stacks (and with ``delete_retained`` what they kept); raises DestroyError."""
    out = Outcome()
    waits = {"timeout_s": timeout_s, "every_s": every_s, "progress": progress, "sleep": sleep}
    for stack in teardown.stacks:
        if stack.role != NETWORK:
            delete_stack(session, stack, out, **waits)
    kept = present(session, teardown.kept)
    if delete_retained:
        for k in kept:
            progress(f"deleting {k.type} {k.physical_id} ({k.stack}/{k.logical_id})")
            try:
                left = delete(session, k, lambda what, done: poll(what, done, **waits))
            except TimeoutError as exc:
                raise DestroyError(f"{exc} (hint: run `fmcluster destroy --delete-retained` again)") from None
            out.deleted_retained.append(f"{k.type} {k.physical_id}")
            if left:
                out.left.append(left)
        kept = present(session, teardown.kept)
    network = teardown.network
    if network is not None:
        blocking = [k for k in kept if k.in_network]
        if blocking:
            out.network_kept = (f"{network.name} is kept: {', '.join(f'{k.type} {k.physical_id}' for k in blocking)} "
                                "live in its VPC, and CloudFormation cannot delete its subnets or VPC under them")
            out.network_cost = network_cost(network, teardown.region)
        else:
            vpc = next((r.get("PhysicalResourceId") for r in network.resources
                        if r.get("ResourceType") == "AWS::EC2::VPC"), None)  # the project's own VPC only
            swept = enisweep.sweep(session.client("ec2"), vpc, progress=progress, sleep=sleep, every_s=every_s,
                                   timeout_s=min(enisweep.WAIT_S, timeout_s)) if vpc else enisweep.Sweep()
            out.swept = swept.deleted
            if swept.left:
                out.network_kept = (f"{network.name} is kept: {', '.join(swept.left)} still in its VPC (AWS releases "
                                    "them; run `fmcluster destroy` again later)")
                out.network_cost = network_cost(network, teardown.region)
            else:
                delete_stack(session, network, out, **waits)
    out.kept = kept
    return out
