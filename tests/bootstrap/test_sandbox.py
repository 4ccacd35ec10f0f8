"""Run rendered bundles in a sandbox of stub commands and check what they did."""

from __future__ import annotations

import shutil
import subprocess

import yaml
from fmcluster.bootstrap import render, versions
from support.sandbox import (
    FSX,
    Image,
    calls_of,
    context_for,
    fake_artifacts,
    make_project,
    with_optional_pins,
)

CHANGES = ("mount ", "modprobe ", "lnetctl net add", "systemctl enable", "systemctl restart", "systemctl start")
INSTALLERS = ("apt-get", "dnf", "curl", "mdadm", "mkfs.xfs", "useradd", "make", "docker", "efa_installer.sh", "nvidia-installer")


def test_preinstalled_image_runs_steps_in_order_and_keeps_the_driver(p5_context, make_sandbox):
    sb = make_sandbox(p5_context)
    res = sb.run()
    assert res.rc == 0, res.out
    order = [line.split("== ", 1)[1] for line in res.log.splitlines() if "[bootstrap] == " in line and " ok " not in line]
    assert order == [s.name for s in sb.manifest.steps]
    assert "NVIDIA driver 580.105.08 is already installed (image); not reinstalling" in res.log
    assert not [c for c in res.calls if c.startswith("nvidia-installer") or "NVIDIA-Linux" in c]
    assert "EFA installer 1.47.0 is already installed (image); not reinstalling" in res.log
    assert not calls_of(res, "efa_installer.sh")
    # every line of the log is timestamped
    assert all(line[:4].isdigit() and "T" in line[:11] for line in res.log.splitlines() if line)
    assert (sb.root / "var/lib/fmcluster/status").read_text() == "ok\n"
    assert (sb.root / "var/lib/fmcluster/health").read_text() == "healthy\n"
    # the work it had to do on this image
    assert any("mdadm --create /dev/md/fmcluster-scratch --level=0 --raid-devices=8" in c for c in res.calls)
    assert any(c.startswith("mount -t lustre -o relatime,flock fs-0123456789abcdef0.fsx") for c in res.calls)
    assert any("lnetctl net add --net efa --if rdmap16s27" in c for c in res.calls)
    assert any("lnetctl net add --net efa --if rdmap47s27" in c for c in res.calls)
    assert "node_exporter 1.9.1 is already installed" in res.log
    assert "systemctl enable fmcluster-scratch.service" in res.calls
    assert (sb.root / "etc/fmcluster/dcgm-counters.csv").read_text() == render.DCGM_COUNTERS_FILE.read_text()
    profile = (sb.root / "etc/profile.d/fmcluster-nccl.sh").read_text()
    assert "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu" in profile


def test_second_run_is_a_no_op(p5_context, make_sandbox):
    sb = make_sandbox(p5_context)
    first = sb.run()
    assert first.rc == 0, first.out
    res = sb.run()
    assert res.rc == 0, res.out
    changing = [c for c in res.calls if c.split(" ", 1)[0] in INSTALLERS or c.startswith(CHANGES)]
    did = [c for c in changing if "169.254.169.254" not in c and "127.0.0.1" not in c]  # reads only
    assert did == [], did
    for step in sb.manifest.steps:
        if step.name not in ("10-preflight", "99-healthcheck"):
            assert f"[{step.name}] already done" in res.log, step.name
    assert "node is healthy" in res.log


def test_bad_checksum_aborts_before_anything_is_installed(p5_context, make_sandbox):
    sb = make_sandbox(p5_context, Image(node_exporter=False))
    sb.serve("node_exporter-1.9.1.linux-amd64.tar.gz", b"tampered")
    res = sb.run()
    assert "sha256 mismatch for node_exporter 1.9.1" in res.out
    assert "nothing was installed" in res.out
    assert not (sb.root / "usr/local/bin/node_exporter").exists()
    assert not [c for c in calls_of(res, "useradd") if "node_exporter" in c]
    assert not [c for c in res.calls if "fmcluster-node-exporter" in c]
    assert not (sb.root / "var/cache/fmcluster/node_exporter-1.9.1.tar.gz").exists()
    # monitoring is not what training needs: the node joins without it (tests/bootstrap/test_monitoring_degrades.py)
    assert res.rc == 0, res.out[-2000:]
    assert "monitoring degraded: node_exporter is not installed (90-exporters: sha256 mismatch" in res.out


