"""Detect and reuse, never downgrade (DESIGN.md): each defect the image profiles exposed, on the image that
exposes it. The stubs refuse what the real tools refuse (tests/support/sandbox.py)."""

from __future__ import annotations

import pytest
from fmcluster.bootstrap import profiles
from support.sandbox import FSX, REAL, Image, build_sandbox, calls_of, context_for, make_project


def _profile(name: str) -> profiles.ImageProfile:
    (found,) = [p for p in profiles.load_profiles() if p.name == name]
    return found


def _boot(tmp_path, itype: str, os_name: str, orch: str, image: Image):
    ctx = context_for(make_project(itype, os_name, orch), "gpu", "compute", fsx=FSX if orch == "none" else None)
    sb = build_sandbox(tmp_path / "sb", ctx, image)
    res = sb.run()
    return sb, res


def _installs(res) -> list[str]:
    return [c for c in calls_of(res, "apt-get") + calls_of(res, "dnf") if " install " in c]


# --- persistence -------------------------------------------------------------------------------

@pytest.mark.parametrize("os_name", ["ubuntu-22.04", "al2023"])
def test_parallelcluster_ami_persistence_is_its_own_unit(tmp_path, os_name):
    """ParallelCluster's AMI has no nvidia-persistenced.service: enabling it failed the node (issue 21, defect 2)."""
    image = Image.from_profile(_profile(f"parallelcluster-{os_name}"), "x86_64", {"nvidia_persistenced_unit": False})
    sb, res = _boot(tmp_path, "p5.48xlarge", os_name, "parallelcluster", image)
    assert res.rc == 0, res.out[-2000:]
    assert not [c for c in calls_of(res, "systemctl") if "nvidia-persistenced" in c and (" enable" in c or " start" in c)]
    assert "parallelcluster_nvidia.service keeps the GPUs initialised (reused)" in res.log
    assert not (sb.root / "etc/systemd/system/fmcluster-persistenced.service").exists()


def test_a_packaged_driver_s_unit_is_enabled(tmp_path):
    sb, res = _boot(tmp_path, "p5.48xlarge", "ubuntu-22.04", "none", Image())
    assert res.rc == 0, res.out[-2000:]
    assert "systemctl enable --now nvidia-persistenced.service" in res.calls


def test_without_any_persistence_unit_our_own_is_added(tmp_path):
    sb, res = _boot(tmp_path, "p5.48xlarge", "ubuntu-22.04", "none", Image(units=("docker.service", "nvidia-fabricmanager.service", "nvidia-dcgm-exporter.service"),
                                                                          persistence_mode=False))
    assert res.rc == 0, res.out[-2000:]
    unit = (sb.root / "etc/systemd/system/fmcluster-persistenced.service").read_text()
    assert "ExecStart=/usr/bin/nvidia-smi -pm 1" in unit
    assert "systemctl enable --now fmcluster-persistenced.service" in res.calls
    assert not [c for c in calls_of(res, "systemctl") if "nvidia-persistenced" in c and (" enable" in c or " start" in c)]
    assert (sb.root / "var/lib/fmcluster/health").read_text() == "healthy\n"


def test_persistence_mode_already_on_is_accepted_without_a_unit(tmp_path):
    sb, res = _boot(tmp_path, "p5.48xlarge", "ubuntu-22.04", "none", Image(units=("docker.service", "nvidia-fabricmanager.service",
                                                                                 "nvidia-dcgm-exporter.service")))
    assert res.rc == 0, res.out[-2000:]
    assert "persistence: mode is already on for every GPU (nvidia-smi); kept, no unit added" in res.log
    assert not (sb.root / "etc/systemd/system/fmcluster-persistenced.service").exists()
    assert not [c for c in calls_of(res, "systemctl") if "persistenced" in c and (" enable" in c or " start" in c)]


# --- DCGM and NVIDIA's repository ------------------------------------------------------------------

@pytest.mark.parametrize("os_name", ["ubuntu-22.04", "al2023"])
def test_the_image_s_newer_dcgm_is_reused_not_downgraded(tmp_path, os_name):
    """ParallelCluster's AMI has DCGM 4.6.0; installing the pinned 4.4.2 is a downgrade apt refuses (defect 3)."""
    image = Image.from_profile(_profile(f"parallelcluster-{os_name}"), "x86_64", {"cuda_source": False})
    sb, res = _boot(tmp_path, "p5.48xlarge", os_name, "parallelcluster", image)
    assert res.rc == 0, res.out[-2000:]
    assert not [c for c in _installs(res) if "datacenter-gpu-manager-4-core" in c]
    assert [c for c in _installs(res) if REAL.dcgm_exporter.package in c and "4.8.3" in c]  # the 4.6.0-4.8.3 release
    assert "DCGM 4.6.0 is already installed (image, pinned 4.4.2); reused" in res.log
    assert "dcgm-exporter 4.8.3 installed on DCGM 4.6.0" in res.log


