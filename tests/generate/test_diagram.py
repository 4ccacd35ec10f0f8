"""The project's picture as a graph (the model ``fmcluster diagram`` renders): one node per compute group, one edge per
data repository association, boxes by zone; then the command writes a real PNG/SVG through graphviz."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT
from typer.testing import CliRunner

from fmcluster import checks, config
from fmcluster.cli import app
from fmcluster.generate import diagram

runner = CliRunner()


def graph_of(path: Path) -> diagram.Graph:
    plan, _ = checks.validate(config.load(str(path)))
    return diagram.build(plan)


def labels(cluster: diagram.Cluster) -> list[str]:
    return [cluster.label] + [label for inner in cluster.clusters for label in labels(inner)]


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.yaml")) + [ROOT / "projects" / "default.yaml"],
                         ids=lambda p: p.stem)
def test_one_node_per_group_and_one_edge_per_association(path: Path) -> None:
    project = config.load(str(path)).project
    graph = graph_of(path)
    groups = graph.of_kind("compute-group")
    assert sorted(n.id for n in groups) == sorted(f"group:{g.name}" for g in project.compute_groups)
    associations = project.storage.fsx.associations if project.storage.fsx.existing is None else []
    drawn = sorted(e.label.split(" <-> ")[0] for e in graph.edges_of_kind("association"))
    assert drawn == sorted(a.file_system_path for a in associations)
    assert all((e.source, e.target) == ("fsx", "s3") for e in graph.edges_of_kind("association"))
    ids = {n.id for n in graph.nodes}
    assert all(e.source in ids and e.target in ids for e in graph.edges)
    assert len(ids) == len(graph.nodes)


def test_an_association_edge_names_its_s3_path() -> None:
    graph = graph_of(ROOT / "examples" / "p5-odcr.yaml")
    project = config.load(str(ROOT / "examples" / "p5-odcr.yaml")).project
    assert len(graph.edges_of_kind("association")) == len(project.storage.fsx.associations) >= 1
    for edge, a in zip(graph.edges_of_kind("association"), project.storage.fsx.associations):
        assert edge.label.startswith(a.file_system_path) and "s3://" in edge.label


def test_group_labels_carry_gpu_and_efa_counts() -> None:
    graph = graph_of(ROOT / "projects" / "default.yaml")
    [train] = graph.of_kind("compute-group")
    assert "2 x p5.48xlarge" in train.label and "16 GPUs" in train.label and "32 EFA per node" in train.label
    [vpc] = graph.clusters
    assert labels(vpc) == ["VPC 10.0.0.0/16", "use1-az6", "public subnet 10.0.0.0/24", "compute subnet 10.0.4.0/22",
                           "cluster placement group train"]
    assert {n.kind for n in graph.nodes} >= {"head-node", "fsx", "s3", "prometheus", "grafana", "nat"}


def test_a_local_zone_project_draws_two_zones_and_its_blocks() -> None:
    graph = graph_of(ROOT / "examples" / "p6e-gb200-ultraserver.yaml")
    [vpc] = graph.clusters
    zones = [c.label for c in vpc.clusters]
    assert zones == ["use1-az4 (parent zone)", "use1-dfw2-az1 (Local Zone us-east-1-dfw-2a)"]
    found = labels(vpc)
    assert "capacity block cr-0c0c0c0c0c0c0c0c0" in found and "capacity block cr-0d0d0d0d0d0d0d0d0" in found
    services = next(c for c in vpc.clusters[0].clusters if c.label.startswith("services subnet"))
    assert "fsx" in services.nodes  # FSx sits in the parent zone, not the Local Zone


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_the_command_writes_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str, magic: bytes) -> None:
    if shutil.which("dot") is None:  # a workstation may lack graphviz; CI installs it (.ci/run) and must run this
        message = "graphviz's dot is not installed: `apt-get install graphviz`"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " -- CI must install it (.ci/run)", pytrace=False)
        pytest.skip(message)
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(ROOT / "projects"))
    target = tmp_path / "out" / f"default{suffix}"
    result = runner.invoke(app, ["diagram", "default", "--out", str(target)])
    assert result.exit_code == 0, result.output
    data = target.read_bytes()
    assert data.startswith(magic) and len(data) > 2_000
    if suffix == ".svg":
        assert b"train: 2 x p5.48xlarge" in data and b"FSx for Lustre" in data
    assert not (tmp_path / "out" / "default").exists()  # the DOT source is not left behind


def test_the_command_refuses_other_formats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(ROOT / "projects"))
    result = runner.invoke(app, ["diagram", "default", "--out", str(tmp_path / "x.pdf")])
    assert result.exit_code == 2 and "must end in .png or .svg" in result.stderr and not (tmp_path / "x.pdf").exists()


def test_an_external_bucket_is_drawn_as_itself(tmp_path: Path) -> None:
    from support import BASE
    path = tmp_path / "demo.yaml"
    path.write_text(BASE + """storage:
  external_buckets: [team-datasets]
  fsx:
    associations:
      - {file_system_path: /datasets, data_repository_path: "s3://team-datasets/llm/", export_events: []}
      - {file_system_path: /checkpoints}
