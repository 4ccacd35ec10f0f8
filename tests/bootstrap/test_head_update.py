"""The head node from its first boot through cluster updates, as ParallelCluster runs it: the launcher (its
OnNodeConfigured, then its OnNodeUpdated after every update) reads the head node's pointer and runs the
head-node dispatcher it names, which runs the head-node bundle.

Re-running the head bundle on a live head node must be safe: the same bundle again changes nothing and
restarts nothing; a new bundle (accounting turned on: the slurm-policy step) does only its own new work and never
restarts or stops a Slurm daemon. The sandbox's Slurm clients are support.sandbox.install_slurm_controller's."""

from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path

from fmcluster.bootstrap import budget, bundles, render
from fmcluster.config import parse
from fmcluster.plan import make_plan
from support.sandbox import Image, Sandbox, build_sandbox, context_for, install_slurm_controller, make_project

POINTER = "arn:aws:ssm:us-east-1:123456789012:parameter/fmcluster/demo/bootstrap/head-node"
HEAD_IMAGE = dict(gpus=0, efa_devices=0, nvme_drives=0, driver=False)
PROJECT = """
name: demo
availability_zone_id: use1-az6
os: ubuntu-22.04
compute_groups:
  - name: gpu
    instance_type: p5.48xlarge
    count: 2
  - name: big
    instance_type: p5en.48xlarge
    count: 2
orchestrator:
  type: parallelcluster
  accounting:
    enabled: {accounting}
"""
CHECKS = ("10-preflight", "99-healthcheck")
READ_ONLY = ("aws ssm get-parameter ", "aws s3 cp ", "systemctl is-active ", "curl ", "df ", "uname ", "id ",
             "fuser ", "enroot version")
"""What a re-run may call on a live head node: the launcher's reads, and the checks' (unit states, the exporters'
ports, the free disk, the OS, the package manager's lock, enroot's version)."""
SLURM_DAEMON = re.compile(r"^systemctl (restart|stop|kill|try-restart|reload-or-restart|disable)\b.*(slurm|munge)")


def _cluster(accounting: bool):
    return make_plan(parse(PROJECT.format(accounting=str(accounting).lower())).project).cluster


def _publish(sb: Sandbox, cluster, name: str) -> str:
    """Render the project's ParallelCluster bundles, put its head-node dispatcher and archive where the aws stub
    serves them, and point the head node's pointer at them (as the cluster stack does); the dispatcher's digest."""
    out = bundles.render_dispatched_bundles(cluster, sb.path / "assets" / name)
    with zipfile.ZipFile(sb.path / "s3" / f"bundles-{name}.zip", "w") as zf:
        for path in sorted(out.bundles.rglob("*")):
            zf.write(path, path.relative_to(out.bundles))
    (sb.path / "s3" / f"head-{name}.sh").write_bytes(out.dispatchers["head-node"].read_bytes())
    (sb.path / "ssm").mkdir(exist_ok=True)
    digest = out.digests["head-node"]
    (sb.path / "ssm" / re.sub(r"[:/]", "_", POINTER)).write_text(
        f"s3://assets/head-{name}.sh {digest} s3://assets/bundles-{name}.zip\n")
    return digest


def _launch(sb: Sandbox, *args: str) -> tuple[int, str, list[str]]:
    calls = sb.path / "calls.log"
    before = len(calls.read_text().splitlines()) if calls.exists() else 0
    (sb.path / "launch.sh").write_text(render.launcher_script())
    proc = subprocess.run(["bash", str(sb.path / "launch.sh"), *args], env=sb.env, cwd=sb.path,
                          capture_output=True, text=True, timeout=180)
    return proc.returncode, proc.stdout + proc.stderr, calls.read_text().splitlines()[before:]


def _head(tmp_path: Path) -> Sandbox:
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "head",
                      "parallelcluster")
    sb = build_sandbox(tmp_path / "sb", ctx, Image(**HEAD_IMAGE))
    install_slurm_controller(sb, ("gpu", "big"))
    (sb.root / "etc/parallelcluster").mkdir(parents=True)
    (sb.root / "etc/parallelcluster/cfnconfig").write_text("stack_name=demo\ncfn_node_type=HeadNode\n")
    return sb


