"""FSx for Lustre: the fstab line comes back after a reboot on every OS (systemd's own fstab generator and
`systemd-analyze verify` on the units it makes: the line used to require network.service, which neither Ubuntu nor
AL2023 has), and a repository without the running kernel's module says what to do."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fmcluster.bootstrap import context
from support.sandbox import FSX, Image, build_sandbox, context_for, make_project

GENERATOR = Path("/usr/lib/systemd/system-generators/systemd-fstab-generator")


def _tool(path: str) -> str:
    found = shutil.which(path) or (path if Path(path).exists() else None)
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{path} not found: CI installs systemd (.ci/run)", pytrace=False)
        pytest.skip(f"{path} not found (Debian package systemd)")
    return found


def _fstab_line(tmp_path: Path, os_name: str) -> str:
    ctx = context_for(make_project("p5.48xlarge", os_name, "none"), "gpu", "compute", fsx=FSX)
    sb = build_sandbox(tmp_path / "sb", ctx, Image())
    res = sb.run()
    assert res.rc == 0, res.out[-2000:]
    (line,) = [ln for ln in (sb.root / "etc/fstab").read_text().splitlines() if " lustre " in ln]
    return line


@pytest.mark.parametrize("os_name", context.OPERATING_SYSTEMS)
def test_the_fstab_line_makes_units_systemd_accepts(tmp_path, os_name):
    line = _fstab_line(tmp_path, os_name)
    assert "network.service" not in line and "_netdev" in line and "x-systemd.automount" in line
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/fstab").write_text(line + "\n")
    out = root / "run/systemd/generator"
    out.mkdir(parents=True)
    gen = subprocess.run([_tool(str(GENERATOR)), str(out), str(out), str(out)], capture_output=True, text=True,
                         env={**os.environ, "SYSTEMD_FSTAB": str(root / "etc/fstab"), "SYSTEMD_LOG_LEVEL": "err"},
                         timeout=60)
    assert gen.returncode == 0, gen.stderr
    mount_path = FSX.mount_path.strip("/").replace("/", "-")
    units = [out / f"{mount_path}.mount", out / f"{mount_path}.automount"]
    assert all(u.is_file() for u in units), sorted(p.name for p in out.iterdir())
    assert "Requires=network-online.target" in units[0].read_text()
    # the host's units (targets) beside them, as a node has its distribution's
    shutil.copytree("/usr/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True)
    (root / "etc/systemd/system").mkdir(parents=True)
    for u in units:
        shutil.copy(u, root / "etc/systemd/system" / u.name)
    proc = subprocess.run([_tool("systemd-analyze"), f"--root={root}", "verify",
                           *[str(root / "etc/systemd/system" / u.name) for u in units]],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "SYSTEMD_LOG_COLOR": "0"})
    problems = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "SourcePath=" not in ln]
    assert proc.returncode == 0 and not problems, proc.stdout + proc.stderr


def test_a_repository_without_the_running_kernel_s_module_says_what_to_do(tmp_path):
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "none"), "gpu", "compute", fsx=FSX)
    sb = build_sandbox(tmp_path / "sb", ctx, Image(lustre=False))
    (sb.path / "state/apt-has-lustre-client-modules-6.8.0-1024-aws").unlink()  # uname -r is not covered
    (sb.path / "state/apt-pkgnames").write_text("".join(f"lustre-client-modules-{k}\n" for k in (
        "6.8.0-1021-aws", "6.8.0-1022-aws", "6.8.0-1023-aws", "6.5.0-1020-aws", "6.8.0-1023-generic", "aws")))
    res = sb.run()
    assert res.rc != 0
    assert "has no lustre-client-modules-6.8.0-1024-aws" in res.out
    assert "this node runs 6.8.0-1024-aws" in res.out
    assert "K among: 6.8.0-1021-aws 6.8.0-1022-aws 6.8.0-1023-aws)" in res.out  # the newest it covers, same flavour
    assert "apt-get install linux-image-K linux-headers-K, reboot" in res.out
