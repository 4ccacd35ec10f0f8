"""The EFA step's installer invocation (issue 11, defect 8): one Open MPI, package signatures
checked against the key whose fingerprint the step pinned, and the reboot the installer asks for.

The installer is a fake served in place of the real tarball (the stubbed gpg accepts it): it records
its arguments and the EFA_INSTALLER_KEY it was given, and prints what efa_installer.sh prints when
it needs a reboot (its NEED_REBOOT path: "Reboot is needed!" then "Please reboot to complete the
installation."; exit status 0). A reboot is a new /proc/sys/kernel/random/boot_id.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from support.sandbox import (
    Image,
    _targz,
    build_sandbox,
    calls_of,
    context_for,
    make_project,
)

TARBALL = "aws-efa-installer-1.51.0.tar.gz"

FAKE = r"""#!/bin/bash
echo "efa_installer.sh $*" >>"${SANDBOX}/calls.log"
echo "EFA_INSTALLER_KEY=${EFA_INSTALLER_KEY:-}" >>"${SANDBOX}/installer.env"
mkdir -p "${FMC_ROOT}/opt/amazon"
printf '# EFA installer version: 1.51.0\n' >"${FMC_ROOT}/opt/amazon/efa_installed_packages"
cp "${SANDBOX}/pending/fi_info" "${SANDBOX}/dynbin/fi_info"
if [[ -e "${SANDBOX}/state/efa-needs-reboot" ]]; then
  echo "Failed to unload EFA kernel module."
  echo "Reboot is needed!" >&2
  action=reboot
else
  action=logout/login
fi
echo "EFA installation complete."
echo "- Please ${action} to complete the installation."
"""


def _sandbox(tmp_path, orchestrator: str = "none", needs_reboot: bool = False):
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", orchestrator), "gpu", "compute")
    sb = build_sandbox(tmp_path / "sb", ctx, Image(efa=False))
    sb.serve(TARBALL, _targz({"aws-efa-installer/efa_installer.sh": (FAKE, 0o755)}))
    (sb.root / "proc/sys/kernel/random").mkdir(parents=True)
    _boot(sb, "boot-1")
    if needs_reboot:
        sb.set_state("efa-needs-reboot")
    return sb


def _boot(sb, boot_id: str) -> None:
    (sb.root / "proc/sys/kernel/random/boot_id").write_text(boot_id + "\n")


def test_one_open_mpi_and_package_signatures_against_the_pinned_key(tmp_path):
    sb = _sandbox(tmp_path)
    res = sb.run(script="steps/30-efa.sh")
    assert res.rc == 0, res.out
    assert calls_of(res, "efa_installer.sh") == ["efa_installer.sh -y --mpi=openmpi5 --check-signatures"]
    # The key the installer checks packages with is the file the tarball's signature was verified with.
    key = sb.root / "var/cache/fmcluster" / f"{TARBALL}.key"
    assert (sb.path / "installer.env").read_text() == f"EFA_INSTALLER_KEY={key}\n"
    assert key.read_bytes() == (sb.path / "files/aws-efa-installer.key").read_bytes()
    assert not calls_of(res, "systemctl reboot")
    assert "Please logout/login to complete the installation." in res.log  # its output is kept in the log


def test_an_installer_that_fails_stops_the_step_with_its_status(tmp_path):
    sb = _sandbox(tmp_path)
    sb.serve(TARBALL, _targz({"aws-efa-installer/efa_installer.sh": (
        "#!/bin/bash\necho 'Error: signature verification failed for libfabric-aws.deb' >&2\nexit 3\n", 0o755)}))
    res = sb.run(script="steps/30-efa.sh")
    assert res.rc != 0
    assert "the EFA installer 1.51.0 exited 3" in res.out
    assert "signature verification failed for libfabric-aws.deb" in res.log
    assert not (sb.root / "var/lib/fmcluster/markers/30-efa").exists()


def test_self_managed_reboots_when_asked_and_resumes_after_the_reboot(tmp_path):
    sb = _sandbox(tmp_path, needs_reboot=True)
    sb.env["FMC_FSX_ID"] = "fs-0123456789abcdef0"
    res = sb.run(script="steps/30-efa.sh")
    assert res.rc != 0  # the entry script stops here; the node is going down
    assert calls_of(res, "systemctl reboot") == ["systemctl reboot"]
    assert "systemctl enable fmcluster-resume.service" in res.calls
    assert "asks for a reboot" in (sb.root / "var/lib/fmcluster/last-error").read_text()
    unit = (sb.root / "etc/systemd/system/fmcluster-resume.service").read_text()
    assert f"ExecStart=/bin/bash {sb.bundle}/bootstrap.sh" in unit
    assert "ConditionPathExists=/var/lib/fmcluster/efa-reboot-pending" in unit
    assert (sb.root / "var/lib/fmcluster/resume.env").read_text() == "FMC_FSX_ID=fs-0123456789abcdef0\n"

    # Run again in the same boot (the reboot has not happened): no second install, a reboot again.
    res = sb.run(script="steps/30-efa.sh")
    assert res.rc != 0
    assert not calls_of(res, "efa_installer.sh")
    assert calls_of(res, "systemctl reboot") == ["systemctl reboot"]

    # After the reboot the step is done without installing again, and the resume unit is retired.
    _boot(sb, "boot-2")
    res = sb.run(script="steps/30-efa.sh")
    assert res.rc == 0, res.out
    assert not calls_of(res, "efa_installer.sh")
    assert not calls_of(res, "systemctl reboot")
    assert "systemctl disable fmcluster-resume.service" in res.calls
    assert not (sb.root / "var/lib/fmcluster/efa-reboot-pending").exists()
    assert (sb.root / "var/lib/fmcluster/markers/30-efa").read_text() == "efa-installer=1.51.0\n"


@pytest.mark.parametrize("orchestrator", ["parallelcluster", "hyperpod"])
def test_under_a_scheduler_the_step_stops_with_the_reason_and_does_not_reboot(tmp_path, orchestrator):
    sb = _sandbox(tmp_path, orchestrator=orchestrator, needs_reboot=True)
    res = sb.run(script="steps/30-efa.sh")
    assert res.rc != 0
    assert not calls_of(res, "systemctl reboot")
    assert "asks for a reboot" in res.out and "does not reboot the node itself" in res.out
    assert not (sb.root / "etc/systemd/system/fmcluster-resume.service").exists()
    _boot(sb, "boot-2")  # an operator rebooted it
    res = sb.run(script="steps/30-efa.sh")
    assert res.rc == 0, res.out
    assert not calls_of(res, "efa_installer.sh")


def test_the_resume_unit_passes_systemd_analyze_verify(tmp_path):
    tool = shutil.which("systemd-analyze")
    assert tool, "systemd-analyze is needed (Debian: systemd; .ci/run installs it)"
    sb = _sandbox(tmp_path, needs_reboot=True)
    sb.run(script="steps/30-efa.sh")
    root = sb.root
    shutil.copytree("/usr/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True, dirs_exist_ok=True)
    (root / "bin").mkdir(exist_ok=True)
    shutil.copy("/bin/bash", root / "bin/bash")
    unit = root / "etc/systemd/system/fmcluster-resume.service"
    proc = subprocess.run([tool, f"--root={root}", "verify", str(unit)], check=False, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "SYSTEMD_LOG_COLOR": "0"})
    assert proc.returncode == 0 and not (proc.stdout + proc.stderr).strip(), proc.stdout + proc.stderr
