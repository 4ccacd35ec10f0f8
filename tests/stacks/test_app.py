"""app.py as the CDK CLI runs it: context selects projects; bad input exits 2 without a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from aws_cdk.assertions import Match
from fmcluster.stacks.app import build_project, new_app
from support import BASE, EXAMPLE_FILES, PROJECTS, ROOT, SELF_MANAGED, Synthesized

from fmcluster import catalog, checks, config


def _run_app(context: dict, tmp_path: Path, projects: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps(context), "CDK_OUTDIR": str(tmp_path / "out")}
    if projects is not None:
        env["FMCLUSTER_PROJECTS_DIR"] = str(projects)
    return subprocess.run([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def test_bad_project_exits_2_with_file_and_line(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    projects.mkdir()
    (projects / "demo.yaml").write_text(BASE.replace("count: 2", "count: lots") + "netwrok: {}\n")
    result = _run_app({"project": "demo"}, tmp_path, projects)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{projects / 'demo.yaml'}:6  compute_groups[0].count" in result.stderr
    assert "did you mean 'network'?" in result.stderr
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_all_selects_every_project_and_builds_only_those(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    projects.mkdir()
    for name in ("alpha", "beta"):
        (projects / f"{name}.yaml").write_text(BASE.replace("name: demo", f"name: {name}"))
    result = _run_app({"project": "all", "nag": "false"}, tmp_path, projects)
    assert result.returncode == 0, result.stderr
    stacks = sorted(p.name.removesuffix(".template.json") for p in (tmp_path / "out").glob("*.template.json"))
    assert stacks == [f"{p}-{s}" for p in ("alpha", "beta") for s in ("cluster", "network", "observability", "storage")]


# --- every project and example, synthesized once ---------------------------------------------------

def test_every_project_and_example_synthesized(synthesized: Synthesized) -> None:
    for name in PROJECTS:
        assert f"{name}-network" in synthesized.templates
        assert f"{name}-cluster" in synthesized.templates


def test_examples_cover_every_catalog_type() -> None:
    used = {g.instance_type for p in EXAMPLE_FILES for g in config.parse(p.read_text()).project.compute_groups}
    assert used == set(catalog.CATALOG)
    launch_templated = {g.instance_type for name in SELF_MANAGED for g in PROJECTS[name].compute_groups}
    assert launch_templated == set(catalog.CATALOG)


def test_project_tags_on_resources(synthesized: Synthesized) -> None:
    t = synthesized.assertions("default-network")
    t.has_resource_properties("AWS::EC2::VPC", {"Tags": Match.array_with([
        {"Key": "fmcluster:project", "Value": "default"}, {"Key": "owner", "Value": "ml-infra"}])})


def test_stable_logical_ids(synthesized: Synthesized) -> None:
    """Logical IDs come from names, never positions: pin the ones later stacks and users depend on."""
    network = set(synthesized.template("default-network")["Resources"])
    assert {"Vpc", "ComputeSubnet", "PublicSubnet", "NatGateway", "FlowLog", "S3GatewayEndpoint"} <= network
    cluster = set(synthesized.template("p6-b200-mixed-cluster")["Resources"])
    assert {"TrainLaunchTemplate", "EvalLaunchTemplate", "EvalPlacementGroup"} <= cluster
    assert "TrainPlacementGroup" not in cluster  # a reservation launches into its own group, never a new one
    # ParallelCluster's bootstrap pointers are custom-named (/fmcluster/NAME/bootstrap/ROLE): under a new logical ID
    # CloudFormation would create the name again before deleting the old one, and fail
    pointers = {"ParallelClusterBootstrapPointerHeadNode78591E35", "ParallelClusterBootstrapPointerComputeA55EA359"}
    assert pointers <= set(synthesized.template("default-cluster")["Resources"])


def test_stacks_with_data_or_a_running_cluster_are_protected_from_deletion(tmp_path: Path) -> None:
    def protected(context: dict) -> dict[str, bool]:
        loaded = config.load(ROOT / "projects" / "default.yaml")
        plan, _ = checks.validate(loaded)
        app = new_app(outdir=str(tmp_path / str(len(context))), context={"nag": "false", **context})
        return {s.stack_name: s.termination_protection for s in build_project(app, loaded, plan)}

    assert protected({}) == {"default-network": False, "default-storage": True, "default-observability": True,
                             "default-cluster": True}
    assert not any(protected({"protect": "false"}).values())


def test_app_py_runs_main_with_the_collector_on_and_the_imported_modules_frozen(monkeypatch) -> None:
    """app.py keeps the cyclic collector off while CDK's modules load, then freezes them (later collections skip
    them) and turns it back on before synthesizing: it must never synthesize with the collector off."""
    import gc
    import runpy

    import fmcluster.stacks.app

    seen = {}
    monkeypatch.setattr(fmcluster.stacks.app, "main",
                        lambda: seen.update(enabled=gc.isenabled(), frozen=gc.get_freeze_count()))
    try:
        runpy.run_path(str(ROOT / "app.py"), run_name="__main__")
    finally:
        gc.unfreeze()
        gc.enable()
    assert seen["enabled"] is True
    assert seen["frozen"] > 100_000
