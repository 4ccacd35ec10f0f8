"""Imports point one way: the core (config, checks, catalog, plan) loads no CDK, boto3 or Jinja."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("aws_cdk", "jsii", "cdk_nag", "boto3", "botocore", "jinja2", "grafana_foundation_sdk", "grafana_client")


def test_core_imports_nothing_heavy() -> None:
    code = ("import sys, fmcluster.config, fmcluster.checks, fmcluster.catalog, fmcluster.plan, fmcluster.guard; "
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
