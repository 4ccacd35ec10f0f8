"""pyxis where Slurm reads it. ParallelCluster: the dispatcher, run by the head node as its OnNodeConfigured
action, runs the head-node bundle, which writes an explicit include of pyxis.conf into the shared
/opt/slurm/etc/plugstack.conf and runs `scontrol reconfigure`. HyperPod: the controller writes the explicit
include (configless slurmd ignores a compute-local plugstack.conf and expands no wildcard); every node keeps the
included pyxis.conf at the same path."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from pathlib import Path

from fmcluster.bootstrap.bundles import HEAD_NODE_BUNDLE, render_dispatched_bundles
from fmcluster.generate import parallelcluster as generate
from support.sandbox import SHELLCHECK, Image, Sandbox, build_sandbox, calls_of, context_for, make_project

from fmcluster.plan import make_plan

PYXIS_LINE = "required /usr/local/lib/slurm/spank_pyxis.so runtime_path=/run/pyxis\n"
EXPLICIT = "include /opt/slurm/etc/plugstack.conf.d/pyxis.conf"
# What an operator who followed ParallelCluster's example (cookbook templates/default/pyxis/plugstack.conf.erb)
# or AWS's HyperPod lifecycle scripts (utils/install_enroot_pyxis.sh) already has there.
WILDCARD = "include /opt/slurm/etc/plugstack.conf.d/*"

SCONTROL = '#!/bin/bash\necho "scontrol $*" >>"${SANDBOX}/calls.log"\n'


def _scontrol(sb: Sandbox) -> None:
    """Slurm's controller as the image has it: scontrol and slurmctld's unit."""
    path = sb.root / "opt/slurm/bin/scontrol"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SCONTROL)
    path.chmod(0o755)
    unit = sb.root / "etc/systemd/system/slurmctld.service"
    unit.parent.mkdir(parents=True, exist_ok=True)
    unit.write_text("[Service]\nExecStart=/opt/slurm/sbin/slurmctld\n")


def _zip(folder: Path, archive: Path) -> None:
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(folder.rglob("*")):
            zf.write(path, path.relative_to(folder))


def test_parallelcluster_head_node_runs_its_bundle_and_reconfigures_slurm(tmp_path: Path) -> None:
    project = make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster")
    cluster = make_plan(project).cluster
    dispatched = render_dispatched_bundles(cluster, tmp_path / "assets")
    assert (dispatched.bundles / HEAD_NODE_BUNDLE / "bootstrap.sh").is_file()
    head = context_for(project, "gpu", "head", "parallelcluster")
    sb = build_sandbox(tmp_path / "sb", head, Image(gpus=0, efa_devices=0, nvme_drives=0, driver=False))
    _zip(dispatched.bundles, sb.path / "s3/bundles.zip")
    _scontrol(sb)
    (sb.root / "etc/parallelcluster").mkdir(parents=True)
    (sb.root / "etc/parallelcluster/cfnconfig").write_text("stack_name=demo\ncfn_node_type=HeadNode\n")
    plugstack = sb.root / "opt/slurm/etc/plugstack.conf"
    plugstack.parent.mkdir(parents=True, exist_ok=True)
    plugstack.write_text(WILDCARD + "\n")
    dispatcher = dispatched.dispatchers["head-node"]
    assert subprocess.run([SHELLCHECK, "-s", "bash", "-"], input=dispatcher.read_text(), capture_output=True,
                          text=True).returncode == 0
    res = subprocess.run(["bash", str(dispatcher), "s3://bucket/bundles.zip"], env=sb.env, cwd=sb.path,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "role head, flavour parallelcluster" in res.stderr + res.stdout
    lines = plugstack.read_text().splitlines()
    assert EXPLICIT in lines
    assert not [line for line in lines if line.startswith("include") and "*" in line]
    assert (sb.root / "opt/slurm/etc/plugstack.conf.d/pyxis.conf").read_text() == PYXIS_LINE
    calls = (sb.path / "calls.log").read_text().splitlines()
    assert "scontrol reconfigure" in calls
    assert "systemctl restart slurmd.service" not in calls  # the head node runs slurmctld, not slurmd
    # no GPU steps on the head node; its exporters: node_exporter, and the Slurm metrics script beside slurmctld
    # (tests/bootstrap/test_slurm_metrics.py)
    assert not [c for c in calls if c.startswith(("nvidia-smi", "fi_info"))]
    assert (sb.root / "etc/systemd/system/fmcluster-node-exporter.service").exists()
    assert (sb.root / "etc/systemd/system/fmcluster-slurm-metrics.service").exists()


def test_the_head_node_runs_the_same_launcher_as_the_queues_with_its_own_pointer() -> None:
    from fmcluster.generate import placeholders

    plan = make_plan(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"))
    bootstrap = placeholders.bootstrap(plan.project)
    config = generate.cluster_config(plan.cluster, network=placeholders.NETWORK,
                                     storage=placeholders.storage(plan.storage), bootstrap=bootstrap)
    head = config["HeadNode"]["CustomActions"]["OnNodeConfigured"]
    assert head == {"Script": bootstrap.launcher_uri, "Args": ["configure", bootstrap.head_pointer_arn]}
    assert all(q["CustomActions"] == {"OnNodeConfigured": {"Script": bootstrap.launcher_uri, "Args": [
        "configure", bootstrap.compute_pointer_arn]}} for q in config["Scheduling"]["SlurmQueues"])


def test_each_role_s_dispatcher_knows_only_that_role_s_bundles(tmp_path: Path) -> None:
    """A compute-only change leaves the head node's dispatcher, and so its OnNodeUpdated digest, as it was."""
    cluster = make_plan(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster")).cluster
    out = render_dispatched_bundles(cluster, tmp_path / "assets")
    head, compute = out.dispatchers["head-node"].read_text(), out.dispatchers["compute"].read_text()
    assert f"[{HEAD_NODE_BUNDLE}]=" in head and "[p5.48xlarge]=" not in head
    assert "[p5.48xlarge]=" in compute and f"[{HEAD_NODE_BUNDLE}]=" not in compute
    assert out.digests == {role: hashlib.sha256(path.read_bytes()).hexdigest()
                           for role, path in out.dispatchers.items()}


def _hyperpod(tmp_path: Path, role: str) -> tuple[Sandbox, subprocess.CompletedProcess]:
    project = make_project("p5.48xlarge", "ubuntu-22.04", "hyperpod")
    ctx = context_for(project, "gpu", role, "hyperpod")
    image = Image() if role == "compute" else Image(gpus=0, efa_devices=0, nvme_drives=0, driver=False)
    sb = build_sandbox(tmp_path / role, ctx, image)
    _scontrol(sb)
    plugstack = sb.root / "opt/slurm/etc/plugstack.conf"
    plugstack.parent.mkdir(parents=True, exist_ok=True)
    plugstack.write_text(WILDCARD + "\n")
    return sb, sb.run()


def test_hyperpod_controller_writes_an_explicit_include_and_reconfigures(tmp_path: Path) -> None:
    sb, res = _hyperpod(tmp_path, "head")
    assert res.rc == 0, res.out
    lines = (sb.root / "opt/slurm/etc/plugstack.conf").read_text().splitlines()
    assert EXPLICIT in lines
    assert f"# fmcluster: wildcards are not expanded by configless Slurm: {WILDCARD}" in lines
    assert (sb.root / "opt/slurm/etc/plugstack.conf.d/pyxis.conf").read_text() == PYXIS_LINE
    assert "scontrol reconfigure" in res.calls
    # a second run changes nothing and reconfigures nothing
    again = sb.run()
    assert again.rc == 0 and "scontrol reconfigure" not in again.calls


def test_hyperpod_compute_keeps_pyxis_conf_and_leaves_plugstack_to_the_controller(tmp_path: Path) -> None:
    sb, res = _hyperpod(tmp_path, "compute")
    assert res.rc == 0, res.out
    assert (sb.root / "opt/slurm/etc/plugstack.conf").read_text() == WILDCARD + "\n"  # not the one slurmd reads
    assert (sb.root / "opt/slurm/etc/plugstack.conf.d/pyxis.conf").read_text() == PYXIS_LINE
    assert "scontrol reconfigure" not in res.calls
    assert calls_of(res, "systemctl restart slurmd.service")  # slurmd loads the plugin it now has
