"""`fmcluster bootstrap versions` and `fmcluster bootstrap render`."""

from __future__ import annotations

import json
from pathlib import Path

from fmcluster.bootstrap import context, versions
from typer.testing import CliRunner

from fmcluster import catalog
from fmcluster.cli.bootstrap import app

PROJECT = """\
name: llm
availability_zone_id: use1-az6
os: ubuntu-24.04
compute_groups:
  - name: train
    instance_type: p5en.48xlarge
    count: 4
orchestrator:
  type: hyperpod
"""


def test_versions_prints_the_file_and_the_placeholders():
    result = CliRunner().invoke(app, ["versions"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(versions.VERSIONS_FILE.read_text())
    assert "#   pyxis.source.sha256" in result.output
    assert "0 not pinned that a node needs" in result.output


def test_render_writes_every_bundle_the_deployment_publishes_by_default(tmp_path: Path):
    project = tmp_path / "llm.yaml"
    project.write_text(PROJECT)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["render", str(project), "--out", str(out)])
    assert result.exit_code == 0, result.output
    # HyperPod: one bundle per instance group, named as deployed (the controller's and the compute group's)
    assert sorted(p.name for p in out.iterdir()) == ["controller", "train"]
    manifest = json.loads((out / "train/manifest.json").read_text())
    assert manifest["flavour"] == "hyperpod" and manifest["instance_type"] == "p5en.48xlarge"
    assert json.loads((out / "controller/manifest.json").read_text())["role"] == "head"
    assert (out / "train/bootstrap.sh").is_file()
    assert "not pinned" not in result.output
    only = tmp_path / "only"
    result = CliRunner().invoke(app, ["render", str(project), "--out", str(only), "--role", "compute"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in only.iterdir()) == ["train"]


def test_render_with_a_flavour_writes_a_bundle_per_group_and_role(tmp_path: Path):
    project = tmp_path / "llm.yaml"
    project.write_text(PROJECT)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["render", str(project), "--out", str(out), "--flavour", "hyperpod",
                                      "--role", "compute", "--role", "login"])
    assert result.exit_code == 0, result.output
    assert (out / "train-compute/bootstrap.sh").is_file()
    assert (out / "train-login/steps/10-preflight.sh").is_file()


def test_render_reports_a_bad_project(tmp_path: Path):
    project = tmp_path / "bad.yaml"
    project.write_text(PROJECT.replace("p5en.48xlarge", "p5en.48xlargee"))
    result = CliRunner().invoke(app, ["render", str(project), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "did you mean 'p5en.48xlarge'" in result.output


def test_render_rejects_an_unknown_role(tmp_path: Path):
    project = tmp_path / "llm.yaml"
    project.write_text(PROJECT)
    result = CliRunner().invoke(app, ["render", str(project), "--out", str(tmp_path / "o"), "--role", "worker"])
    assert result.exit_code == 2
    assert "unknown role 'worker'" in result.output


FSX_PROJECT = PROJECT.replace("orchestrator:\n  type: hyperpod\n", "orchestrator:\n  type: none\n") + """\
storage:
  fsx:
    mount_path: /lustre
"""


def test_render_has_the_fsx_mount_step_the_deployed_bundle_has(tmp_path: Path):
    project = tmp_path / "llm.yaml"
    project.write_text(FSX_PROJECT)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["render", str(project), "--out", str(out)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "train/manifest.json").read_text())
    assert "70-lustre" in [s["name"] for s in manifest["steps"]]
    lustre = (out / "train/steps/70-lustre.sh").read_text()
    assert "/lustre" in lustre and "FMC_FSX_ID" in lustre  # the identity comes at boot
    assert "identity comes at boot (FMC_FSX_ID, FMC_FSX_DNS, FMC_FSX_MOUNT_NAME" in result.output
    # ParallelCluster (SharedStorage) and HyperPod (FSxLustreConfig) mount FSx themselves: no Lustre step, as deployed
    for flavour in ("parallelcluster", "hyperpod"):
        result = CliRunner().invoke(app, ["render", str(project), "--out", str(out), "--flavour", flavour])
        assert result.exit_code == 0, result.output
        manifest = json.loads((out / "train-compute/manifest.json").read_text())
        assert "70-lustre" not in [s["name"] for s in manifest["steps"]], flavour


def test_render_matrix_renders_every_os_type_and_flavour_with_a_summary(tmp_path: Path):
    out = tmp_path / "matrix"
    result = CliRunner().invoke(app, ["render", "--matrix", "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "summary.json").read_text())
    want = {(o, t, f) for o in context.OPERATING_SYSTEMS for t in catalog.CATALOG for f in context.FLAVOURS}
    assert {(r["os"], r["instance_type"], r["flavour"]) for r in rows} == want
    for r in rows:
        manifest = json.loads((out / r["path"] / "manifest.json").read_text())
        assert (manifest["os"], manifest["instance_type"], manifest["flavour"]) == (r["os"], r["instance_type"], r["flavour"])
        assert r["placeholders"] == []
        # self-managed and PCS nodes mount FSx through the bundle (PCS has no storage setting of its own)
        assert ("70-lustre" in r["steps"]) == (r["flavour"] in ("self-managed", "pcs"))
    assert {r["arch"] for r in rows} == {"x86_64", "aarch64"}
    summary = (out / "SUMMARY.md").read_text()
    assert summary.count("\n| ") == len(rows) + 1  # header + one row per bundle
    assert CliRunner().invoke(app, ["render", "--matrix", "x.yaml", "--out", str(out)]).exit_code == 2
