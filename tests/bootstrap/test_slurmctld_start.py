"""slurmctld.service's start with fmcluster's two ExecStartPost hooks (the partition QoS of 88-slurm-policy and the teams
of 89-slurm-teams). systemd counts ExecStartPost= in TimeoutStartSec= (systemd.service(5)), and with no TimeoutStartSec=
in ParallelCluster's unit the default is 90 s (systemd-system.conf(5), DefaultTimeoutStartSec=): two hooks that each
kept under 90 s could still, together, make systemd kill slurmctld's start. Each hook is bounded by timeout(1), and a
third drop-in (written alike by both steps) raises the start timeout to the unit's own plus both hooks' bounds.

Booted in the sandbox on the accounting example's head node (both steps), checked with the real systemd-analyze, and
the hooks' command lines run as systemd would run them (through the real timeout(1))."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from fmcluster.bootstrap import bundles, render
from fmcluster.config import parse
from fmcluster.plan import make_plan
from support.sandbox import SLURMCTLD_UNIT, Image, build_sandbox, install_slurm_controller, restart_slurmctld

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "p5-slurm-accounting.yaml"
HEAD_IMAGE = {"gpus": 0, "efa_devices": 0, "nvme_drives": 0, "driver": False}
DROPINS = Path("etc/systemd/system/slurmctld.service.d")
HOOKS = ("fmcluster-partition-qos.conf", "fmcluster-slurm-teams.conf")
TIMEOUT = "fmcluster-start-timeout.conf"


def _sandbox(tmp_path: Path, unit: str = SLURMCTLD_UNIT):
    cluster = make_plan(parse(EXAMPLE.read_text()).project).cluster
    ctx = bundles.dispatched_contexts(cluster)[render.HEAD_NODE_BUNDLE]
    assert ctx.slurm_policy and ctx.slurm_teams_step, "the example's head node runs both steps"
    sb = build_sandbox(tmp_path / "sb", ctx, Image(**HEAD_IMAGE))
    install_slurm_controller(sb, ("gpu",))
    (sb.root / "etc/systemd/system/slurmctld.service").write_text(unit)
    return ctx, sb


def _setting(text: str, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(f"{key}=")]


def _hook_bound(sb, name: str) -> int:
    """The most a hook can run: timeout(1)'s limit plus its --kill-after."""
    (command,) = _setting((sb.root / DROPINS / name).read_text(), "ExecStartPost")
    argv = shlex.split(command.removeprefix("-"))
    assert argv[0] == "/usr/bin/timeout", f"{name}: the hook is not bounded: {command}"
    kill_after = int(re.fullmatch(r"--kill-after=(\d+)", argv[1]).group(1))
    return int(argv[2]) + kill_after


def _start_timeout(sb) -> str:
    (value,) = _setting((sb.root / DROPINS / TIMEOUT).read_text(), "TimeoutStartSec")
    return value


def test_the_start_timeout_covers_slurmctld_s_own_and_both_hooks(tmp_path) -> None:
    ctx, sb = _sandbox(tmp_path)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    bounds = {name: _hook_bound(sb, name) for name in HOOKS}
    o = ctx.options
    assert bounds == {HOOKS[0]: o.partition_qos_hook_s + o.hook_kill_after_s,
                      HOOKS[1]: o.slurm_teams_hook_s + o.hook_kill_after_s}
    # ParallelCluster's unit sets none: systemd's default 90 s for slurmctld itself, then the hooks'
    assert int(_start_timeout(sb)) == 90 + sum(bounds.values())
    # the partition QoS script's wait for slurmctld fits in its own bound, with room for its calls
    assert ctx.options.slurmctld_wait_s < ctx.options.partition_qos_hook_s


