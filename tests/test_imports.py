"""Imports point one way, down the stages: every import is read (module level and inside functions,
with ``ast``), and an upward import, a cycle, a heavy library in the core or an unexplained
function-local import fails here.

The stages, lowest first (a module may import its own unit and any lower stage):

    facts      errors, facts, catalog, pcluster_facts, contracts, templates, orchestrators, flavours, prices
    config     fmcluster.config
    plan       fmcluster.plan
    node plan  bootstrap.versions, bootstrap.nodefacts, bootstrap.pins, (pure: what a node runs)
               bootstrap.context
    checks     fmcluster.checks
    generate   fmcluster.generate, fmcluster.guard,     (pure outputs: cluster.yaml, rules, dashboards,
               fmcluster.kubernetes                      Kubernetes objects and task governance;
               fmcluster.acceptance                      acceptance logs parsed and judged)
    bootstrap  bootstrap.render, bundles, collector     (Jinja)
    stacks     fmcluster.stacks (CDK)  |  aws  fmcluster.aws (boto3, the CLI's side path)
    cli        fmcluster.cli
    app        app.py
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support import ROOT

SOURCES = {"fmcluster": ROOT / "fmcluster", "fmcluster.stacks": ROOT / "stacks",
           "fmcluster.bootstrap": ROOT / "bootstrap", "fmcluster.templates": ROOT / "templates"}

STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("facts", ("fmcluster", "fmcluster.errors", "fmcluster.facts", "fmcluster.catalog", "fmcluster.pcluster_facts",
               "fmcluster.contracts", "fmcluster.templates", "fmcluster.orchestrators", "fmcluster.flavours",
               "fmcluster.prices")),
    ("config", ("fmcluster.config",)),
    ("plan", ("fmcluster.plan",)),
    ("node plan", ("fmcluster.bootstrap.versions", "fmcluster.bootstrap.nodefacts", "fmcluster.bootstrap.context",
                   "fmcluster.bootstrap.pins")),
    ("checks", ("fmcluster.checks",)),
    ("generate", ("fmcluster.generate", "fmcluster.guard", "fmcluster.acceptance", "fmcluster.kubernetes")),
    ("bootstrap", ("fmcluster.bootstrap",)),
    ("stacks", ("fmcluster.stacks",)),
    ("aws", ("fmcluster.aws",)),
    ("cli", ("fmcluster.cli",)),
    ("app", ("app",)),
]
SIDE_BY_SIDE = {("stacks", "aws"), ("aws", "stacks")}
"""Stages on one level: neither may import the other."""

CORE_STAGES = ("facts", "config", "plan", "node plan", "checks", "generate")
HEAVY = ("aws_cdk", "constructs", "cdk_nag", "boto3", "botocore", "jinja2")
"""Libraries the core never imports (the node plan and the pure generators included)."""

LAZY_ALLOWED = ("boto3", "botocore", "cfnlint", "aws_cdk", "cdk_nag", "fmcluster.aws", "fmcluster.stacks")
"""Heavy, optional-at-runtime dependencies a function may import late -- with a comment saying why."""


def module_name(path: Path) -> str:
    if path == ROOT / "app.py":
        return "app"
    for package, folder in SOURCES.items():
        if folder in path.parents:
            parts = path.relative_to(folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            return ".".join((package, *parts))
    raise ValueError(path)


def source_files() -> list[Path]:
    files = [ROOT / "app.py"]
    for folder in SOURCES.values():
        files += sorted(folder.rglob("*.py"))
    return files


MODULES = {module_name(p): p for p in source_files()}


def stage_of(module: str) -> tuple[int, str]:
    """The stage of a module: the longest prefix that names one."""
    best: tuple[int, int, str] | None = None
    for rank, (stage, prefixes) in enumerate(STAGES):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), rank, stage)
    assert best is not None, f"{module} belongs to no stage: add it to STAGES"
    return best[1], best[2]


def imports(path: Path) -> list[tuple[str, int, bool, bool]]:
    """(imported module, line, inside a function, explained by a comment) for every import."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text)
    found = []

    def explained(node: ast.stmt) -> bool:
        before = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
        return "#" in lines[node.lineno - 1] or before.startswith("#")

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, in_function, explained(child)) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                for alias in child.names:
                    sub = f"{child.module}.{alias.name}"
                    target = sub if sub in MODULES else child.module
                    found.append((target, child.lineno, in_function, explained(child)))
            visit(child, nested)

    visit(tree, False)
    return found


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if ROOT in path.parents else str(path)


def our(module: str) -> bool:
    return module in MODULES


def edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for target, *_ in imports(path):
            if our(target):
                graph[module].add(target)
    return graph


def test_every_module_has_a_stage():
    for module in MODULES:
        stage_of(module)


