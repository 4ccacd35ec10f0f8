"""enroot and pyxis settings (issue 11, defect 8), checked against the anchors' values typed in here
(pyxis wiki "Setup", the ParallelCluster cookbook's enroot.conf.erb, awsome-distributed-training's
HyperPod enroot.conf; the reasons are in containers.sh.j2), slurmd restarted where pyxis or its
settings changed, and the per-boot directories made by the real systemd-tmpfiles and the unit checked
by the real systemd-analyze.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from support.sandbox import (
    FSX,
    Image,
    build_sandbox,
    calls_of,
    context_for,
    fake_artifacts,
    make_project,
    with_optional_pins,
)

SETTINGS = {  # scratch mounted: storage on the instance-store NVMe
    "ENROOT_RUNTIME_PATH": "/run/enroot/user-$(id -u)",
    "ENROOT_DATA_PATH": "/scratch/containers/enroot/user-$(id -u)/data",
    "ENROOT_CACHE_PATH": "/scratch/containers/enroot/user-$(id -u)/cache",
    "ENROOT_TEMP_PATH": "/scratch/containers/enroot/tmp",
    "ENROOT_SQUASH_OPTIONS": "-noI -noD -noF -noX -no-duplicates",
    "ENROOT_MOUNT_HOME": "no",
    "ENROOT_RESTRICT_DEV": "no",
    "ENROOT_ROOTFS_WRITABLE": "yes",
}
UNIT = "fmcluster-containers.service"


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is needed (Debian: systemd; .ci/run installs it)"
    return path


def _sandbox(tmp_path, orchestrator="hyperpod", role="compute", scratch_mounted=True, image=None, **kw):
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", orchestrator), "gpu", role, fsx=FSX, **kw)
    sb = build_sandbox(tmp_path / "sb", ctx, image or Image())
    if scratch_mounted:
        (sb.path / "state/mounted").mkdir(exist_ok=True)
        (sb.path / "state/mounted" / f"{sb.root}/scratch".replace("/", "_")).touch()
    return sb


def _settings(sb) -> dict[str, str]:
    lines = (sb.root / "etc/enroot/enroot.conf").read_text().splitlines()
    pairs = [line.split(None, 1) for line in lines if line and not line.startswith("#")]
    return {key: value for key, value in pairs}


def test_enroot_settings_match_the_anchors_with_storage_on_the_nvme(tmp_path):
    sb = _sandbox(tmp_path)
    res = sb.run(script="steps/80-containers.sh")
    assert res.rc == 0, res.out
    assert _settings(sb) == SETTINGS
    # enroot reads the file as bash (bash -n) and expands each value with eval echo.
    conf = sb.root / "etc/enroot/enroot.conf"
    assert subprocess.run(["bash", "-n", str(conf)], check=False).returncode == 0
    uid = os.getuid()
    got = subprocess.run(["bash", "-c", f"eval echo \"{SETTINGS['ENROOT_RUNTIME_PATH']}\""], check=True,
                         capture_output=True, text=True).stdout.strip()
    assert got == f"/run/enroot/user-{uid}"
    for d in ("run/enroot", "scratch/containers/enroot", "scratch/containers/enroot/tmp"):
        assert (sb.root / d).stat().st_mode & 0o7777 == 0o1777, d
    assert f"systemctl enable {UNIT}" in res.calls


def test_without_the_nvme_storage_stays_off_the_scratch_path(tmp_path):
    sb = _sandbox(tmp_path, orchestrator="none", scratch_mounted=False, containers=True)
    res = sb.run(script="steps/80-containers.sh")
    assert res.rc == 0, res.out
    settings = _settings(sb)
    assert settings["ENROOT_TEMP_PATH"] == "/var/lib/fmcluster/containers/enroot/tmp"
    assert settings["ENROOT_DATA_PATH"] == "/var/lib/fmcluster/containers/enroot/user-$(id -u)/data"
    assert "ConditionPathIsMountPoint" not in (sb.root / "etc/systemd/system" / UNIT).read_text()


def test_pyxis_runtime_path_is_the_anchors_and_slurmd_restarts_once(tmp_path):
    sb = _sandbox(tmp_path)  # HyperPod: every node writes the plugstack; the image carries pyxis
    res = sb.run(script="steps/80-containers.sh")
    assert res.rc == 0, res.out
    conf = sb.root / "opt/slurm/etc/plugstack.conf.d/pyxis.conf"
    # Not on the scratch even where there is one: slurmd must start on a node whose scratch is missing.
    assert conf.read_text() == "required /usr/local/lib/slurm/spank_pyxis.so runtime_path=/run/pyxis\n"
    assert calls_of(res, "systemctl restart slurmd.service") == ["systemctl restart slurmd.service"]
    # Nothing changed: no second restart.
    (sb.root / "var/lib/fmcluster/markers/80-containers").unlink()
    res = sb.run(script="steps/80-containers.sh")
    assert res.rc == 0, res.out
    assert not calls_of(res, "systemctl restart slurmd.service")


def test_without_scratch_the_runtime_path_is_the_same(tmp_path):
    sb = _sandbox(tmp_path, scratch_mounted=False, scratch=False)
    res = sb.run(script="steps/80-containers.sh")
    assert res.rc == 0, res.out
    conf = sb.root / "opt/slurm/etc/plugstack.conf.d/pyxis.conf"
    assert conf.read_text() == "required /usr/local/lib/slurm/spank_pyxis.so runtime_path=/run/pyxis\n"


def test_slurmd_not_running_is_not_started(tmp_path):
    sb = _sandbox(tmp_path)
    sb.set_state("inactive-slurmd.service")
    res = sb.run(script="steps/80-containers.sh")
    assert res.rc == 0, res.out
    assert not calls_of(res, "systemctl restart slurmd.service")


def test_parallelcluster_compute_restarts_slurmd_after_building_pyxis(tmp_path):
    versions = with_optional_pins(fake_artifacts())
    sb = _sandbox(tmp_path, orchestrator="parallelcluster", image=Image(pyxis=False), versions=versions)
    res = sb.run(script="steps/80-containers.sh")
    assert res.rc == 0, res.out
    assert calls_of(res, "systemctl restart slurmd.service") == ["systemctl restart slurmd.service"]
    # The head node writes the shared plugstack; a compute node leaves it alone.
    assert not (sb.root / "opt/slurm/etc/plugstack.conf.d/pyxis.conf").exists()


@pytest.mark.parametrize("scratch_mounted", [True, False], ids=["nvme", "root-disk"])
def test_per_boot_directories_come_back_with_the_real_systemd_tmpfiles(tmp_path, scratch_mounted):
    sb = _sandbox(tmp_path, scratch_mounted=scratch_mounted)
    assert sb.run(script="steps/80-containers.sh").rc == 0
    root = sb.root
    base = "scratch/containers" if scratch_mounted else "var/lib/fmcluster/containers"
    # A reboot after a stop/start: /run is empty, the instance store blank.
    shutil.rmtree(root / "run/enroot")
    shutil.rmtree(root / base / "enroot")
    tmpfiles = _tool("systemd-tmpfiles")
    for conf in ("etc/tmpfiles.d/fmcluster-enroot.conf", "etc/fmcluster/containers.tmpfiles"):
        proc = subprocess.run([tmpfiles, f"--root={root}", "--create", str(root / conf)], check=False,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    for d in ("run/enroot", f"{base}/enroot", f"{base}/enroot/tmp"):
        assert (root / d).stat().st_mode & 0o7777 == 0o1777, d
    # The unit runs exactly that file, after the scratch is mounted and before slurmd.
    unit = (root / "etc/systemd/system" / UNIT).read_text()
    assert "ExecStart=/usr/bin/systemd-tmpfiles --create /etc/fmcluster/containers.tmpfiles" in unit
    assert "After=local-fs.target fmcluster-scratch.service" in unit and "Before=slurmd.service" in unit
    assert ("ConditionPathIsMountPoint=/scratch" in unit) == scratch_mounted


def test_the_unit_passes_systemd_analyze_verify(tmp_path):
    sb = _sandbox(tmp_path)
    assert sb.run(script="steps/80-containers.sh").rc == 0
    root = sb.root
    shutil.copytree("/usr/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True, dirs_exist_ok=True)
    (root / "usr/bin").mkdir(parents=True, exist_ok=True)
    shutil.copy(_tool("systemd-tmpfiles"), root / "usr/bin/systemd-tmpfiles")
    proc = subprocess.run([_tool("systemd-analyze"), f"--root={root}", "verify", str(root / "etc/systemd/system" / UNIT)],
                          check=False, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "SYSTEMD_LOG_COLOR": "0"})
    assert proc.returncode == 0 and not (proc.stdout + proc.stderr).strip(), proc.stdout + proc.stderr


def test_pcs_with_containers_turned_on_writes_no_plugstack_and_says_pyxis_is_not_loaded(tmp_path):
    """PCS's slurmd runs configless: plugstack.conf comes from the controller PCS generates, so a node-local one
    is ignored (PCS user guide, "Slurm configuration in AWS PCS"). Containers are off by default; turned on, the
    step installs enroot and says pyxis will not load, instead of writing a plugstack.conf nothing reads."""
    project = make_project("p5.48xlarge", "ubuntu-22.04", "none")
    assert not context_for(project, "gpu", "compute", "pcs").options.containers
    ctx = context_for(project, "gpu", "compute", "pcs", fsx=FSX, containers=True)
    sb = build_sandbox(tmp_path / "sb", ctx, Image())
    (sb.path / "state/mounted").mkdir(exist_ok=True)
    (sb.path / "state/mounted" / f"{sb.root}/scratch".replace("/", "_")).touch()
    res = sb.run(script="steps/80-containers.sh")
    assert res.rc == 0, res.out
    assert "does not load pyxis" in res.out
    assert not [p for p in sb.root.rglob("*") if p.name in ("plugstack.conf", "pyxis.conf")]
    assert _settings(sb)["ENROOT_TEMP_PATH"] == SETTINGS["ENROOT_TEMP_PATH"]
