"""Termination protection in moto 5.2.5's CloudFormation (patch 10 of ``moto_patched.py``; the unit tests of
``fmcluster destroy`` install it in process with ``install(monkeypatch.setattr)``).

moto takes ``EnableTerminationProtection`` on ``CreateStack`` and stores it, but has no ``UpdateTerminationProtection``
(the CDK CLI calls it after creating a change set for a stack whose protection differs: every protected stack's first
deploy fails against moto) and deletes a protected stack anyway ("The functionality behind EnableTerminationProtection
is not yet implemented", ``CloudFormationBackend.create_stack``). CloudFormation refuses: "Stack [NAME] cannot be
deleted while TerminationProtection is enabled" (a ``ValidationError``; the message as aws-nuke issue #821 quotes it).
The patch adds the call and the refusal, nothing else.
"""

from __future__ import annotations

from typing import Any, Callable

from moto.cloudformation import models as cfn
from moto.cloudformation import responses
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