def test_a_second_boot_leaves_the_drop_ins_alone(tmp_path) -> None:
    _, sb = _sandbox(tmp_path)
    assert sb.run().rc == 0
    before = {p.name: p.read_bytes() for p in (sb.root / DROPINS).iterdir()}
    again = sb.run()
    assert again.rc == 0, again.out[-3000:]
    assert "systemctl daemon-reload" not in again.calls
    assert {p.name: p.read_bytes() for p in (sb.root / DROPINS).iterdir()} == before


def test_a_lost_timeout_drop_in_is_written_again(tmp_path) -> None:
    _, sb = _sandbox(tmp_path)
    assert sb.run().rc == 0
    (sb.root / DROPINS / TIMEOUT).unlink()
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert (sb.root / DROPINS / TIMEOUT).is_file() and "systemctl daemon-reload" in res.calls


@pytest.mark.parametrize(("setting", "own"), [
    ("TimeoutStartSec=300", 300),
    ("TimeoutSec=5min", 300),          # TimeoutSec= sets the start timeout too
    ("TimeoutStartSec=45s", 45),
    ("TimeoutStartSec=infinity", None),
    ("TimeoutStartSec=0", None),        # 0 turns the timeout off, as infinity does
    ("TimeoutStartSec=1min 30s", 90),   # a compound span: not read, counted as the default (said in the log)
])
def test_a_unit_s_own_start_timeout_is_kept_and_raised(tmp_path, setting: str, own: int | None) -> None:
    unit = SLURMCTLD_UNIT.replace("Type=simple\n", f"Type=simple\n{setting}\n")
    _, sb = _sandbox(tmp_path, unit)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    hooks = sum(_hook_bound(sb, name) for name in HOOKS)
    assert _start_timeout(sb) == ("infinity" if own is None else str(own + hooks))
    assert ("cannot read" in res.out) is (" " in setting)


def test_systemd_reads_the_unit_with_its_three_drop_ins(tmp_path) -> None:
    _, sb = _sandbox(tmp_path)
    assert sb.run().rc == 0
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is needed (Debian: systemd; .ci/run installs it)"
    root = sb.root
    assert sorted(p.name for p in (root / DROPINS).iterdir()) == sorted([*HOOKS, TIMEOUT])
    shutil.copytree("/usr/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True, dirs_exist_ok=True)
    for tool in ("opt/slurm/sbin/slurmctld",):
        (root / tool).parent.mkdir(parents=True, exist_ok=True)
        (root / tool).write_text("#!/bin/sh\n")
        (root / tool).chmod(0o755)
    (root / "usr/bin").mkdir(parents=True, exist_ok=True)
    shutil.copy(shutil.which("timeout"), root / "usr/bin/timeout")
    (root / "bin").mkdir(exist_ok=True)
    shutil.copy(shutil.which("kill"), root / "bin/kill")
    proc = subprocess.run([analyze, f"--root={root}", "verify", "slurmctld.service"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "SYSTEMD_LOG_COLOR": "0"})
    assert proc.returncode == 0 and not (proc.stdout + proc.stderr).strip(), proc.stdout + proc.stderr


def test_each_hook_run_as_systemd_runs_it_restores_what_a_restart_lost(tmp_path) -> None:
    """After a restart slurmctld's partitions come back without their QoS: the partition-QoS hook's command line,
    through the real timeout(1), sets them again; the teams hook's finds nothing to change."""
    _, sb = _sandbox(tmp_path)
    assert sb.run().rc == 0
    restart_slurmctld(sb)
    assert (sb.path / "state/slurm/partitions/gpu").read_text().strip() == "N/A"
    for name in HOOKS:
        (command,) = _setting((sb.root / DROPINS / name).read_text(), "ExecStartPost")
        argv = shlex.split(command.removeprefix("-"))
        argv = [shutil.which("timeout"), *[f"{sb.root}{a}" if a.startswith("/usr/local/sbin/") else a
                                           for a in argv[1:]]]
        proc = subprocess.run(argv, env=sb.env, capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode == 0, (name, proc.stderr)
    assert (sb.path / "state/slurm/partitions/gpu").read_text().strip() == "gpu"
