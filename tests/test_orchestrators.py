"""The orchestrator seam (:mod:`fmcluster.orchestrators`): every stage's table names every orchestrator, and no
code outside an orchestrator's own modules asks an orchestrator's (or a bootstrap flavour's) name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support import ROOT

from fmcluster import flavours, orchestrators
from fmcluster.aws.connect import TARGETS
from fmcluster.aws.preflight import ORCHESTRATOR_CHECKS
from fmcluster.aws.status import CLUSTERS
from fmcluster.cli.acceptance import RENDERERS as ACCEPTANCE
from fmcluster.cli.firstjob import WRITERS as FIRST_JOBS
from fmcluster.bootstrap import bundles
from fmcluster.cli.planservices import ROWS
from fmcluster.generate.schedulers import SCHEDULERS
from fmcluster.plan import cost
from fmcluster.stacks.cluster import BUILDERS

TABLES = {"generate.schedulers.SCHEDULERS": SCHEDULERS, "bootstrap.bundles.RENDERERS": bundles.RENDERERS,
          "bootstrap.bundles.CONTEXTS": bundles.CONTEXTS,
          "stacks.cluster.BUILDERS": BUILDERS, "aws.preflight.ORCHESTRATOR_CHECKS": ORCHESTRATOR_CHECKS,
          "cli.planservices.ROWS": ROWS, "plan.cost.ORCHESTRATORS": cost.ORCHESTRATORS,
          "aws.status.CLUSTERS": CLUSTERS, "aws.connect.TARGETS": TARGETS,
          "cli.acceptance.RENDERERS": ACCEPTANCE, "cli.firstjob.WRITERS": FIRST_JOBS}

OWN = {"parallelcluster", "hyperpod", "hyperpod_eks", "pcs", "selfmanaged"}
"""Module names of an orchestrator's own modules (``fmcluster/<stage>/<orchestrator>.py``)."""
SEAM = {ROOT / "fmcluster" / "orchestrators.py", ROOT / "fmcluster" / "flavours.py"}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_stage_table_names_every_orchestrator(table):
    assert list(TABLES[table]) == list(orchestrators.NAMES)


def test_every_orchestrator_runs_a_known_flavour_with_a_profile_or_none():
    for o in orchestrators.ORCHESTRATORS.values():
        assert o.flavour in flavours.FLAVOURS, o.name
    assert sorted(o.flavour for o in orchestrators.ORCHESTRATORS.values()) == sorted(flavours.FLAVOURS)


def _names() -> set[str]:
    return set(orchestrators.NAMES) - {"none"} | set(flavours.FLAVOURS)


def _sources() -> list[Path]:
    files = []
    for folder in ("fmcluster", "stacks", "bootstrap"):
        files += [p for p in (ROOT / folder).rglob("*.py") if p.stem not in OWN and p not in SEAM]
    return [*files, ROOT / "app.py"]


def _branches(source: str) -> list[tuple[int, list[str]]]:
    """Comparisons with an orchestrator or flavour name: ``x == "hyperpod"``, ``x in ("parallelcluster", ...)``."""
    names = _names()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            consts = {p.value for p in parts if isinstance(p, ast.Constant) and isinstance(p.value, str)}
            for p in parts:
                if isinstance(p, (ast.Tuple, ast.List, ast.Set)):
                    consts |= {e.value for e in p.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if consts & names:
                found.append((node.lineno, sorted(consts & names)))
    return found


def test_no_code_outside_the_orchestrators_modules_compares_an_orchestrator_name():
    wrong = [f"{path.relative_to(ROOT)}:{line} compares with {names}"
             for path in _sources() for line, names in _branches(path.read_text(encoding="utf-8"))]
    assert not wrong, "\n".join(wrong)


def test_templates_read_flavour_traits_not_names():
    names = _names()
    wrong = []
    for path in (ROOT / "templates").rglob("*.j2"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "flavour ==" in line or "flavour !=" in line or "flavour in" in line:
                wrong.append(f"{path.relative_to(ROOT)}:{n}")
            for name in names:
                if f'== "{name}"' in line or f'!= "{name}"' in line:
                    wrong.append(f"{path.relative_to(ROOT)}:{n} ({name})")
    assert not wrong, "\n".join(wrong)


def test_the_scan_finds_a_branch():
    """The scan is not vacuous: the branches this seam replaced are found."""
    source = 'if plan.cluster.orchestrator == "hyperpod":\n    pass\nslurm = flavour in ("parallelcluster", "x")\n'
    assert _branches(source) == [(1, ["hyperpod"]), (3, ["parallelcluster"])]