def test_no_upward_or_sideways_import():
    wrong = []
    for module, path in MODULES.items():
        rank, stage = stage_of(module)
        for target, line, _, _ in imports(path):
            if not our(target):
                continue
            target_rank, target_stage = stage_of(target)
            if target_rank > rank or (stage, target_stage) in SIDE_BY_SIDE:
                wrong.append(f"{_rel(path)}:{line} ({stage}) imports {target} ({target_stage})")
    assert not wrong, "imports must point down the stages:\n" + "\n".join(wrong)


def test_no_cycles():
    graph = edges()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def dfs(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                dfs(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            dfs(node)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_core_imports_no_cdk_boto3_or_jinja():
    wrong = []
    for module, path in MODULES.items():
        if stage_of(module)[1] not in CORE_STAGES:
            continue
        for target, line, _, _ in imports(path):
            if target.split(".")[0] in HEAVY:
                wrong.append(f"{_rel(path)}:{line} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_function_local_imports_are_only_heavy_optional_ones_with_a_reason():
    wrong = []
    for path in MODULES.values():
        for target, line, in_function, reason in imports(path):
            if not in_function:
                continue
            if not any(target == p or target.startswith(p + ".") for p in LAZY_ALLOWED):
                wrong.append(f"{_rel(path)}:{line} imports {target} inside a function; import it at the top")
            elif not reason:
                wrong.append(f"{_rel(path)}:{line} imports {target} late without a comment saying why")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("code, problem", [
    ("from fmcluster.stacks.app import build\n", "upward"),
    ("def f():\n    import yaml\n", "local"),
])
def test_the_checks_catch_what_they_claim(tmp_path: Path, code: str, problem: str):
    """Run the readers on a planted file: a core module importing a stack, a needless late import."""
    planted = tmp_path / "planted.py"
    planted.write_text(code)
    MODULES["fmcluster._planted_for_test"] = planted
    try:
        with pytest.raises(AssertionError, match="planted.py:[12] "):
            if problem == "upward":
                test_no_upward_or_sideways_import()
            else:
                test_function_local_imports_are_only_heavy_optional_ones_with_a_reason()
    finally:
        MODULES.pop("fmcluster._planted_for_test", None)


def test_no_module_is_longer_than_about_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in MODULES.values()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 420}
    assert not long, f"split these along their seams: {long}"


def unit_of(module: str) -> str:
    """The package a module belongs to: ``fmcluster.generate.metrics`` -> ``fmcluster.generate``; a module at the
    top of ``fmcluster`` (``fmcluster.catalog``) is a unit of its own."""
    return ".".join(module.split(".")[:2])


def package_cycles(graph: dict[str, set[str]]) -> list[str]:
    """Every cycle between packages in a module graph: one line per pair of packages that import each other,
    directly or through others, naming one import that closes it."""
    units: dict[str, set[str]] = {}
    witness: dict[tuple[str, str], str] = {}
    for module, targets in graph.items():
        for target in targets:
            a, b = unit_of(module), unit_of(target)
            if a != b:
                units.setdefault(a, set()).add(b)
                witness.setdefault((a, b), f"{module} imports {target}")

    def reach(start: str) -> dict[str, list[str]]:
        paths, todo = {start: [start]}, [start]
        while todo:
            node = todo.pop()
            for nxt in sorted(units.get(node, ())):
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    todo.append(nxt)
        return paths

    found = []
    for a in sorted(units):
        for b, path in sorted(reach(a).items()):
            if a < b and a in reach(b):
                back = reach(b)[a]
                loop = path + back[1:]
                steps = "; ".join(witness[(x, y)] for x, y in zip(loop, loop[1:]))
                found.append(f"{' -> '.join(loop)} ({steps})")
    return found


def test_no_cycles_between_packages():
    """Files may be acyclic while their packages are not: ``generate/metrics.py`` reading ``bootstrap/flavours.py``
    (now ``fmcluster/flavours.py``) while ``bootstrap/`` imports ``generate/`` was one. Each package imports the
    others one way."""
    cycles = package_cycles(edges())
    assert not cycles, "packages import each other:\n" + "\n".join(cycles)


def test_the_package_check_sees_a_cycle_through_files_that_are_acyclic():
    graph = {"fmcluster.generate.metrics": {"fmcluster.bootstrap.flavours"}, "fmcluster.bootstrap.flavours": set(),
             "fmcluster.bootstrap.collector": {"fmcluster.generate.metrics"}, "fmcluster.catalog": set(),
             "fmcluster.guard": {"fmcluster.catalog"}, "fmcluster.plan.storage": {"fmcluster.catalog"}}
    cycles = package_cycles(graph)
    assert len(cycles) == 1 and cycles[0].startswith("fmcluster.bootstrap -> fmcluster.generate -> fmcluster.bootstrap")
    assert "fmcluster.generate.metrics imports fmcluster.bootstrap.flavours" in cycles[0]
    del graph["fmcluster.generate.metrics"]
    assert not package_cycles(graph)
