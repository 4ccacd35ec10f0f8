"""The Slurm exporter beside slurmctld: the node whose role runs the controller (ParallelCluster's head node,
HyperPod's controller) installs SckyzO/slurm_exporter in its exporters step, verified by sha256 from
versions.yaml, reused when the image has one at or above the pin (never downgraded), skipped with a warning while
the digest is not pinned (never an unverified download). No other node runs it."""

from __future__ import annotations

import re
import subprocess

import pytest
from fmcluster.bootstrap import context, profiles, render
from fmcluster.bootstrap.flavours import FLAVOURS
from fmcluster.generate import metrics

from fmcluster import orchestrators
from support.sandbox import (
    SHELLCHECK,
    Image,
    build_sandbox,
    calls_of,
    context_for,
    fake_artifacts,
    make_project,
    with_optional_pins,
)

HEAD_IMAGE = dict(gpus=0, efa_devices=0, nvme_drives=0, driver=False)
UNIT = "etc/systemd/system/fmcluster-slurm-exporter.service"
ARCHIVE = "slurm_exporter-1.8.4-linux-amd64.tar.gz"
ALL_COLLECTORS = {"accounts", "cpus", "nodes", "node", "drain_reason", "partitions", "queue", "scheduler", "fairshare",
                  "users", "info", "gpus", "reservations", "reservation_nodes", "licenses", "sacct_efficiency"}
"""SckyzO/slurm_exporter v1.8.4's collectors (cmd/slurm_exporter/main.go, collectorConstructors)."""


def _head(tmp_path, orchestrator: str = "parallelcluster", *, pinned: bool = True, image: Image | None = None,
          artifacts: dict[str, bytes] | None = None):
    artifacts = artifacts or fake_artifacts()
    versions = with_optional_pins(fake_artifacts()) if pinned else None
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", orchestrator), "gpu", "head", versions=versions)
    sb = build_sandbox(tmp_path / "sb", ctx, image or Image(**HEAD_IMAGE))
    for name, content in artifacts.items():
        sb.serve(name, content)
    return ctx, sb


def _exporter_downloads(res) -> list[str]:
    return [c for c in calls_of(res, "curl") if "slurm_exporter" in c]


@pytest.mark.parametrize(("orchestrator", "role", "runs"), [
    ("parallelcluster", "head", True), ("hyperpod", "head", True),
    ("parallelcluster", "compute", False), ("hyperpod", "login", False), ("hyperpod", "compute", False),
    ("pcs", "compute", False), ("none", "compute", False),
])
def test_only_the_controller_s_node_runs_it(orchestrator: str, role: str, runs: bool) -> None:
    group = "gpu"
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", orchestrator), group, role)
    assert ctx.slurm_exporter is runs
    script = render.render_files(ctx)["steps/90-exporters.sh"]
    assert ("fmcluster-slurm-exporter.service" in script) is runs


def test_the_trait_names_the_controller_s_role_and_pcs_has_none() -> None:
    assert {name: f.slurmctld_role for name, f in FLAVOURS.items()} == {
        "self-managed": None, "parallelcluster": "head", "hyperpod": "head", "pcs": None}


def test_exporters_off_means_no_slurm_exporter() -> None:
    ctx = context_for(make_project(), "gpu", "head", exporters=False)
    assert not ctx.slurm_exporter


def test_the_rendered_step_is_shellcheck_clean_pinned_and_not(tmp_path) -> None:
    for versions in (None, with_optional_pins(fake_artifacts())):
        ctx = context_for(make_project(), "gpu", "head", versions=versions)
        script = render.render_files(ctx)["steps/90-exporters.sh"]
        proc = subprocess.run([SHELLCHECK, "-s", "bash", "-x", "-"], input=script, capture_output=True, text=True,
                              check=False)
        assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize("orchestrator", ["parallelcluster", "hyperpod"])
