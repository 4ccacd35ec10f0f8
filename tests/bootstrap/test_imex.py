"""GB200 UltraServers: the per-boot IMEX unit writes the nodes config from EC2's answer, creates
the IMEX channel, and the health check fails when IMEX or its config is not there."""

from __future__ import annotations

import pytest
from support.sandbox import Image, build_sandbox, calls_of, context_for, make_project

ITYPE = "p6e-gb200.36xlarge"
CR = "cr-0123456789abcdef0"
# What `aws ec2 describe-instances --query 'Reservations[].Instances[].PrivateIpAddress' --output text`
# prints: tab-separated within a reservation, a line per reservation, unsorted.
MEMBERS = "10.0.0.17\t10.0.0.5\n10.0.0.9\t10.0.0.100\n"
SORTED = "10.0.0.5\n10.0.0.9\n10.0.0.17\n10.0.0.100\n"


@pytest.fixture(scope="module")
def gb200(tmp_path_factory):
    ctx = context_for(make_project(ITYPE, "ubuntu-24.04", "none"), "gpu", "compute")
    assert ctx.arch == "aarch64" and ctx.instance.needs_imex
    image = Image(gpus=ctx.instance.gpus, gpu_name="NVIDIA GB200", efa_devices=ctx.instance.efa_devices, nvme_drives=4)
    sb = build_sandbox(tmp_path_factory.mktemp("gb200"), ctx, image)
    (sb.path / "state/capacity-reservation").write_text(CR + "\n")
    (sb.path / "state/members").write_text(MEMBERS)
    first = sb.run()
    return sb, first


def test_boot_writes_the_nodes_config_and_creates_the_channel(gb200):
    sb, res = gb200
    assert res.rc == 0, res.out
    assert (sb.root / "etc/nvidia-imex/nodes_config.cfg").read_text() == SORTED
    assert (sb.root / "dev/nvidia-caps-imex-channels/channel0").exists()
    # channel 0 from the major number /proc/devices gives nvidia-caps-imex-channels
    assert f"mknod -m 666 {sb.root}/dev/nvidia-caps-imex-channels/channel0 c 234 0" in res.calls
    ec2 = [c for c in calls_of(res, "aws") if c.startswith("aws ec2 describe-instances")]
    assert ("aws ec2 describe-instances --region us-east-1 --instance-ids i-0123456789abcdef0 "
            "--query Reservations[0].Instances[0].CapacityReservationId --output text") in ec2
    assert ("aws ec2 describe-instances --region us-east-1 "
            f"--filters Name=capacity-reservation-id,Values={CR} Name=instance-state-name,Values=pending,running "
            "--query Reservations[].Instances[].PrivateIpAddress --output text") in ec2
    assert "systemctl enable fmcluster-imex.service fmcluster-imex.timer" in res.calls
    assert "systemctl enable nvidia-imex.service" in res.calls
    assert "systemctl restart nvidia-imex.service" in res.calls
    assert (sb.root / "etc/modprobe.d/fmcluster-imex-channel.conf").read_text() == "options nvidia NVreg_CreateImexChannel0=1\n"
    unit = (sb.root / "etc/systemd/system/fmcluster-imex.service").read_text()
    assert "Before=nvidia-imex.service" in unit and "ExecStart=/usr/local/sbin/fmcluster-imex" in unit
    assert (sb.root / "var/lib/fmcluster/health").read_text() == "healthy\n"
    # no Fabric Manager on GB200: IMEX takes its place
    assert not [c for c in res.calls if "nvidia-fabricmanager" in c]


def test_a_member_that_starts_later_is_added_and_imex_restarted(gb200):
    sb, _ = gb200
    (sb.path / "state/members").write_text(MEMBERS + "10.0.0.6\n")
    res = sb.run(script="../root/usr/local/sbin/fmcluster-imex")
    assert res.rc == 0, res.out
    assert (sb.root / "etc/nvidia-imex/nodes_config.cfg").read_text().splitlines()[:2] == ["10.0.0.5", "10.0.0.6"]
    assert "systemctl restart nvidia-imex.service" in res.calls
    # unchanged list: IMEX is left alone
    res = sb.run(script="../root/usr/local/sbin/fmcluster-imex")
    assert res.rc == 0, res.out
    assert "systemctl restart nvidia-imex.service" not in res.calls
    (sb.path / "state/members").write_text(MEMBERS)
    assert sb.run(script="../root/usr/local/sbin/fmcluster-imex").rc == 0


def test_a_node_missing_from_its_own_domain_fails(gb200):
    sb, _ = gb200
    (sb.path / "state/members").write_text("10.0.0.17\t10.0.0.9\n")
    try:
        res = sb.run(script="../root/usr/local/sbin/fmcluster-imex")
    finally:
        (sb.path / "state/members").write_text(MEMBERS)
    assert res.rc != 0
    assert f"this node (10.0.0.5) is not among the members of {CR}" in res.out


@pytest.mark.parametrize("break_it, reason", [
    ("imex-down", "imex: nvidia-imex is not running"),
    ("empty-config", "imex: /etc/nvidia-imex/nodes_config.cfg lists no members"),
    ("no-channel", "imex: IMEX channel 0 (/dev/nvidia-caps-imex-channels/channel0) does not exist"),
    ("fabric-training", "fabric: GPU fabric state is not Completed/Success: 4 GPUs In Progress/Success"),
])
def test_the_health_check_fails_without_imex(gb200, break_it, reason):
    sb, _ = gb200
    conf = sb.root / "etc/nvidia-imex/nodes_config.cfg"
    channel = sb.root / "dev/nvidia-caps-imex-channels/channel0"
    saved = conf.read_text()
    flags = {"imex-down": "inactive-nvidia-imex.service", "fabric-training": "fabric-bad"}
    if break_it in flags:
        sb.set_state(flags[break_it])
    elif break_it == "empty-config":
        conf.write_text("")
    else:
        channel.unlink()
    try:
        res = sb.run(script="steps/99-healthcheck.sh")
    finally:
        for flag in flags.values():
            (sb.path / "state" / flag).unlink(missing_ok=True)
        conf.write_text(saved)
        channel.touch()
    assert res.rc != 0
    assert reason in res.out, res.out
    assert reason in (sb.root / "var/lib/fmcluster/health").read_text()
    # self-managed: the instance is tagged unhealthy
    assert [c for c in calls_of(res, "aws") if c.startswith("aws ec2 create-tags") and "Value=unhealthy" in c]