def test_the_head_node_boots_then_re_runs_the_same_bundle_after_an_update_changing_nothing(tmp_path: Path) -> None:
    sb = _head(tmp_path)
    digest = _publish(sb, _cluster(False), "a")
    rc, out, first = _launch(sb, "configure", POINTER)
    assert rc == 0, out[-4000:]
    assert "role head, flavour parallelcluster" in out and "scontrol reconfigure" in first  # pyxis went in
    rc, out, again = _launch(sb, "update", POINTER, digest)
    assert rc == 0, out[-4000:]
    steps = re.findall(r"^\S+ \[bootstrap\] == (\S+)$", out, re.M)
    # what sets the node up has nothing to do; the checks (preflight, health) run again and only read
    assert steps and all(f"[{s}] already done" in out for s in steps if s not in CHECKS), out[-4000:]
    assert [c for c in again if not c.startswith(READ_ONLY)] == [], again


def test_a_new_head_bundle_on_a_live_head_node_does_its_new_work_and_restarts_no_slurm_daemon(tmp_path) -> None:
    sb = _head(tmp_path)
    _publish(sb, _cluster(False), "a")
    rc, out, _ = _launch(sb, "configure", POINTER)
    assert rc == 0, out[-4000:]
    digest = _publish(sb, _cluster(True), "b")  # the deploy that turns accounting on
    rc, out, calls = _launch(sb, "update", POINTER, digest)
    assert rc == 0, out[-4000:]
    assert "[88-slurm-policy] start" in out
    assert "sacctmgr -i add qos gpu" in calls and "scontrol update PartitionName=big QOS=big" in calls
    assert not [c for c in calls if SLURM_DAEMON.search(c)], calls
    # beyond what only reads: the new archive, the step's QoS, its drop-in for slurmctld's next start and its
    # reconfigure trigger (strigger, set as SlurmUser through runuser)
    assert sorted({c.split()[0] + " " + c.split()[1] for c in calls if not c.startswith(READ_ONLY)}) == [
        "runuser -u", "sacctmgr -i", "sacctmgr -n", "scontrol ping", "scontrol show", "scontrol update",
        "strigger --get", "strigger --set", "systemctl daemon-reload"]
    assert "scontrol reconfigure" not in calls  # plugstack.conf is already right
    # the steps the new bundle shares with the old one had nothing to do
    assert all(f"[{s}] already done" in out for s in ("80-containers", "90-exporters")), out[-4000:]


def test_an_update_naming_another_digest_runs_nothing(tmp_path: Path) -> None:
    sb = _head(tmp_path)
    _publish(sb, _cluster(False), "a")
    stale = "f" * 64
    rc, out, calls = _launch(sb, "update", POINTER, stale)
    assert rc == 1 and f"this update expects {stale}" in out
    assert not (sb.root / "var/log/fmcluster/bootstrap.log").exists()


def test_an_update_re_run_long_after_the_first_boot_has_its_own_budget_and_waits_for_a_held_lock(tmp_path) -> None:
    """The first boot's deadline counts from the kernel's start; ParallelCluster's update of the head node comes days
    later with a wait condition of its own. The re-run gets the bundle's share of the limit from its own start, so a
    package lock held for a while is waited for, not failed at once (as it was: no time left of the first boot)."""
    sb = _head(tmp_path)
    digest = _publish(sb, _cluster(False), "a")
    rc, out, _ = _launch(sb, "configure", POINTER)
    assert rc == 0, out[-4000:]
    (sb.root / "proc/uptime").write_text("864000.25 1000.00\n")  # ten days since boot
    (sb.path / "state/lock-held").write_text("3\n")  # another apt holds the lock for three polls
    rc, out, calls = _launch(sb, "update", POINTER, digest)
    assert rc == 0, out[-4000:]
    assert "a re-run" in out and "waiting for the package manager lock" in out
    assert [c for c in calls if c == "sleep 5"] == ["sleep 5"] * 3
    # the re-run's budget is the bundle's share of the head node's limit (its wait condition), not ResumeTimeout's
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), None, "head", "parallelcluster")
    assert ctx.boot_limit.seconds == 2100 and "HeadNodeWaitCondition" in ctx.boot_limit.name
    m = re.search(r"the steps must finish within (\d+)s of its start", out)
    assert m and int(m.group(1)) == budget.rerun_s(ctx) > 0