def test_bad_signature_aborts_before_the_efa_installer_runs(p5_context, make_sandbox):
    sb = make_sandbox(p5_context, Image(efa=False))
    sb.set_state("../gpg-bad")
    res = sb.run()
    assert res.rc != 0
    assert "GPG signature of EFA installer 1.51.0 is not valid" in res.out
    assert not calls_of(res, "efa_installer.sh")
    assert not calls_of(res, "apt-get")  # not even kernel headers


def test_good_signature_installs_efa(p5_context, make_sandbox):
    sb = make_sandbox(p5_context, Image(efa=False))
    res = sb.run(script="steps/30-efa.sh")
    assert res.rc == 0, res.out
    assert calls_of(res, "efa_installer.sh") == ["efa_installer.sh -y --mpi=openmpi5 --check-signatures"]
    assert "verified GPG signature of EFA installer 1.51.0 (key 4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC)" in res.log


def test_driver_missing_comes_from_nvidias_signed_repository_at_the_pinned_version(p5_context, make_sandbox):
    sb = make_sandbox(p5_context, Image(driver=False, fabric_manager=False))
    res = sb.run(script="steps/20-nvidia.sh")
    assert res.rc == 0, res.out
    key = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/3bf863cc.pub"
    assert any(c.startswith("curl") and c.endswith(key) for c in res.calls), res.calls
    assert (sb.root / "etc/apt/sources.list.d/fmcluster-nvidia-cuda.list").read_text() == (
        "deb [signed-by=/usr/share/keyrings/fmcluster-nvidia-cuda.gpg] "
        "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/ /\n")
    installs = [c for c in calls_of(res, "apt-get") if " install " in c]
    assert any(c.endswith("install --no-install-recommends nvidia-driver-580-open=580.105.08-1ubuntu1") for c in installs), installs
    assert any(c.endswith("nvidia-fabricmanager=580.105.08-1ubuntu1 libnvidia-nscq=580.105.08-1ubuntu1") for c in installs), installs
    assert "apt-mark hold nvidia-driver-580-open" in res.calls
    assert "update-initramfs -u" in res.calls  # nouveau blacklisted in the initramfs too
    assert "systemctl enable --now nvidia-persistenced.service" in res.calls
    assert "systemctl enable --now nvidia-fabricmanager.service" in res.calls
    assert not [c for c in res.calls if "NVIDIA-Linux" in c or c.startswith("nvidia-installer")]


def test_fabric_manager_under_its_branch_suffixed_name_when_the_repository_carries_that_one(p5_context, make_sandbox):
    # versions.yaml lists both names NVIDIA has used on Ubuntu; the node takes the one the repository has.
    sb = make_sandbox(p5_context, Image(driver=False, fabric_manager=False, repo_names=1))
    res = sb.run(script="steps/20-nvidia.sh")
    assert res.rc == 0, res.out
    installs = [c for c in calls_of(res, "apt-get") if " install " in c]
    assert any(c.endswith("nvidia-fabricmanager-580=580.105.08-1ubuntu1 libnvidia-nscq-580=580.105.08-1ubuntu1")
               for c in installs), installs
    assert "apt-mark hold nvidia-fabricmanager-580 libnvidia-nscq-580" in res.calls


def test_a_long_repository_listing_after_the_match_does_not_fail_the_step(p5_context, make_sandbox):
    # NVIDIA's repository lists every build of a package. apt-cache madison is still writing when the wanted version
    # has been found: a reader that stops there (awk '… exit') killed it with SIGPIPE and the step failed with 141 at
    # random (issue 45). 20,000 lines after the match fill any pipe buffer, so the old step fails every time.
    sb = make_sandbox(p5_context, Image(driver=False, fabric_manager=False))
    for listing in (sb.path / "madison").iterdir():
        lines = listing.read_text()
        listing.write_text(lines + "".join(f"0.0.{i}-1\n" for i in range(20_000)))
    res = sb.run(script="steps/20-nvidia.sh")
    assert res.rc == 0, res.out + res.log
    installs = [c for c in calls_of(res, "apt-get") if " install " in c]
    assert any(c.endswith("install --no-install-recommends nvidia-driver-580-open=580.105.08-1ubuntu1") for c in installs), installs


def test_a_repository_without_either_name_stops_the_step_naming_both(p5_context, make_sandbox):
    sb = make_sandbox(p5_context, Image(driver=False, fabric_manager=False))
    (sb.path / "madison/nvidia-fabricmanager").unlink()
    res = sb.run(script="steps/20-nvidia.sh")
    assert res.rc != 0
    assert "has no nvidia-fabricmanager nor nvidia-fabricmanager-580 at 580.105.08" in res.out + res.log


