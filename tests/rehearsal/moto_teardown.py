"""Termination protection in moto 5.2.5's CloudFormation (patch 10 of ``moto_patched.py``; the unit tests of
``fmcluster destroy`` install it in process with ``install(monkeypatch.setattr)``).

moto takes ``EnableTerminationProtection`` on ``CreateStack`` and stores it, but has no ``UpdateTerminationProtection``
(the CDK CLI calls it after creating a change set for a stack whose protection differs: every protected stack's first
deploy fails against moto) and deletes a protected stack anyway ("The functionality behind EnableTerminationProtection
is not yet implemented", ``CloudFormationBackend.create_stack``). CloudFormation refuses: "Stack [NAME] cannot be
deleted while TerminationProtection is enabled" (a ``ValidationError``; the message as aws-nuke issue #821 quotes it).
The patch adds the call and the refusal, nothing else.

Two more gaps of moto's stack deletes, patches 13 and 14 of ``moto_patched.py`` (``install_deletes``), which the
accounting stack's retained database brings out (each makes moto do what CloudFormation does):

13. ``DELETE_FAILED``. When a resource of a stack cannot be deleted, moto's ``DeleteStack`` answers with that
    resource's error and drops the stack from the Region (it pops the stack before deleting its resources): the stack is
    neither listed nor deleted. CloudFormation accepts the call, deletes what it can and leaves the stack
    ``DELETE_FAILED`` with a ``DELETE_FAILED`` event per resource that would not go, carrying the service's message
    (AWS CloudFormation User Guide, "Stack status codes": DELETE_FAILED, "Unsuccessful deletion of one or more
    stacks"). The patch does that; the stack keeps its outputs and exports, as a stack that did not go.
14. A deleted stack's resources. moto's ``ResourceMap`` is a lazy map: reading a resource it no longer holds creates
    it. ``ListStackResources`` of a deleted stack reads every resource of its template, and ``DescribeStacks`` its
    outputs' resources, so each one the delete removed is *created again* (a second security group, role, bucket in
    the backend). CloudFormation lists a deleted stack's resources for 90 days (API reference, ListStackResources)
    with their last status: ``DELETE_COMPLETE``, or ``DELETE_SKIPPED`` for a ``DeletionPolicy: Retain`` resource,
    which it left in place; a deleted stack exports nothing. The patch records the resources and outputs as the
    delete found them and answers from that record, creating nothing (whether CloudFormation still shows a deleted
    stack's outputs is unconfirmed; fmcluster does not read them).
"""

from __future__ import annotations

from typing import Any, Callable

from moto.cloudformation import models as cfn
from moto.cloudformation import parsing, responses
from moto.cloudformation.exceptions import ValidationError


def _flag(value: Any) -> bool:
    return value is True or str(value).lower() == "true"


def update_termination_protection(self: responses.CloudFormationResponse) -> Any:
    stack = self.cloudformation_backend.get_stack(self._get_param("StackName"))
    stack.enable_termination_protection = _flag(self._get_param("EnableTerminationProtection"))
    return responses.ActionResult({"StackId": stack.stack_id})


def refusing(delete_stack: Callable[..., None]) -> Callable[..., None]:
    def delete_protected(self: cfn.CloudFormationBackend, name_or_stack_id: str) -> None:
        for stack in [s for s in self.stacks.values() if name_or_stack_id in (s.name, s.stack_id)]:
            if stack.enable_termination_protection:
                raise ValidationError(message=f"Stack [{stack.name}] cannot be deleted while TerminationProtection "
                                              "is enabled")
        delete_stack(self, name_or_stack_id)
    return delete_protected


def install(set_attr: Callable[[Any, str, Any], None] = setattr) -> None:
    """Apply the patch (``setattr``, or pytest's ``monkeypatch.setattr`` to undo it after a test)."""
    set_attr(responses.CloudFormationResponse, "update_termination_protection", update_termination_protection,
             **({"raising": False} if set_attr is not setattr else {}))
    set_attr(cfn.CloudFormationBackend, "delete_stack", refusing(cfn.CloudFormationBackend.delete_stack))


# --- 13. DELETE_FAILED ---------------------------------------------------------------------------

class _DeleteFailed(Exception):
    def __init__(self, stack: cfn.Stack) -> None:
        super().__init__(stack.name)
        self.stack = stack


def _recording(delete_resource: Callable[..., None]) -> Callable[..., None]:
    def delete(self: parsing.ResourceMap, parsed_resource: Any, resource_json: dict) -> None:
        """Each resource's delete error, kept until a later pass of moto's loop deletes it after all."""
        failures = self.__dict__.setdefault("_fmc_failures", {})
        logical_id = parsed_resource.logical_resource_id
        try:
            delete_resource(self, parsed_resource, resource_json)
        except Exception as exc:
            failures[logical_id] = (resource_json.get("Type", ""),
                                    getattr(parsed_resource, "physical_resource_id", ""), exc)
            raise
        failures.pop(logical_id, None)
    return delete


def _reason(exc: Exception) -> str:
    code = getattr(exc, "code", None) or getattr(exc, "error_type", None) or type(exc).__name__
    return f"{getattr(exc, 'message', None) or exc} (Service error code: {code})"


