"""The real tools where Debian ships them (CI installs them: gnupg, systemd; see .ci/run).

* gpg: the EFA step verifies a detached signature with the real gpg against a throw-away key
  made here (the pinned fingerprint swapped for the throw-away one: AWS's private key is not ours);
  a tampered tarball and a signature by another key are refused. gpg runs with --no-autostart:
  importing a key starts a gpg-agent otherwise, which fails where the temporary home's socket
  path is too long (as under pytest-xdist here) and is left running where it starts.
* systemd-analyze verify: every unit and drop-in a booted bundle wrote under /etc/systemd/system,
  with the host's own units beside them (targets) and the package's dcgm-exporter unit stood in.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from fmcluster.bootstrap import versions
from support.sandbox import (
    FSX,
    Image,
    build_sandbox,
    calls_of,
    context_for,
    make_project,
)

TARBALL = "aws-efa-installer-1.51.0.tar.gz"


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is needed (Debian: {'gnupg' if name.startswith('gpg') else 'systemd'}; .ci/run installs it)"
    return path


def _gpg(home: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([_tool("gpg"), "--batch", "--homedir", str(home), *args],
                          capture_output=True, check=True, timeout=60, **kw)


def _throwaway_key(home: Path, name: str) -> str:
    home.mkdir(mode=0o700)
    _gpg(home, "--passphrase", "", "--quick-gen-key", f"{name} <{name}@example.invalid>", "ed25519", "sign", "never")
    out = _gpg(home, "--with-colons", "--list-keys").stdout.decode()
    return next(line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:"))


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    base = tmp_path_factory.mktemp("gpg")
    made = {name: (base / name, _throwaway_key(base / name, name)) for name in ("signer", "stranger")}
    yield made
    for home, _ in made.values():
        subprocess.run([_tool("gpgconf"), "--homedir", str(home), "--kill", "all"], capture_output=True)


def _agents_under(path: Path) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "gpg-agent" in cmd and str(path) in cmd:
                found.append(cmd)
    return found


def _efa_sandbox(tmp_path: Path, keys, signed_by: str, tamper: bool = False):
    signer_home, signer_fpr = keys["signer"]
    data = yaml.safe_load(versions.VERSIONS_FILE.read_text())
    data["efa_installer"]["tarball"]["gpg_fingerprint"] = signer_fpr
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "none"), "gpu", "compute",
                      versions=versions.Versions.model_validate(data))
    sb = build_sandbox(tmp_path / "sb", ctx, Image(efa=False))
    tarball = sb.path / "files" / TARBALL
    sig = sb.path / "files" / f"{TARBALL}.sig"
    home, _ = keys[signed_by]
    _gpg(home, "--yes", "--detach-sign", "-o", str(sig), str(tarball))
    (sb.path / "files/aws-efa-installer.key").write_bytes(_gpg(signer_home, "--armor", "--export").stdout)
    if tamper:
        tarball.write_bytes(tarball.read_bytes() + b"\0")
    for tool in ("gpg", "gpgconf"):
        (sb.path / "stubs" / tool).unlink()
        (sb.path / "safebin" / tool).symlink_to(_tool(tool))
    return sb, signer_fpr


def test_real_gpg_accepts_the_pinned_signer(tmp_path, keys):
    sb, fpr = _efa_sandbox(tmp_path, keys, "signer")
    res = sb.run(script="steps/30-efa.sh")
    assert res.rc == 0, res.out
    assert f"verified GPG signature of EFA installer 1.51.0 (key {fpr})" in res.log
    assert calls_of(res, "efa_installer.sh")
    assert _agents_under(sb.path) == []


@pytest.mark.parametrize("signed_by, tamper", [("stranger", False), ("signer", True)], ids=["other-key", "tampered"])
def test_real_gpg_refuses_a_bad_signature(tmp_path, keys, signed_by, tamper):
    sb, fpr = _efa_sandbox(tmp_path, keys, signed_by, tamper)
    res = sb.run(script="steps/30-efa.sh")
    assert res.rc != 0
    assert f"GPG signature of EFA installer 1.51.0 is not valid for key {fpr}" in res.out
    assert not calls_of(res, "efa_installer.sh")
    assert not (sb.root / "var/cache/fmcluster" / TARBALL).exists()
    assert _agents_under(sb.path) == []


UNIT_CASES = {
    "p5-parallelcluster-ubuntu": ("p5.48xlarge", "ubuntu-24.04", "parallelcluster"),
    "gb200-self-managed-al2023": ("p6e-gb200.36xlarge", "al2023", "none"),
}


@pytest.mark.parametrize("case", UNIT_CASES)
def test_every_installed_unit_passes_systemd_analyze_verify(tmp_path, case):
    itype, os_name, orchestrator = UNIT_CASES[case]
    ctx = context_for(make_project(itype, os_name, orchestrator), "gpu", "compute", fsx=FSX)
    i = ctx.instance
    sb = build_sandbox(tmp_path / "sb", ctx, Image(gpus=i.gpus, efa_devices=i.efa_devices,
                                                   gpu_name="NVIDIA GB200" if i.needs_imex else "NVIDIA H100 80GB HBM3"))
    (sb.path / "state/members").write_text("10.0.0.5\n")
    res = sb.run()
    assert res.rc == 0, res.out[-2000:]
    root = sb.root
    units_dir = root / "etc/systemd/system"
    units = sorted(p.name for p in units_dir.iterdir() if p.suffix in (".service", ".timer", ".mount", ".path"))
    dropins = sorted(p.name[: -len(".d")] for p in units_dir.iterdir() if p.is_dir() and p.name.endswith(".d"))
    expected = {"fmcluster-scratch.service", "fmcluster-node-exporter.service", "fmcluster-lnet-efa.service"}
    if i.needs_imex:
        expected |= {"fmcluster-imex.service", "fmcluster-imex.timer"}
    assert expected <= set(units), units
    assert dropins == [versions.load_versions().dcgm_exporter.service]
    # The host's targets and units, and the packaged dcgm-exporter unit the drop-in amends.
    shutil.copytree("/usr/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True, dirs_exist_ok=True)
    (root / "usr/bin").mkdir(parents=True, exist_ok=True)
    (root / "usr/bin/dcgm-exporter").write_text("#!/bin/sh\n")
    (root / "usr/bin/dcgm-exporter").chmod(0o755)
    shutil.copy(_tool("systemd-tmpfiles"), root / "usr/bin/systemd-tmpfiles")  # the node's own (systemd)
    for name in dropins:
        (root / "usr/lib/systemd/system" / name).write_text(
            "[Unit]\nDescription=stand-in for the packaged unit\n[Service]\nExecStart=/usr/bin/dcgm-exporter\n")
    proc = subprocess.run([_tool("systemd-analyze"), f"--root={root}", "verify",
                           *[str(units_dir / u) for u in units], *dropins],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "SYSTEMD_LOG_COLOR": "0"})
    assert proc.returncode == 0 and not (proc.stdout + proc.stderr).strip(), proc.stdout + proc.stderr