def test_a_substituted_nvidia_repository_key_is_refused(p5_context, make_sandbox):
    sb = make_sandbox(p5_context, Image(driver=False))
    sb.env["T_NV_FPR"] = "0" * 40
    res = sb.run(script="steps/20-nvidia.sh")
    assert res.rc != 0
    assert f"has fingerprint {'0' * 40}, expected EB693B3035CD5710E231E123A4B469963BF863CC" in res.out
    assert not [c for c in calls_of(res, "apt-get") if " install " in c]


def test_al2023_installs_nvidia_packages_with_dnf_at_the_pinned_version(make_sandbox):
    ctx = context_for(make_project("p5.48xlarge", "al2023", "none"), "gpu", "compute")
    sb = make_sandbox(ctx, Image(driver=False, fabric_manager=False, dcgm_exporter=False))
    res = sb.run()
    assert res.rc == 0, res.out
    repo = (sb.root / "etc/yum.repos.d/fmcluster-nvidia-cuda.repo").read_text()
    assert "baseurl=https://developer.download.nvidia.com/compute/cuda/repos/amzn2023/x86_64\n" in repo
    assert "gpgcheck=1\n" in repo
    dnf = [c for c in calls_of(res, "dnf") if " install " in c]
    assert "dnf -q -y install nvidia-open-580.105.08" in dnf, dnf
    assert "dnf -q -y install nvidia-fabricmanager-580.105.08 libnvidia-nscq-580.105.08" in dnf
    assert "dnf -q -y install datacenter-gpu-manager-4-core-4.4.2 datacenter-gpu-manager-4-cuda13-4.4.2" in dnf
    assert "dnf -q -y install datacenter-gpu-manager-exporter-4.7.1" in dnf
    assert "dracut -f" in res.calls
    assert "systemctl enable nvidia-dcgm-exporter.service" in res.calls


def test_an_image_without_enroot_or_pyxis_goes_on_without_them(make_sandbox):
    """Optional components are never downloaded unpinned; the node says why and goes on."""
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "compute", fsx=FSX)
    sb = make_sandbox(ctx, Image(enroot=False, pyxis=False, gdrcopy=False))
    res = sb.run()
    assert res.rc == 0, res.out
    assert "the image has no enroot and versions.yaml pins no checksum for it (enroot.deb.sha256.x86_64" in res.log
    assert "the image has no GDRCopy and it is not built: versions.yaml pins no sha256" in res.log
    assert not [c for c in res.calls if c.startswith("curl") and ("enroot" in c or "v0.19.0" in c or "v2.6" in c)]
    assert (sb.root / "var/lib/fmcluster/health").read_text() == "healthy\n"
    assert sb.manifest.placeholders == []
    assert "pyxis.source.sha256" in sb.manifest.optional_unpinned


def test_a_required_pin_left_out_stops_before_downloading(make_sandbox):
    data = yaml.safe_load(versions.VERSIONS_FILE.read_text())
    data["node_exporter"]["tarball"]["sha256"]["x86_64"] = None
    unpinned = versions.Versions.model_validate(data)
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "none"), "gpu", "compute", versions=unpinned)
    sb = make_sandbox(ctx, Image(node_exporter=False))
    assert sb.manifest.placeholders == ["node_exporter.tarball.sha256.x86_64"]
    res = sb.run(script="steps/90-exporters.sh")
    assert "no sha256 pinned for node_exporter 1.9.1" in res.out
    assert res.rc == 0 and "monitoring degraded: node_exporter is not installed" in res.out  # monitoring only
    assert not [c for c in res.calls if c.startswith("curl") and "node_exporter" in c]


def test_healthcheck_fails_with_31_efa_devices_on_p5(p5_context, make_sandbox):
    sb = make_sandbox(p5_context)
    first = sb.run()
    assert first.rc == 0, first.out
    sb.env["T_EFA_COUNT"] = "31"
    res = sb.run(script="steps/99-healthcheck.sh")
    assert res.rc != 0
    reason = "efa: expected 32 EFA devices for p5.48xlarge, fi_info -p efa shows 31"
    assert reason in res.out
    assert (sb.root / "var/lib/fmcluster/health").read_text() == f"unhealthy: {reason}\n"
    sb.env["T_EFA_COUNT"] = "32"
    res = sb.run(script="steps/99-healthcheck.sh")
    assert res.rc == 0, res.out
    assert (sb.root / "var/lib/fmcluster/health").read_text() == "healthy\n"


