"""A project's stacks as CloudFormation holds them (boto3 CloudFormation ``DescribeStacks``): their state, reason,
termination protection and outputs, and which stacks a project builds, in deployment order. Read-only.

``fmcluster status`` shows them; ``fmcluster destroy`` reads the same to lift protection and delete them in the
reverse of :func:`project_stacks`' order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from fmcluster.aws.session import is_account_problem
from fmcluster.contracts import STACKS, stack_name
from fmcluster.plan import Plan

NOT_DEPLOYED = "NOT_DEPLOYED"
"""The state :func:`stack_state` gives a stack CloudFormation does not know (never deployed, or deleted)."""

GOOD = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE"})
"""Stack states in which a stack is what its template says (CloudFormation API reference, ``Stack.StackStatus``)."""
IN_PROGRESS_SUFFIX = "_IN_PROGRESS"


@dataclass(frozen=True)
class StackState:
    """One stack as ``DescribeStacks`` gives it (``status`` :data:`NOT_DEPLOYED` when it does not exist)."""

    name: str
    status: str
    reason: str | None = None
    termination_protection: bool = False
    stack_id: str | None = None
    updated: str | None = None
    """When it was last created or updated (ISO 8601)."""
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def deployed(self) -> bool:
        return self.status != NOT_DEPLOYED

    @property
    def ok(self) -> bool:
        return self.status in GOOD

    @property
    def busy(self) -> bool:
        return self.status.endswith(IN_PROGRESS_SUFFIX)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "reason": self.reason, "deployed": self.deployed,
                "ok": self.ok, "termination_protection": self.termination_protection, "stack_id": self.stack_id,
                "updated": self.updated}


def _missing(exc: ClientError) -> bool:
    """CloudFormation's answer for a stack it does not know: ``ValidationError`` "Stack with id X does not exist"."""
    error = exc.response.get("Error", {})
    return error.get("Code") == "ValidationError" and "does not exist" in str(error.get("Message", ""))


def stack_state(cfn: Any, name: str) -> StackState:
    """The stack ``name`` (boto3 CloudFormation client ``cfn``); a stack CloudFormation does not know is
    :data:`NOT_DEPLOYED`. Account problems (denied, expired, throttled) go to the caller's session."""
    try:
        [stack] = cfn.describe_stacks(StackName=name)["Stacks"]
    except ClientError as exc:
        if is_account_problem(exc) or not _missing(exc):
            raise
        return StackState(name, NOT_DEPLOYED)
    when = stack.get("LastUpdatedTime") or stack.get("CreationTime")
    return StackState(
        name=stack.get("StackName", name), status=stack.get("StackStatus", "UNKNOWN"),
        reason=stack.get("StackStatusReason") or None,
        termination_protection=bool(stack.get("EnableTerminationProtection", False)), stack_id=stack.get("StackId"),
        updated=when.isoformat() if hasattr(when, "isoformat") else (str(when) if when else None),
        outputs={o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", []) if "OutputValue" in o})


def stack_states(cfn: Any, names: Iterable[str]) -> list[StackState]:
    """:func:`stack_state` of each of ``names``, in order."""
    return [stack_state(cfn, name) for name in names]


def project_stacks(plan: Plan) -> list[str]:
    """The stacks the project builds, in deployment order (``stacks/app.py`` ``build_project``): the network; the
    storage unless both bucket and file system exist already; observability when on; the accounting database when
    the records live in one fmcluster creates; the cluster."""
    kinds = {"network": True, "storage": plan.storage.stack_needed, "observability": plan.observability.enabled,
             "accounting": plan.cluster.accounting_store == "database", "cluster": True}
    return [stack_name(plan.project, kind) for kind in STACKS if kinds[kind]]


def all_stacks(cfn: Any, plan: Plan) -> list[tuple[StackState, bool]]:
    """Every stack the project may have: (its state, whether the project builds it). One the project no longer builds
    (accounting turned off) is listed only while it is deployed."""
    built = set(project_stacks(plan))
    found = []
    for kind in STACKS:
        name = stack_name(plan.project, kind)
        state = stack_state(cfn, name)
        if name in built or state.deployed:
            found.append((state, name in built))
    return found


