"""A file system created in the same deployment: its identity reaches the node through user data."""

from __future__ import annotations

import subprocess

import pytest
from fmcluster.bootstrap import context, render, versions
from support.sandbox import (
    SHELLCHECK,
    Image,
    context_for,
    make_project,
)

AT_BOOT = context.FsxMount(mount_path="/fsx", efa_enabled=False)
BOOT_ENV = {"FMC_FSX_ID": "fs-0fedcba9876543210", "FMC_FSX_DNS": "fs-0fedcba9876543210.fsx.us-east-1.amazonaws.com",
            "FMC_FSX_MOUNT_NAME": "zyxwvuts"}


@pytest.fixture
def at_boot_context() -> context.BootstrapContext:
    project = make_project("p5.48xlarge", "ubuntu-22.04", "none")
    return context_for(project, "gpu", "compute", fsx=AT_BOOT)


def test_user_data_exports_the_identity_and_passes_shellcheck(at_boot_context, tmp_path) -> None:
    manifest = render.render_bundle(at_boot_context, tmp_path / "bundle")
    entry = render.entry_script(at_boot_context.model_copy(update={"bundle_s3_uri": "s3://b/k.zip"}),
                                manifest.sums_sha256, BOOT_ENV)
    for key, value in BOOT_ENV.items():
        assert f'export {key}="{value}"' in entry
    script = tmp_path / "user-data.sh"
    script.write_text(entry)
    checked = subprocess.run([SHELLCHECK, "-s", "bash", str(script), str(tmp_path / "bundle" / "steps" / "70-lustre.sh")],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout


def test_user_data_without_the_identity_is_refused(at_boot_context, tmp_path) -> None:
    manifest = render.render_bundle(at_boot_context, tmp_path / "bundle")
    with pytest.raises(versions.BootstrapError, match="FMC_FSX_ID"):
        render.entry_script(at_boot_context, manifest.sums_sha256, {})
    with pytest.raises(versions.BootstrapError, match="plain IDs"):
        render.entry_script(at_boot_context, manifest.sums_sha256, {**BOOT_ENV, "FMC_FSX_ID": "fs-1; rm -rf /"})


def test_the_node_mounts_what_the_environment_names(at_boot_context, make_sandbox) -> None:
    sb = make_sandbox(at_boot_context, Image())
    sb.env.update(BOOT_ENV)
    res = sb.run()
    assert res.rc == 0, res.out
    assert any(c.startswith("mount -t lustre -o relatime,flock fs-0fedcba9876543210.fsx.us-east-1.amazonaws.com@tcp:/zyxwvuts")
               for c in res.calls), res.calls


def test_without_the_environment_the_lustre_step_says_why(at_boot_context, make_sandbox) -> None:
    sb = make_sandbox(at_boot_context, Image())
    res = sb.run()
    assert res.rc != 0
    assert "FMC_FSX_ID" in res.out
