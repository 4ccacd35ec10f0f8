"""The periodic node health check (files/fmcluster-node-health, installed by steps/95-node-health.sh): on every Slurm
path it drains a GPU node for each fault that can appear while jobs run, and leaves a healthy node alone.

Each orchestrator's GPU bundle boots once in the sandbox; the installed check then runs as slurmd (ParallelCluster's
HealthCheckProgram) or the timer (PCS, HyperPod) would run it, with one fault injected into the stubbed tools: an Xid
79 in the kernel log, a failed row remap, a PCIe link at x8 of x16, HW Slowdown, EFA work-request errors. The Slurm
client is a stub that records the `scontrol update` and answers `show node` with this node."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.sandbox import Image, _write_stub, build_sandbox, calls_of, context_for, make_project

from fmcluster.flavours import FLAVOURS, NODE_HEALTH_PROGRAM

SCONTROL = r"""
case "${1:-} ${2:-} ${3:-}" in
  "-o show node") echo "NodeName=gpu-st-gpu-1 Arch=x86_64 NodeAddr=10.0.0.5 NodeHostName=ip-10-1-2-3 State=IDLE" ;;
  "update "*) ;;
  *) echo "scontrol stub: unexpected $*" >&2; exit 1 ;;
esac
"""

ORCHESTRATORS = {"parallelcluster": "ubuntu-22.04", "hyperpod": "ubuntu-22.04", "pcs": "ubuntu-24.04"}
FAULTS = {
    # name -> (what to inject, what the reason must say)
    "xid-79": ("kernel.log", "xid: NVRM: Xid (PCI:0000:53:00): 79,"),
    "row-remap-failure": ("remap-failed", "gpu 00000000:52:00.0: a row remap failed"),
    "pcie-x8": ("pcie-x8", "gpu 00000000:53:00.0: PCIe link x8, expected x16"),
    "hw-slowdown": ("hw-slowdown", "gpu 00000000:55:00.0: HW Slowdown is active"),
    "efa-errors": ("efa", "efa rdmap17s27: rdma_write_wr_err rose from 0 to 3"),
}
XID_79 = "kernel: NVRM: Xid (PCI:0000:53:00): 79, pid=1234, GPU has fallen off the bus.\n"


@pytest.fixture(scope="module", params=list(ORCHESTRATORS))
def node(request, tmp_path_factory):
    orchestrator = request.param
    ctx = context_for(make_project("p5.48xlarge", ORCHESTRATORS[orchestrator], orchestrator), "gpu", "compute")
    sb = build_sandbox(tmp_path_factory.mktemp(orchestrator), ctx, Image())
    for i in range(2):  # EFA's error counters, at 0 after boot
        counters = sb.root / f"sys/class/infiniband/rdmap{16 + i}s27/ports/1/hw_counters"
        (counters / "rdma_write_wr_err").write_text("0\n")
        (counters / "rdma_read_wr_err").write_text("0\n")
    bindir = sb.root / ctx.options.slurm_prefix.lstrip("/") / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    _write_stub(bindir / "scontrol", SCONTROL)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    return orchestrator, ctx, sb


def _check(sb):
    """One run of the installed check, as slurmd or the timer runs it."""
    import subprocess

    (sb.path / "check.sh").write_text((sb.root / NODE_HEALTH_PROGRAM.lstrip("/")).read_text())
    before = len((sb.path / "calls.log").read_text().splitlines())
    proc = subprocess.run(["bash", str(sb.path / "check.sh")], env=sb.env, capture_output=True, text=True, timeout=60)
    calls = (sb.path / "calls.log").read_text().splitlines()[before:]
    return proc, [c for c in calls if c.startswith("scontrol update")]


def _drained(orchestrator: str, reason: str, updates: list[str]) -> bool:
    if FLAVOURS[orchestrator].unhealthy_action == "hyperpod-replace":
        # HyperPod's contract: the reason is exactly Action:Replace (the fault stays on the node)
        return updates == ["scontrol update nodename=gpu-st-gpu-1 state=fail reason=Action:Replace"]
    name = "gpu-st-gpu-1"
    return len(updates) == 1 and updates[0].startswith(f"scontrol update nodename={name} state=drain "
                                                       "reason=fmcluster-health: ") and reason in updates[0]


def test_a_healthy_node_is_left_alone(node):
    orchestrator, ctx, sb = node
    proc, updates = _check(sb)
    assert proc.returncode == 0, proc.stderr
    assert updates == []
    assert (sb.root / "var/lib/fmcluster/node-health").read_text() == "healthy\n"


def test_a_passing_hw_slowdown_reading_is_not_a_fault(node):
    """nvidia-smi may report HW Slowdown during a PState or clock change (nvidia-smi --help-query-gpu): one reading
    that a second one 5 s later does not repeat leaves the node alone."""
    orchestrator, ctx, sb = node
    (sb.path / "state/hw-slowdown-once").touch()
    proc, updates = _check(sb)
    assert proc.returncode == 0 and updates == [], proc.stderr
    assert "sleep 5" in (sb.path / "calls.log").read_text().splitlines()


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_drains_the_node_with_its_reason(node, fault):
    orchestrator, ctx, sb = node
    what, reason = FAULTS[fault]
    counter = sb.root / "sys/class/infiniband/rdmap17s27/ports/1/hw_counters/rdma_write_wr_err"
    _check(sb)  # where the EFA counters stand before the fault
    if what == "kernel.log":
        (sb.path / "state/kernel.log").write_text(XID_79)
    elif what == "efa":
        counter.write_text("3\n")
    else:
        (sb.path / "state" / what).touch()
    try:
        proc, updates = _check(sb)
        verdict = (sb.root / "var/lib/fmcluster/node-health").read_text()
    finally:
        (sb.path / "state" / what).unlink(missing_ok=True)
        (sb.path / "state/kernel.log").unlink(missing_ok=True)
        counter.write_text("0\n")
        _check(sb)  # the counters' new baseline
    assert _drained(orchestrator, reason, updates), (updates, proc.stderr)
    assert verdict.startswith("unhealthy: ") and reason in verdict


def test_the_check_runs_periodically_on_each_path(node):
    orchestrator, ctx, sb = node
    assert (sb.root / NODE_HEALTH_PROGRAM.lstrip("/")).exists()
    if FLAVOURS[orchestrator].periodic_health == "timer":
        timer = (sb.root / "etc/systemd/system/fmcluster-node-health.timer").read_text()
        assert f"OnUnitActiveSec={ctx.options.health_check_interval_s}" in timer
        assert (sb.path / "state/enabled-fmcluster-node-health.timer").exists()
    else:  # ParallelCluster: slurmd runs it (the cluster's CustomSlurmSettings; tests/generate/test_parallelcluster.py)
        assert FLAVOURS[orchestrator].periodic_health == "slurm.conf"


def test_a_pcs_node_whose_fsx_mount_failed_is_drained_with_the_reason(tmp_path: Path):
    """PCS starts slurmd after the user data whatever its result, and our bundle runs before slurmd: a node whose
    FSx mount failed would take jobs. The failed bootstrap installs the periodic check, whose first run drains the
    node with the bootstrap's reason (it retries each period until slurmd has registered the node)."""
    from support.sandbox import FSX

    ctx = context_for(make_project("p5.48xlarge", "ubuntu-24.04", "pcs"), "gpu", "compute", fsx=FSX)
    sb = build_sandbox(tmp_path / "sb", ctx, Image())
    bindir = sb.root / ctx.options.slurm_prefix.lstrip("/") / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    _write_stub(bindir / "scontrol", SCONTROL)
    sb.set_state("lustre-mount-fails")
    res = sb.run()
    assert res.rc != 0 and "[bootstrap] FAILED: 70-lustre" in res.out, res.out[-2000:]
    assert (sb.root / NODE_HEALTH_PROGRAM.lstrip("/")).exists(), res.out[-2000:]
    assert (sb.path / "state/enabled-fmcluster-node-health.timer").exists()
    assert "systemctl start fmcluster-node-health.timer" in calls_of(res, "systemctl") or \
        "systemctl restart fmcluster-node-health.timer" in calls_of(res, "systemctl")
    proc, updates = _check(sb)
    assert len(updates) == 1, (updates, proc.stderr)
    assert updates[0].startswith("scontrol update nodename=gpu-st-gpu-1 state=drain reason=fmcluster-health: "
                                 "bootstrap failed: 70-lustre: ")



def test_the_node_is_named_as_slurmd_or_parallelcluster_names_it(node):
    """slurmd's SLURMD_NODENAME first, then ParallelCluster's record of the node's name (the cookbook's
    slurm_nodename file), before any lookup by host name."""
    orchestrator, ctx, sb = node
    (sb.path / "state/remap-failed").touch()
    record = sb.root / "etc/parallelcluster/slurm_plugin/slurm_nodename"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text("train-st-gpu-7\n")
    try:
        _, recorded = _check(sb)
        sb.env["SLURMD_NODENAME"] = "train-st-gpu-9"
        _, given = _check(sb)
    finally:
        sb.env.pop("SLURMD_NODENAME", None)
        record.unlink()
        (sb.path / "state/remap-failed").unlink()
    assert recorded and recorded[0].startswith("scontrol update nodename=train-st-gpu-7 ")
    assert given and given[0].startswith("scontrol update nodename=train-st-gpu-9 ")
