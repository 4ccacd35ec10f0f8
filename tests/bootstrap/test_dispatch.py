"""The dispatcher: one OnNodeConfigured script for queues that mix instance types."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from fmcluster.bootstrap import render, versions
from support.sandbox import SHELLCHECK


def _archive(tmp_path: Path, bundles: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """Fake bundles (an entry that prints its instance type) zipped like the CDK asset."""
    sums = {}
    src = tmp_path / "src"
    for itype, marker in bundles.items():
        folder = src / itype
        folder.mkdir(parents=True)
        (folder / render.ENTRY_NAME).write_text(f"#!/bin/bash\necho ran {marker}\n")
        (folder / "SHA256SUMS").write_text(f"bundle of {itype}\n")
        sums[itype] = hashlib.sha256((folder / "SHA256SUMS").read_bytes()).hexdigest()
    archive = tmp_path / "bundles.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in src.rglob("*"):
            zf.write(path, path.relative_to(src))
    return archive, sums


def _run(tmp_path: Path, script: str, archive: Path, itype: str) -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    aws = bin_dir / "aws"  # `aws s3 cp --only-show-errors SRC DST`: copy from the local archive
    aws.write_text(f'#!/bin/bash\ncp {archive} "${{@: -1}}"\n')
    aws.chmod(0o755)
    (bin_dir / "python3").unlink(missing_ok=True)
    (bin_dir / "python3").symlink_to(shutil.which("python3") or "/usr/bin/python3")
    path = tmp_path / "dispatch.sh"
    path.write_text(script)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FMC_ROOT": str(tmp_path / "root"),
           "FMC_INSTANCE_TYPE": itype}
    return subprocess.run(["bash", str(path), "s3://bucket/bundles.zip"], env=env, capture_output=True, text=True)


def test_runs_the_bundle_of_this_instance_type(tmp_path: Path) -> None:
    archive, sums = _archive(tmp_path, {"p5.48xlarge": "p5", "p6-b200.48xlarge": "b200"})
    script = render.dispatcher_script("demo", sums)
    result = _run(tmp_path, script, archive, "p6-b200.48xlarge")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ran b200"
    checked = subprocess.run([SHELLCHECK, "-s", "bash", "-"], input=script, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout


def test_refuses_an_unknown_type_and_a_tampered_bundle(tmp_path: Path) -> None:
    archive, sums = _archive(tmp_path, {"p5.48xlarge": "p5"})
    result = _run(tmp_path, render.dispatcher_script("demo", sums), archive, "p4d.24xlarge")
    assert result.returncode == 1 and "no bootstrap bundle for instance type p4d.24xlarge" in result.stderr
    wrong = {"p5.48xlarge": "0" * 64}
    result = _run(tmp_path / "x" if (tmp_path / "x").mkdir() is None else tmp_path, render.dispatcher_script("demo", wrong),
                  archive, "p5.48xlarge")
    assert result.returncode == 1 and "not the one rendered" in result.stderr


def test_rejects_bad_entries() -> None:
    with pytest.raises(versions.BootstrapError):
        render.dispatcher_script("demo", {"p5.48xlarge; rm -rf /": "0" * 64})


def test_with_metrics_it_needs_the_remote_write_url(tmp_path: Path) -> None:
    """The head node's OnNodeUpdated digest is its dispatcher's: metrics turned on or off changes the dispatcher,
    so ParallelCluster re-runs the head node's bundle, whose agent then starts (or not)."""
    archive, sums = _archive(tmp_path, {"p5.48xlarge": "p5"})
    script = render.dispatcher_script("demo", sums, metrics=True)
    assert script != render.dispatcher_script("demo", sums)
    checked = subprocess.run([SHELLCHECK, "-s", "bash", "-"], input=script, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout
    result = _run(tmp_path, script, archive, "p5.48xlarge")
    assert result.returncode == 1 and "no remote-write URL came" in result.stderr
