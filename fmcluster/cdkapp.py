"""The CDK app behind ``app.py``: ``-c project=NAME`` (default ``default``), or ``-c project=all``."""

from __future__ import annotations

import sys

from aws_cdk import App

from fmcluster import checks, config
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
    if str(app.node.try_get_context("nag") or "true").lower() != "false":
        add_nag(app)


def main() -> None:
    app = App()
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
