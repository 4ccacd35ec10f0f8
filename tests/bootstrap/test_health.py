"""The health check fails for each problem it claims to catch, and only for those.

One node is bootstrapped once per module; each case then breaks one thing in the sandbox (a
kernel-log line, a stubbed nvidia-smi answer, a stopped service, an exporter that does not
answer), runs the health check step alone, and puts the thing back.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.sandbox import (
    FSX,
    REAL,
    Image,
    build_sandbox,
    calls_of,
    context_for,
    make_project,
)

NODE_PORT = REAL.node_exporter.port
DCGM_PORT = REAL.dcgm_exporter.port
DCGM_SERVICE = REAL.dcgm_exporter.service

XID_79 = "kernel: NVRM: Xid (PCI:0000:53:00): 79, pid=1234, GPU has fallen off the bus.\n"
XID_13 = "kernel: NVRM: Xid (PCI:0000:53:00): 13, pid=1234, Graphics Exception\n"  # an application's fault
SXID_FATAL = "kernel: nvidia-nvswitch4: SXid (PCI:0000:c6:00.0): 20034, Fatal, Link 28 LTSSM Fault Up\n"
SXID_NONFATAL = "kernel: nvidia-nvswitch3: SXid (PCI:0000:c5:00.0): 19084, Non-fatal, Link 10 AN1 Heartbeat Timeout Error (First)\n"


def _booted(path: Path, itype: str, orchestrator: str, image: Image, **state: str):
    ctx = context_for(make_project(itype, "ubuntu-22.04", orchestrator), "gpu", "compute", fsx=FSX)
    sb = build_sandbox(path, ctx, image)
    for name, content in state.items():
        (sb.path / "state" / name).write_text(content)
    res = sb.run()
    assert res.rc == 0, res.out
    return sb


@pytest.fixture(scope="module")
def p5(tmp_path_factory):
    return _booted(tmp_path_factory.mktemp("p5"), "p5.48xlarge", "parallelcluster", Image())


CASES = {
    # state file -> (its content, the reason the health check must give)
    "xid": ("kernel.log", XID_79, "xid: NVRM: Xid (PCI:0000:53:00): 79,"),
    "sxid-fatal": ("kernel.log", SXID_FATAL, "sxid: nvidia-nvswitch4: SXid (PCI:0000:c6:00.0): 20034, Fatal"),
    "row-remap-pending": ("remap-pending", "", "gpu 00000000:53:00.0: row remap pending (the GPU needs a reset)"),
    "row-remap-failed": ("remap-failed", "", "gpu 00000000:52:00.0: a row remap failed (replace the node)"),
    "retired-pages-pending": ("retired-pending", "", "gpu 00000000:51:00.0: retired pages pending (the GPU needs a reset)"),
    "persistence-off": ("persistence-off", "", "gpu: persistence mode is Disabled (nvidia-persistenced not running?)"),
    "fabric-training": ("fabric-bad", "", "fabric: GPU fabric state is not Completed/Success: 8 GPUs In Progress/Success"),
    "fabric-manager-down": ("inactive-nvidia-fabricmanager.service", "", "nvlink: nvidia-fabricmanager is not running"),
    "pcie-x8": ("pcie-x8", "", "gpu 00000000:53:00.0: PCIe link x8, expected x16"),
    "hw-slowdown": ("hw-slowdown", "", "gpu 00000000:55:00.0: HW Slowdown is active"),
    "fsx-unmounted": ("mounted", None, "fsx: fs-0123456789abcdef0 is not mounted at /fsx"),
}


@pytest.mark.parametrize("case", CASES)
def test_each_problem_fails_the_health_check(p5, case):
    name, content, reason = CASES[case]
    target = p5.path / "state" / name
    moved = target.with_name(name + ".away")
    if content is None:  # take something away
        target.rename(moved)
    else:
        target.write_text(content)
    try:
        res = p5.run(script="steps/99-healthcheck.sh")
    finally:
        if content is None:
            moved.rename(target)
        else:
            target.unlink()
    assert res.rc != 0, res.out
    assert reason in res.out, res.out
    assert (p5.root / "var/lib/fmcluster/health").read_text().startswith("unhealthy: ")
    assert reason in (p5.root / "var/lib/fmcluster/health").read_text()


MONITORING_CASES = {
    # monitoring is not what training needs: a warning (and its alert), never a reason to replace the node
    "node-exporter-down": ("inactive-fmcluster-node-exporter.service", "exporters: node_exporter is not running"),
    "node-exporter-silent": (f"down-{NODE_PORT}", f"exporters: node_exporter does not answer on port {NODE_PORT}"),
    "dcgm-exporter-down": (f"inactive-{DCGM_SERVICE}", "exporters: dcgm-exporter is not running"),
    "dcgm-exporter-silent": (f"down-{DCGM_PORT}", f"exporters: dcgm-exporter does not answer on port {DCGM_PORT}"),
}


@pytest.mark.parametrize("case", MONITORING_CASES)
def test_a_silent_exporter_warns_and_keeps_the_node(p5, case):
    name, warning = MONITORING_CASES[case]
    (p5.path / "state" / name).write_text("")
    try:
        res = p5.run(script="steps/99-healthcheck.sh")
    finally:
        (p5.path / "state" / name).unlink()
    assert res.rc == 0, res.out
    assert f"WARNING: {warning}" in res.out
    assert (p5.root / "var/lib/fmcluster/health").read_text() == "healthy\n"


@pytest.mark.parametrize("log", [XID_13, SXID_NONFATAL], ids=["xid-13-application", "sxid-non-fatal"])
def test_what_is_not_the_nodes_fault_keeps_it_healthy(p5, log):
    (p5.path / "state/kernel.log").write_text(log)
    try:
        res = p5.run(script="steps/99-healthcheck.sh")
    finally:
        (p5.path / "state/kernel.log").unlink()
    assert res.rc == 0, res.out
    assert (p5.root / "var/lib/fmcluster/health").read_text() == "healthy\n"
    if "SXid" in log:
        assert "sxid: 1 non-fatal NVSwitch SXid lines" in res.out


def test_the_health_check_reads_the_gpus_it_is_meant_to(p5):
    res = p5.run(script="steps/99-healthcheck.sh")
    assert res.rc == 0, res.out
    smi = calls_of(res, "nvidia-smi")
    assert "nvidia-smi --query-gpu=persistence_mode --format=csv,noheader" in smi
    assert ("nvidia-smi --query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure "
            "--format=csv,noheader") in smi
    assert "nvidia-smi --query-gpu=gpu_bus_id,retired_pages.pending --format=csv,noheader" in smi
    assert "nvidia-smi -q" in smi and "nvidia-smi nvlink --status" in smi
    assert "journalctl -k -b --no-pager" in res.calls  # this boot's kernel log only
    assert f"systemctl is-active --quiet {DCGM_SERVICE}" in res.calls


def test_a100_fabric_state_na_is_not_a_failure(tmp_path):
    """A100 (p4d) reports its fabric State and Status as N/A even with Fabric Manager running."""
    sb = _booted(tmp_path / "p4d", "p4d.24xlarge", "parallelcluster",
                 Image(gpu_name="NVIDIA A100-SXM4-40GB", efa_devices=4), **{"fabric-na": ""})
    assert (sb.root / "var/lib/fmcluster/health").read_text() == "healthy\n"


def test_self_managed_failure_tags_the_instance_and_tells_its_group(tmp_path):
    sb = _booted(tmp_path / "sm", "p5.48xlarge", "none", Image(), asg="fmc-demo-gpu\n")
    sb.set_state("persistence-off")
    res = sb.run(script="steps/99-healthcheck.sh")
    assert res.rc != 0
    (tag,) = [c for c in calls_of(res, "aws") if c.startswith("aws ec2 create-tags")]
    assert tag == ("aws ec2 create-tags --region us-east-1 --resources i-0123456789abcdef0 --tags "
                   "Key=fmcluster:health,Value=unhealthy "
                   "Key=fmcluster:health-reason,Value=gpu: persistence mode is Disabled (nvidia-persistenced not running?)")
    assert ("aws autoscaling set-instance-health --region us-east-1 --instance-id i-0123456789abcdef0 "
            "--health-status Unhealthy") in res.calls
    # outside a group: tagged, no group health call
    (sb.path / "state/asg").write_text("None\n")
    res = sb.run(script="steps/99-healthcheck.sh")
    assert res.rc != 0
    assert [c for c in calls_of(res, "aws") if c.startswith("aws ec2 create-tags")]
    assert not [c for c in calls_of(res, "aws") if "set-instance-health" in c]


def test_pcs_failure_tags_the_instance_it_cannot_drain(tmp_path):
    """Under PCS the bundle runs before slurmd has its configuration (PCS user guide, "Working with Amazon EC2 user
    data"), so it cannot drain its node, and PCS reads no health file: the instance is tagged, as self-managed."""
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "none"), "gpu", "compute", "pcs", fsx=FSX)
    sb = build_sandbox(tmp_path / "pcs", ctx, Image())
    (sb.path / "state/asg").write_text("None\n")
    assert sb.run().rc == 0
    sb.set_state("persistence-off")
    res = sb.run(script="steps/99-healthcheck.sh")
    assert res.rc != 0
    (tag,) = [c for c in calls_of(res, "aws") if c.startswith("aws ec2 create-tags")]
    assert "Key=fmcluster:health,Value=unhealthy" in tag
    assert not [c for c in calls_of(res, "aws") if "set-instance-health" in c]
    assert not [c for c in res.calls if "scontrol" in c]  # no drain: slurmd has no configuration yet
