"""The IAM actions each command needs (``fmcluster/aws/permissions.py``): real operations in botocore's
service models, exactly the API calls the code makes, and all of them in README."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import botocore.session
import pytest
from support import ROOT

from fmcluster.aws.permissions import CLI_ACTIONS, COMMAND_ACTIONS, OPERATION_ACTIONS, SIGNED_HTTP

CORE = botocore.session.get_session()
DECLARED = {action for actions in COMMAND_ACTIONS.values() for action in actions}


SERVICES = ("sts", "ec2", "sagemaker", "service-quotas", "fsx", "sso-admin", "pricing", "cloudformation", "grafana",
            "pcs", "s3", "logs", "kms", "amp", "rds", "secretsmanager", "dynamodb", "ssm", "eks")
"""The botocore services fmcluster's commands call."""


@functools.cache
def models_by_prefix() -> dict[str, list]:
    """IAM prefix (botocore's signingName) -> the service models that sign with it (read on first use, not by every
    test worker at collection: 19 service models)."""
    found: dict[str, list] = {}
    for name in SERVICES:
        model = CORE.get_service_model(name)
        found.setdefault(model.signing_name, []).append(model)
    return found


@pytest.mark.parametrize("action", sorted(DECLARED - set(SIGNED_HTTP)))
def test_every_action_is_an_operation_of_its_service(action: str) -> None:
    if any(action in named for named in OPERATION_ACTIONS.values()):
        action = next(op for op, named in OPERATION_ACTIONS.items() if action in named)  # named after its operation
    prefix, operation = action.split(":")
    assert any(operation in m.operation_names for m in models_by_prefix().get(prefix, [])), \
        f"{action}: no botocore service signing as {prefix!r} has an operation {operation}"


def test_signed_http_actions_are_their_services_and_the_code_calls_them() -> None:
    """An action called as a signed HTTP request (the AMP alert manager's API) signs as a real service and is not a
    botocore operation (else a client should call it); the module that calls it names the same action and path."""
    from fmcluster.aws import alerts

    for action, request in SIGNED_HTTP.items():
        prefix, operation = action.split(":")
        models = models_by_prefix()
        assert prefix in models and not any(operation in m.operation_names for m in models[prefix]), action
    assert SIGNED_HTTP[alerts.ACTION] == "GET " + alerts.PATH.replace("{workspace}", "{workspaceId}")
    assert alerts.SERVICE == CORE.get_service_model("amp").signing_name
    assert any(alerts.ACTION in actions for actions in COMMAND_ACTIONS.values())


def test_cli_actions_are_real_operations() -> None:
    ssm = CORE.get_service_model("ssm")
    for command, actions in CLI_ACTIONS.items():
        assert command in COMMAND_ACTIONS
        for action in actions:
            prefix, operation = action.split(":")
            assert prefix == ssm.signing_name and operation in ssm.operation_names, action


def calls(folder: Path = ROOT / "fmcluster" / "aws") -> list[tuple[frozenset[str], str]]:
    """(the actions a call may be, where) for every client method fmcluster.aws calls (``x.describe_stacks(``,
    ``get_paginator("...")``) that is an operation of a service fmcluster declares.

    Two services can share an operation's name (``list_clusters``: SageMaker and PCS). A call on
    ``clients("pcs")`` or ``session.client("pcs")`` is that service's; on any other receiver it may be any of them."""
    from botocore import xform_name

    methods: dict[str, dict[str, str]] = {}
    for name in SERVICES:
        model = CORE.get_service_model(name)
        for op in model.operation_names:
            methods.setdefault(xform_name(op), {})[name] = f"{model.signing_name}:{op}"
    renamed = {}  # an operation whose IAM actions have other names counts as all of them
    for method, by_service in methods.items():
        renamed[method] = {service: OPERATION_ACTIONS.get(action, (action,)) for service, action in by_service.items()}
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            name = node.func.attr
            if name == "get_paginator" and node.args and isinstance(node.args[0], ast.Constant):
                name = node.args[0].value
            if name not in methods:
                continue
            receiver = node.func.value
            service = (receiver.args[0].value if isinstance(receiver, ast.Call) and receiver.args
                       and isinstance(receiver.args[0], ast.Constant) else None)
            by_service = renamed[name]
            actions = set(by_service[service]) if service in by_service else set().union(*by_service.values())
            found.append((frozenset(actions), f"{path.name}:{node.lineno}"))
    return found


def called_actions(folder: Path = ROOT / "fmcluster" / "aws") -> dict[str, str]:
    """action -> where: every action a call in ``folder`` may be (the first call of each)."""
    found: dict[str, str] = {}
    for actions, where in calls(folder):
        for action in sorted(actions):
            found.setdefault(action, where)
    return found


def test_the_code_calls_exactly_the_declared_actions() -> None:
    undeclared = {" or ".join(sorted(actions)): where for actions, where in calls() if not actions & DECLARED}
    assert not undeclared, f"called but not in COMMAND_ACTIONS (and README): {undeclared}"
    called = set(called_actions()) | set(SIGNED_HTTP)  # SIGNED_HTTP: the test above
    assert not DECLARED - called, f"declared but never called: {sorted(DECLARED - called)}"


def test_the_docs_list_every_commands_actions() -> None:
    """docs/cli.md's "Commands that call AWS" (README's section before it moved there)."""
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = page.split("### Commands that call AWS", 1)[1].split("\n## ", 1)[0]
    for command, actions in COMMAND_ACTIONS.items():
        row = next((line for line in section.splitlines() if line.startswith(f"| `{command}")), None)
        assert row is not None, f"docs/cli.md has no row for {command}"
        actions = (*actions, *CLI_ACTIONS.get(command, ()))
        assert [a for a in actions if f"`{a}`" not in row] == [], f"docs/cli.md's row for {command} misses actions"


def test_the_checks_catch_what_they_claim(tmp_path: Path) -> None:
    """A planted call to an undeclared operation, and a paginated one, are found."""
    (tmp_path / "planted.py").write_text("def f(ec2, sm, clients):\n    ec2.describe_instances()\n"
                                         "    sm.get_paginator('list_clusters')\n"
                                         "    return clients('pcs').list_clusters()\n", encoding="utf-8")
    # list_clusters is SageMaker's, PCS's and EKS's: on a plain receiver it may be any, on clients("pcs") it is PCS's
    assert calls(tmp_path) == [(frozenset({"ec2:DescribeInstances"}), "planted.py:2"),
                               (frozenset({"sagemaker:ListClusters", "pcs:ListClusters", "eks:ListClusters"}),
                                "planted.py:3"),
                               (frozenset({"pcs:ListClusters"}), "planted.py:4")]