""")
    graph = graph_of(path)
    by_path = {e.label.split(" <-> ")[0]: e.target for e in graph.edges_of_kind("association")}
    assert by_path == {"/datasets": "s3:team-datasets", "/checkpoints": "s3"}
    team = next(n for n in graph.nodes if n.id == "s3:team-datasets")
    assert team.kind == "s3" and "team-datasets" in team.label and "external" in team.label
    assert "s3:team-datasets" in graph.outside
    assert "team-datasets" not in next(n for n in graph.nodes if n.id == "s3").label


def test_hyperpod_draws_its_controller_login_group_and_nvlink_domains(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "p6e-gb200-hyperpod-training-plan.yaml").read_text()
    path = tmp_path / "hp.yaml"
    path.write_text(text.replace("count: 17", "count: 34").replace(
        "  hyperpod:\n", "  hyperpod:\n    login: {instance_type: ml.m5.xlarge, count: 2}\n"))
    graph = graph_of(path)
    [controller] = graph.of_kind("head-node")
    assert "HyperPod controller" in controller.label
    [login] = graph.of_kind("login")
    assert "2 x ml.m5.xlarge" in login.label
    assert ("login", "head") in {(e.source, e.target) for e in graph.edges_of_kind("slurm")}
    # 34 instances = two u-p6e-gb200x72 UltraServers of 17 usable instances (the plan keeps one spare each):
    # two NVLink-domain boxes of 17 instances, 68 GPUs each
    domains = graph.of_kind("nvlink-domain")
    assert len(domains) == 2 and all("17 x p6e-gb200.36xlarge" in d.label and "68 GPUs" in d.label for d in domains)
    [vpc] = graph.clusters
    boxes = labels(vpc)
    assert "NVLink domain: u-p6e-gb200x72 1 of 2" in boxes and "NVLink domain: u-p6e-gb200x72 2 of 2" in boxes
    parent = vpc.clusters[0]  # the controller and login sit in the parent zone's services subnet
    services = next(c for c in parent.clusters if c.label.startswith("services subnet"))
    assert {"head", "login"} <= set(services.nodes)


def test_a_p5_group_has_no_nvlink_domain_box() -> None:
    graph = graph_of(ROOT / "projects" / "default.yaml")
    assert graph.of_kind("nvlink-domain") == []


def test_make_synth_draws_the_diagram_only_where_graphviz_is(tmp_path: Path) -> None:
    """`make synth` on a machine without graphviz: the diagram line of its recipe (as `make -n` prints it) says how to
    get graphviz in one line and succeeds, so the synthesis and the plan around it run."""
    if shutil.which("make") is None:
        pytest.skip("no make on this machine: `make synth` cannot run here either")
    recipe = subprocess.run(["make", "-n", "synth", "PROJECT=default"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, check=True).stdout.splitlines()
    [line] = [c for c in recipe if c.startswith("fmcluster diagram ")]
    bin_dir = tmp_path / "bin"  # PATH: fmcluster and nothing else (no dot)
    bin_dir.mkdir()
    (bin_dir / "fmcluster").symlink_to(Path(sys.executable).parent / "fmcluster")
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "FMCLUSTER_PROJECTS_DIR": str(ROOT / "projects")}
    ran = subprocess.run(["/bin/bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.strip() == ("diagram skipped: graphviz's `dot` is not installed (apt-get install graphviz, or "
                                  "brew install graphviz; then fmcluster diagram default)")
    assert not (tmp_path / "cdk.out").exists()


def test_without_optional_a_missing_dot_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(ROOT / "projects"))
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    result = runner.invoke(app, ["diagram", "default", "--out", str(tmp_path / "d.png")])
    assert result.exit_code == 1 and "graphviz's `dot` is not installed" in result.stderr
