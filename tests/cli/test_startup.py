"""A command loads only its own modules: ``fmcluster status`` or ``destroy`` start without the CDK, Jinja, the
Kubernetes objects, Grafana's client or the diagram library, which other commands need (each was ~0.1-0.9 s of every
command's start, and the deploy rehearsal runs the CLI a dozen times per project)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support import ROOT

HEAVY = ("aws_cdk", "jinja2", "grafana_client", "diagrams", "kubernetes_validate", "fmcluster.bootstrap.kubernetes_jobs",
         "fmcluster.cli.acceptance", "fmcluster.cli.dashboards", "fmcluster.cli.bootstrap")

PROBE = """
import json, sys
from typer.testing import CliRunner
from fmcluster.cli import app
result = CliRunner().invoke(app, sys.argv[1:])
print(json.dumps({"exit": result.exit_code, "modules": sorted(sys.modules)}))
"""


def loaded(*args: str) -> tuple[int, set[str]]:
    """The modules a fresh interpreter holds after running ``fmcluster ARGS`` (and its exit code)."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True, check=True,
                          timeout=120)
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return answer["exit"], set(answer["modules"])


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("args", [["status", "--help"], ["destroy", "--help"], ["validate", "projects/default.yaml"]],
                         ids=" ".join)
def test_a_command_loads_only_what_it_uses(args: list[str]) -> None:
    code, modules = loaded(*args)
    assert code == 0
    assert heavy(modules) == []


def test_the_others_still_load_theirs() -> None:
    """The lazy table names real modules: a group's command imports its module when it runs."""
    code, modules = loaded("acceptance", "--help")
    assert code == 0
    assert "fmcluster.cli.acceptance" in modules