def test_healthcheck_reports_gpu_and_nvlink_problems_in_one_line(p5_context, make_sandbox):
    sb = make_sandbox(p5_context, Image(gpus=7, gpu_name="NVIDIA H200"))
    sb.set_state("nvlink-down")
    res = sb.run()
    assert res.rc != 0
    last = res.out.strip().splitlines()[-1]
    assert "99-healthcheck: gpu: expected 8 H100 GPUs for p5.48xlarge, nvidia-smi shows 7" in last
    assert "gpu: expected H100 GPUs for p5.48xlarge, found NVIDIA H200" in last
    assert "nvlink: 1 of 126 NVLinks are inactive" in last


def test_transient_download_failure_is_retried_then_succeeds(p5_context, make_sandbox):
    sb = make_sandbox(p5_context, Image(efa=False))
    sb.fail_download("aws-efa-installer-1.51.0.tar.gz", 2)
    res = sb.run(script="steps/30-efa.sh")
    assert res.rc == 0, res.out
    fetches = [c for c in res.calls if c.startswith("curl") and c.endswith("aws-efa-installer-1.51.0.tar.gz")]
    assert len(fetches) == 3
    assert calls_of(res, "sleep")[:2] == ["sleep 1", "sleep 2"]
    assert "attempt 1/5 failed" in res.log and "attempt 2/5 failed" in res.log


def test_entry_fetches_the_bundle_from_s3_and_verifies_it(p5_context, make_sandbox, tmp_path):
    sb = make_sandbox(p5_context)
    archive = shutil.make_archive(str(tmp_path / "asset"), "zip", sb.bundle)
    shutil.copy(archive, sb.path / "s3" / "asset.zip")
    entry = render.entry_script(p5_context.model_copy(update={"bundle_s3_uri": "s3://cdk-assets/asset.zip"}), sb.manifest.sums_sha256)
    user_data = sb.path / "user-data.sh"
    user_data.write_text(entry)
    res = sb.run(script="../user-data.sh")
    assert res.rc == 0, res.out
    (aws,) = calls_of(res, "aws")
    assert aws.startswith("aws s3 cp --only-show-errors s3://cdk-assets/asset.zip ")
    assert "bootstrap complete" in res.log
    fetched = sb.root / "var/lib/fmcluster/bundle" / sb.manifest.sums_sha256[:16]
    assert (fetched / "SHA256SUMS").read_text() == (sb.bundle / "SHA256SUMS").read_text()
    # a second boot reuses the verified copy
    res = sb.run(script="../user-data.sh")
    assert res.rc == 0, res.out
    assert not calls_of(res, "aws")


def test_entry_refuses_a_tampered_bundle(p5_context, make_sandbox):
    sb = make_sandbox(p5_context)
    step = sb.bundle / "steps/90-exporters.sh"
    step.write_text(step.read_text() + "\necho injected\n")
    res = sb.run()
    assert res.rc != 0
    assert "is corrupt: a file does not match SHA256SUMS" in res.out
    assert not [c for c in res.calls if not c.startswith(("sha256sum",))]


def test_wrong_os_or_instance_type_is_refused(p5_context, make_sandbox):
    sb = make_sandbox(p5_context, itype="p5en.48xlarge")
    res = sb.run()
    assert res.rc != 0
    assert "this bundle is for p5.48xlarge but the node is p5en.48xlarge" in res.out.strip().splitlines()[-1]


def test_head_node_al2023(make_sandbox):
    project = make_project("p5.48xlarge", "al2023", "parallelcluster")
    ctx = context_for(project, "gpu", "head", fsx=FSX, versions=with_optional_pins(fake_artifacts()))
    sb = make_sandbox(ctx, Image(enroot=False, pyxis=False))
    res = sb.run()
    assert res.rc == 0, res.out
    assert [s.name for s in sb.manifest.steps] == ["10-preflight", "70-lustre", "80-containers", "90-exporters", "99-healthcheck"]
    assert any(c.startswith("dnf -q -y install") and "enroot-3.4.1" in c for c in res.calls)
    assert (sb.root / "opt/slurm/etc/plugstack.conf.d/pyxis.conf").read_text() == (
        "required /usr/local/lib/slurm/spank_pyxis.so runtime_path=/run/pyxis\n")
    assert not calls_of(res, "nvidia-smi")