def _resources(stack: cfn.Stack) -> dict[str, tuple[str, str]]:
    """Logical ID -> (type, physical ID) of what the stack holds now, read without creating anything."""
    return {lid: (getattr(r, "cf_resource_type", ""), getattr(r, "physical_resource_id", "") or "")
            for lid, r in stack.resource_map._parsed_resources.items() if hasattr(r, "logical_resource_id")}


def _record(stack: cfn.Stack, failures: dict[str, Any]) -> None:
    """--- 14. What ListStackResources, DescribeStacks' outputs and the exports answer once a delete ran (a retry of a
    DELETE_FAILED stack adds to what the first attempt recorded)."""
    kept = {lid for lid, spec in (stack.template_dict.get("Resources") or {}).items()
            if isinstance(spec, dict) and spec.get("DeletionPolicy") == "Retain"}
    left = stack.resource_map._parsed_resources
    for lid, summary in stack.__dict__["_fmc_deleted"].items():
        summary["ResourceStatus"] = ("DELETE_FAILED" if lid in failures else "DELETE_SKIPPED" if lid in kept
                                     else "DELETE_COMPLETE" if lid not in left else summary["ResourceStatus"])


def stack_delete(self: cfn.Stack) -> None:
    self._add_stack_event("DELETE_IN_PROGRESS", resource_status_reason="User Initiated")
    if "_fmc_deleted" not in self.__dict__:  # the first attempt: everything is there, read it before it goes
        self.__dict__["_fmc_outputs"], self.__dict__["_fmc_exports"] = self.outputs, list(self.exports)
        self.__dict__["_fmc_deleted"] = {lid: {"LogicalResourceId": lid, "PhysicalResourceId": pid,
                                               "ResourceType": rtype, "ResourceStatus": "CREATE_COMPLETE"}
                                         for lid, (rtype, pid) in _resources(self).items()}
    self.resource_map.__dict__["_fmc_failures"] = {}
    try:
        self.resource_map.delete()
    except Exception:
        failures = self.resource_map.__dict__["_fmc_failures"]
        if not failures:
            raise
        _record(self, failures)
        for logical_id, (rtype, physical_id, exc) in failures.items():
            self.events.append(cfn.Event(stack_id=self.stack_id, stack_name=self.name, logical_resource_id=logical_id,
                                         physical_resource_id=physical_id, resource_type=rtype,
                                         resource_status="DELETE_FAILED", resource_status_reason=_reason(exc),
                                         resource_properties=None))
        self._add_stack_event("DELETE_FAILED", resource_status_reason="The following resource(s) failed to delete: "
                                                                      f"[{', '.join(sorted(failures))}]. ")
        self.status = "DELETE_FAILED"
        raise _DeleteFailed(self) from None
    _record(self, {})
    self._add_stack_event("DELETE_COMPLETE")
    self.status = "DELETE_COMPLETE"


def failing_softly(delete_stack: Callable[..., None]) -> Callable[..., None]:
    """``DeleteStack`` is accepted; a stack whose resources would not all go stays, ``DELETE_FAILED``."""
    def delete(self: cfn.CloudFormationBackend, name_or_stack_id: str) -> None:
        try:
            delete_stack(self, name_or_stack_id)
        except _DeleteFailed as failed:
            self.stacks[failed.stack.stack_id] = failed.stack  # moto popped it before deleting its resources
    return delete


# --- 14. a deleted stack's resources -------------------------------------------------------------

def listing(list_stack_resources: Callable[..., Any]) -> Callable[..., Any]:
    def list_resources(self: responses.CloudFormationResponse) -> Any:
        stack = self.cloudformation_backend.get_stack(self._get_param("StackName"))
        deleted = stack.__dict__.get("_fmc_deleted")
        if deleted is None:
            return list_stack_resources(self)
        return responses.ActionResult({"StackResourceSummaries": [
            {**summary, "LastUpdatedTimestamp": stack.creation_time} for summary in deleted.values()]})
    return list_resources


def _deleted(prop: property, frozen: Callable[[cfn.Stack], Any]) -> property:
    """``prop`` of a stack no delete has touched; else ``frozen`` (nothing read from its lazy resource map)."""
    return property(lambda self: frozen(self) if "_fmc_deleted" in self.__dict__ else prop.fget(self))


def install_deletes(set_attr: Callable[[Any, str, Any], None] = setattr) -> None:
    """Apply patches 13 and 14."""
    set_attr(parsing.ResourceMap, "_delete_resource", _recording(parsing.ResourceMap._delete_resource))
    set_attr(cfn.Stack, "delete", stack_delete)
    set_attr(cfn.Stack, "outputs", _deleted(cfn.Stack.outputs, lambda stack: stack.__dict__["_fmc_outputs"]))
    set_attr(cfn.Stack, "exports", _deleted(cfn.Stack.exports, lambda stack: [] if stack.status == "DELETE_COMPLETE"
                                            else stack.__dict__["_fmc_exports"]))
    set_attr(cfn.Stack, "stack_resources", _deleted(cfn.Stack.stack_resources, lambda stack: [
        r for r in stack.resource_map._parsed_resources.values() if hasattr(r, "logical_resource_id")]))
    set_attr(cfn.CloudFormationBackend, "delete_stack", failing_softly(cfn.CloudFormationBackend.delete_stack))
    set_attr(responses.CloudFormationResponse, "list_stack_resources",
             listing(responses.CloudFormationResponse.list_stack_resources))