def test_an_older_dcgm_is_upgraded_to_the_pin_with_its_exporter(tmp_path):
    sb, res = _boot(tmp_path, "p5.48xlarge", "ubuntu-22.04", "none",
                    Image(dcgm_exporter=False, packages={"datacenter-gpu-manager-4-core": "1:4.2.3-1"}))
    assert res.rc == 0, res.out[-2000:]
    assert any("datacenter-gpu-manager-4-core=1:4.4.2-1" in c for c in _installs(res))
    assert any(f"{REAL.dcgm_exporter.package}={REAL.dcgm_exporter.version}-1" in c for c in _installs(res))


@pytest.mark.parametrize("os_name", ["ubuntu-24.04", "al2023"])
def test_an_image_s_cuda_repository_source_is_reused_not_doubled(tmp_path, os_name):
    """Our own list beside an image's cuda-keyring list makes apt fail: "Conflicting values set for option Signed-By"."""
    image = Image.from_profile(_profile(f"self-managed-{os_name}"), "x86_64",
                               {"cuda_source": True, "dcgm_exporter": False, "dcgm": False})
    sb, res = _boot(tmp_path, "p5.48xlarge", os_name, "none", image)
    assert res.rc == 0, res.out[-2000:]
    assert not (sb.root / "etc/apt/sources.list.d/fmcluster-nvidia-cuda.list").exists()
    assert not (sb.root / "etc/yum.repos.d/fmcluster-nvidia-cuda.repo").exists()
    assert "is already a package source of the image" in res.log
    assert [c for c in _installs(res) if REAL.dcgm_exporter.package in c]


# --- Fabric Manager, IMEX and nvlsm follow the driver the node has ----------------------------------

@pytest.mark.parametrize("itype, os_name", [("p6-b200.48xlarge", "ubuntu-22.04"), ("p6-b300.48xlarge", "al2023")])
def test_b200_b300_get_nvlsm_with_the_fabric_manager_we_install(tmp_path, itype, os_name):
    image = Image(driver=False, fabric_manager=False, dcgm_exporter=False, efa_devices=8 if "b200" in itype else 16,
                  gpu_name="NVIDIA B200" if "b200" in itype else "NVIDIA B300")
    sb, res = _boot(tmp_path, itype, os_name, "none", image)
    assert res.rc == 0, res.out[-2000:]
    assert [c for c in _installs(res) if "fabricmanager" in c]
    nvlsm = [c for c in _installs(res) if c.endswith(" nvlsm")]
    assert nvlsm, _installs(res)
    assert (sb.root / "opt/nvidia/nvlsm/sbin/nvlsm").exists()
    if os_name != "al2023":
        assert "apt-mark hold nvlsm" in res.calls


def test_h100_gets_no_nvlsm(tmp_path):
    sb, res = _boot(tmp_path, "p5.48xlarge", "ubuntu-22.04", "none", Image(driver=False, fabric_manager=False))
    assert res.rc == 0, res.out[-2000:]
    assert not [c for c in _installs(res) if "nvlsm" in c]


def test_fabric_manager_missing_is_installed_at_the_image_s_driver_version(tmp_path):
    """A DLAMI's driver is newer than our pin: Fabric Manager must match it, not the pin (it used to stop the node)."""
    sb, res = _boot(tmp_path, "p5.48xlarge", "ubuntu-22.04", "none",
                    Image(fabric_manager=False, driver_version="595.64"))
    assert res.rc == 0, res.out[-2000:]
    assert any("nvidia-fabricmanager=595.64-1ubuntu1" in c for c in _installs(res)), _installs(res)
    assert not [c for c in _installs(res) if "580." in c]


@pytest.mark.parametrize("name, arch, flipped", [("parallelcluster-ubuntu-22.04", "x86_64", False),
                                                 ("self-managed-al2023", "aarch64", True)])
def test_a_second_boot_on_a_profile_image_changes_nothing(tmp_path, name, arch, flipped):
    profile = _profile(name)
    present = profile.variants(arch)[-1 if flipped else 0][1]
    itype = "p6e-gb200.36xlarge" if arch == "aarch64" else "p5.48xlarge"
    orch = "none" if profile.flavour == "self-managed" else profile.flavour
    ctx = context_for(make_project(itype, profile.os, orch), "gpu", "compute", fsx=FSX if orch == "none" else None)
    hw = dict(gpus=ctx.instance.gpus, efa_devices=ctx.instance.efa_devices, nvme_drives=ctx.instance.local_nvme_drives or 4,
              gpu_name="NVIDIA GB200" if arch == "aarch64" else "NVIDIA H100 80GB HBM3")
    sb = build_sandbox(tmp_path / "sb", ctx, Image.from_profile(profile, arch, present, **hw))
    if ctx.instance.needs_imex:
        (sb.path / "state/members").write_text("10.0.0.5\n")
    first = sb.run()
    assert first.rc == 0, first.out[-2000:]
    again = sb.run()
    assert again.rc == 0, again.out[-2000:]
    assert not _installs(again)
    assert not [c for c in calls_of(again, "systemctl") if " enable" in c or " restart" in c]
    assert again.log.count("already done") == len(sb.manifest.steps) - 2  # all but preflight and the health check