def test_preflight_waits_for_the_package_manager_lock(p5_context, make_sandbox):
    sb = make_sandbox(p5_context)
    (sb.path / "state/lock-held").write_text("2\n")
    res = sb.run(script="steps/10-preflight.sh")
    assert res.rc == 0, res.out
    assert res.log.count("waiting for the package manager lock") == 2
    assert calls_of(res, "sleep") == ["sleep 5", "sleep 5"]


def test_a_failing_command_names_the_step_the_command_and_the_log(p5_context, make_sandbox):
    sb = make_sandbox(p5_context)
    (sb.path / "stubs/mdadm").write_text("#!/bin/bash\necho 'mdadm: cannot open /dev/nvme1n1: Device or resource busy' >&2\nexit 1\n")
    res = sb.run()
    assert res.rc != 0
    assert "[60-nvme] FAILED: fmcluster-scratch failed: mdadm: cannot open /dev/nvme1n1" in res.out
    assert "(log: /var/log/fmcluster/bootstrap.log)" in res.out
    assert "FAILED: 60-nvme: fmcluster-scratch failed: mdadm: cannot open" in res.out.strip().splitlines()[-1]
    assert (sb.root / "var/lib/fmcluster/status").read_text().startswith("failed: 60-nvme")


def test_after_a_stop_start_the_scratch_unit_rebuilds_the_blank_instance_store(p5_context, make_sandbox):
    sb = make_sandbox(p5_context)
    assert sb.run().rc == 0
    unit = (sb.root / "etc/systemd/system/fmcluster-scratch.service").read_text()
    assert "ExecStart=/usr/local/sbin/fmcluster-scratch" in unit and "After=local-fs.target dlami-nvme.service" in unit
    assert "Before=docker.service containerd.service slurmd.service" in unit
    assert "/scratch" not in (sb.root / "etc/fstab").read_text()  # no fstab entry to fall back to the root disk
    # stop/start: the instance store comes back blank and nothing is mounted
    for name in ("raid", "xfs"):
        (sb.path / "state" / name).unlink()
    shutil.rmtree(sb.path / "state/mounted")
    res = sb.run(script="../root/usr/local/sbin/fmcluster-scratch")
    assert res.rc == 0, res.out
    assert any(c.startswith("mdadm --assemble /dev/md/fmcluster-scratch") for c in res.calls)
    assert any(c.startswith("mdadm --create /dev/md/fmcluster-scratch --level=0 --raid-devices=8") for c in res.calls)
    assert any(c.startswith("mkfs.xfs -f -L fmc-scratch") for c in res.calls)
    assert "/scratch is on /dev/md/fmcluster-scratch" in res.out
    # a reboot: the array is there and only needs assembling and mounting
    shutil.rmtree(sb.path / "state/mounted")
    res = sb.run(script="../root/usr/local/sbin/fmcluster-scratch")
    assert res.rc == 0, res.out
    assert not [c for c in res.calls if c.startswith(("mdadm --create", "mkfs.xfs"))]


def test_pyxis_builds_with_real_make_and_gcc_keeping_its_own_cppflags(make_sandbox):
    """The step's real build command against a fixture Makefile that defines its own CPPFLAGS."""
    import io
    import tarfile
    from pathlib import Path

    real = {t: shutil.which(t) for t in ("make", "gcc", "cc", "as", "ld")}
    fixture = Path(__file__).parent / "fixtures/pyxis"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in ("Makefile", "pyxis.c"):
            tar.add(fixture / name, arcname=f"pyxis-0.19.0/{name}")
    artifacts = fake_artifacts() | {"v0.19.0.tar.gz": buf.getvalue()}
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "compute",
                      versions=with_optional_pins(artifacts))
    sb = make_sandbox(ctx, Image(pyxis=False))
    sb.serve("v0.19.0.tar.gz", artifacts["v0.19.0.tar.gz"])
    (sb.path / "stubs/make").unlink()
    for tool, path in real.items():
        assert path, f"{tool} is needed (Debian: build-essential)"
        (sb.path / "safebin" / tool).symlink_to(path)
    res = sb.run(script="steps/80-containers.sh")
    assert res.rc == 0, res.out
    assert (sb.root / "usr/local/lib/slurm/spank_pyxis.so").read_bytes()[:4] == b"\x7fELF"
    # The same fixture with CPPFLAGS on the command line fails as pyxis does: the test can fail.
    src = sb.root / "var/cache/fmcluster/pyxis-0.19.0"
    bad = subprocess.run([real["make"], "-C", str(src), "-B", f"CPPFLAGS=-I{sb.root}/opt/slurm/include"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "CLONE_NEWUSER" in bad.stderr
