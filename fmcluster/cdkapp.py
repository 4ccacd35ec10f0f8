"""The CDK app behind ``app.py``: ``-c project=NAME`` (default ``default``), or ``-c project=all``."""

from __future__ import annotations

import sys

from aws_cdk import App

from fmcluster import checks, config
from fmcluster.bootstrap import checks as _bootstrap_checks  # noqa: F401  (registers its checks)
from fmcluster.errors import ConfigError


def project_refs(selector: str) -> list[str]:
    """``all`` means every file under ``projects/``; otherwise a comma-separated list of names or paths."""
    if selector == "all":
        return [str(p) for p in sorted(config.projects_dir().glob("*.yaml"))]
    return [ref.strip() for ref in selector.split(",") if ref.strip()]


def build(app: App, refs: list[str]) -> None:
    """Validate every project first (reporting all errors), then add their stacks."""
    from fmcluster.stacks import add_nag, build_project

    loaded_plans = []
    problems = []
    for ref in refs:
        try:
            loaded = config.load(ref)
            plan, warnings = checks.validate(loaded)
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        for warning in warnings:
            print(f"warning: {warning.format()}", file=sys.stderr)
        loaded_plans.append((loaded, plan))
    if problems:
        raise ConfigError(problems)
    for loaded, plan in loaded_plans:
        build_project(app, loaded, plan)
    if _flag(app, "nag", True):
        add_nag(app)


def _flag(app: App, key: str, default: bool) -> bool:
    value = app.node.try_get_context(key)
    return default if value is None else str(value).lower() not in ("false", "0", "no", "off")


def new_app(**kwargs) -> App:
    """An App with CDK's built-in CloudFormation validation off unless ``-c cfn-validate=true``.

    That engine costs about a second per synth; cfn-lint checks every template of every
    project in the test suite instead, and cdk-nag still runs on every synth.
    """
    probe = App(auto_synth=False, **kwargs)  # reads cdk.json and -c context, never synthesized
    return App(builtin_cloud_formation_validation=_flag(probe, "cfn-validate", False), **kwargs)


def main() -> None:
    app = new_app()
    try:
        build(app, project_refs(str(app.node.try_get_context("project") or "default")))
    except ConfigError as exc:
        print(exc.report(), file=sys.stderr)
        sys.exit(exc.exit_code)
    try:
        app.synth()
    except RuntimeError as exc:  # a validation plugin (cdk-nag) refused the templates; its report is above
        if "ValidationFailed" not in str(exc):
            raise
        print(f"synthesis stopped: {str(exc).splitlines()[0]}", file=sys.stderr)
        sys.exit(1)