def test_a_pinned_exporter_is_downloaded_verified_and_run_as_a_service(tmp_path, orchestrator: str) -> None:
    ctx, sb = _head(tmp_path, orchestrator)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert len(_exporter_downloads(res)) == 1
    assert "verified sha256 of slurm_exporter 1.8.4" in res.log
    binary = sb.root / "usr/local/bin/slurm_exporter"
    assert "version 1.8.4" in subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout
    unit = (sb.root / UNIT).read_text()
    assert f"--slurm.bin-path={ctx.options.slurm_prefix}/bin" in unit
    assert f"--web.listen-address=:{ctx.versions.slurm_exporter.port}" in unit
    assert "User=slurm-exporter" in unit
    # exactly the collectors whose metrics the exporter table keeps stay on (sacct_efficiency is off by default)
    off = set(re.findall(r"--no-collector\.([a-z_]+)(?= |$)", unit, re.M))
    assert ALL_COLLECTORS - off - {"sacct_efficiency"} == set(metrics.SLURM_COLLECTORS)
    assert "--no-collector.nodes.feature-set" in unit  # slurm_nodes_* by partition only, as the table says
    assert "systemctl enable fmcluster-slurm-exporter.service" in res.calls
    assert "systemctl restart fmcluster-slurm-exporter.service" in res.calls
    # a second boot finds the step done: nothing downloaded again
    again = sb.run()
    assert again.rc == 0, again.out[-3000:]
    assert not _exporter_downloads(again)


def test_an_image_s_exporter_at_or_above_the_pin_is_kept(tmp_path) -> None:
    _, sb = _head(tmp_path, image=Image(**HEAD_IMAGE, slurm_exporter="1.9.0"))
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert not _exporter_downloads(res)
    assert "slurm_exporter 1.9.0 is already installed (pinned 1.8.4); reused, not downgraded" in res.log
    assert "version 1.9.0" in (sb.root / "usr/local/bin/slurm_exporter").read_text()
    assert (sb.root / UNIT).is_file()


def test_an_older_exporter_is_upgraded_to_the_pin(tmp_path) -> None:
    _, sb = _head(tmp_path, image=Image(**HEAD_IMAGE, slurm_exporter="1.7.0"))
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert len(_exporter_downloads(res)) == 1
    assert "version 1.8.4" in (sb.root / "usr/local/bin/slurm_exporter").read_text()


def test_a_digest_mismatch_installs_nothing(tmp_path) -> None:
    tampered = fake_artifacts() | {ARCHIVE: b"not the archive that was pinned"}
    _, sb = _head(tmp_path, artifacts=tampered)
    res = sb.run()
    assert res.rc != 0
    assert "sha256 mismatch for slurm_exporter 1.8.4" in res.out
    assert not (sb.root / "usr/local/bin/slurm_exporter").exists()
    assert not (sb.root / UNIT).exists()


def test_unpinned_it_is_skipped_with_a_warning_and_never_downloaded(tmp_path) -> None:
    ctx, sb = _head(tmp_path, pinned=False)
    assert "slurm_exporter.tarball.sha256.x86_64" in context.optional_unpinned(ctx)
    assert "slurm_exporter.tarball.sha256.x86_64" not in context.needed_placeholders(ctx)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert not _exporter_downloads(res)
    assert "no Slurm metrics from this node" in res.out
    assert not (sb.root / UNIT).exists()
    assert (sb.root / "var/lib/fmcluster/slurm-exporter-skipped").is_file()
    # the rest of the step still ran: node_exporter is there
    assert (sb.root / "etc/systemd/system/fmcluster-node-exporter.service").is_file()


def test_unpinned_but_carried_by_the_image_it_is_used(tmp_path) -> None:
    _, sb = _head(tmp_path, pinned=False, image=Image(**HEAD_IMAGE, slurm_exporter="1.8.4"))
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert not _exporter_downloads(res)
    assert (sb.root / UNIT).is_file()


PROFILE_CASES = [(p.name, os_name) for p in profiles.load_profiles()
                 for os_name in [p.os] if p.flavour in ("parallelcluster", "hyperpod")]


@pytest.mark.parametrize(("profile_name", "os_name"), PROFILE_CASES, ids=[c[0] for c in PROFILE_CASES])
def test_the_controller_boots_with_the_exporter_on_each_profile_of_its_flavour(tmp_path, profile_name: str,
                                                                                 os_name: str) -> None:
    (profile,) = [p for p in profiles.load_profiles() if p.name == profile_name]
    orchestrator = orchestrators.by_flavour(profile.flavour).name
    ctx = context_for(make_project("p5.48xlarge", os_name, orchestrator), "gpu", "head",
                      versions=with_optional_pins(fake_artifacts()))
    image = Image.from_profile(profile, ctx.arch, None, gpus=0, efa_devices=0, nvme_drives=0)
    sb = build_sandbox(tmp_path / "sb", ctx, image)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert len(_exporter_downloads(res)) == 1
    assert f"--slurm.bin-path={ctx.options.slurm_prefix}/bin" in (sb.root / UNIT).read_text()
    assert "systemctl enable fmcluster-slurm-exporter.service" in res.calls
