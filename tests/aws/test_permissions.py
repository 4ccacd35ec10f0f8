"""The IAM actions each command needs (``fmcluster/aws/permissions.py``): real operations in botocore's
service models, exactly the API calls the code makes, and all of them in README."""

from __future__ import annotations

import ast
from pathlib import Path

import botocore.session
import pytest
from support import ROOT

from fmcluster.aws.permissions import COMMAND_ACTIONS

CORE = botocore.session.get_session()
DECLARED = {action for actions in COMMAND_ACTIONS.values() for action in actions}


SERVICES = ("sts", "ec2", "sagemaker", "service-quotas", "fsx", "sso-admin", "pricing", "cloudformation", "grafana")
"""The botocore services fmcluster's commands call."""


def models_by_prefix() -> dict[str, list]:
    """IAM prefix (botocore's signingName) -> the service models that sign with it."""
    found: dict[str, list] = {}
    for name in SERVICES:
        model = CORE.get_service_model(name)
        found.setdefault(model.signing_name, []).append(model)
    return found


MODELS = models_by_prefix()


@pytest.mark.parametrize("action", sorted(DECLARED))
def test_every_action_is_an_operation_of_its_service(action: str) -> None:
    prefix, operation = action.split(":")
    assert any(operation in m.operation_names for m in MODELS.get(prefix, [])), \
        f"{action}: no botocore service signing as {prefix!r} has an operation {operation}"


def called_actions(folder: Path = ROOT / "fmcluster" / "aws") -> dict[str, str]:
    """action -> where: every client method fmcluster.aws calls (``x.describe_stacks(``, ``get_paginator("...")``)
    that is an operation of a service fmcluster declares."""
    from botocore import xform_name

    methods = {xform_name(op): f"{prefix}:{op}" for prefix, models in MODELS.items() for m in models
               for op in m.operation_names}
    found: dict[str, str] = {}
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            name = node.func.attr
            if name == "get_paginator" and node.args and isinstance(node.args[0], ast.Constant):
                name = node.args[0].value
            if name in methods:
                found.setdefault(methods[name], f"{path.name}:{node.lineno}")
    return found


def test_the_code_calls_exactly_the_declared_actions() -> None:
    called = called_actions()
    undeclared = {a: where for a, where in called.items() if a not in DECLARED}
    assert not undeclared, f"called but not in COMMAND_ACTIONS (and README): {undeclared}"
    assert not DECLARED - set(called), f"declared but never called: {sorted(DECLARED - set(called))}"


def test_readme_lists_every_commands_actions() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Commands that call AWS", 1)[1].split("\n## ", 1)[0]
    for command, actions in COMMAND_ACTIONS.items():
        row = next((line for line in section.splitlines() if line.startswith(f"| `{command}")), None)
        assert row is not None, f"README has no row for {command}"
        assert [a for a in actions if f"`{a}`" not in row] == [], f"README's row for {command} misses actions"


def test_the_checks_catch_what_they_claim(tmp_path: Path) -> None:
    """A planted call to an undeclared operation, and a paginated one, are found."""
    (tmp_path / "planted.py").write_text("def f(ec2, sm):\n    ec2.describe_instances()\n"
                                         "    return sm.get_paginator('list_clusters')\n", encoding="utf-8")
    assert called_actions(tmp_path) == {"ec2:DescribeInstances": "planted.py:2", "sagemaker:ListClusters": "planted.py:3"}
