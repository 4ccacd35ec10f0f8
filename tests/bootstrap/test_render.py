"""The context model, the renderer, the manifest and versions.yaml."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml
from fmcluster.bootstrap import context, render, versions
from support.sandbox import FSX, context_for, make_project

from fmcluster import catalog


def test_compute_context_takes_its_figures_from_the_catalog():
    for itype, entry in catalog.CATALOG.items():
        ctx = context_for(make_project(itype), "gpu", "compute")
        assert ctx.instance is not None
        assert ctx.instance.efa_devices == entry.max_efa_interfaces
        assert ctx.instance.gpus == entry.gpus
        assert ctx.arch == {"x86_64": "x86_64", "arm64": "aarch64"}[entry.architecture]
        health = render.render_files(ctx)["steps/99-healthcheck.sh"]
        assert f"expected {entry.max_efa_interfaces} EFA devices for {itype}" in health
        assert f"expected {entry.gpus} {entry.gpu_model} GPUs for {itype}" in health


def test_gb200_gets_imex_not_fabric_manager_and_finds_its_drives_at_boot():
    ctx = context_for(make_project("p6e-gb200.36xlarge"), "gpu", "compute")
    files = render.render_files(ctx)
    assert "nvidia-imex" in files["steps/20-nvidia.sh"]
    assert "install_fabric_manager" not in files["steps/20-nvidia.sh"]
    assert "EXPECTED_DRIVES" not in files["steps/60-nvme.sh"]  # unconfirmed in the catalog
    assert "/opt/amazon/ofi-nccl/lib/aarch64-linux-gnu/libnccl-net.so" in files["steps/50-nccl-env.sh"]


def test_every_plugin_layout_is_looked_for_newest_first():
    for os_name in ("al2023", "ubuntu-24.04"):
        files = context_for(make_project(os_name=os_name), "gpu", "compute").ofi_nccl_plugin_files
        assert files == ["/opt/amazon/ofi-nccl/lib64/libnccl-net-ofi.so", "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so",
                         "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net.so", "/opt/amazon/ofi-nccl/lib/libnccl-net.so"]


def test_flavour_and_defaults_follow_the_orchestrator():
    pc = context_for(make_project(orchestrator="parallelcluster"), "gpu", "compute")
    assert (pc.flavour, pc.options.containers, pc.options.slurm_prefix) == ("parallelcluster", True, "/opt/slurm")
    bare = context_for(make_project(orchestrator="none"), "gpu", "compute")
    assert (bare.flavour, bare.options.containers, bare.options.slurm_prefix) == ("self-managed", False, None)
    hp = context_for(make_project(orchestrator="none"), "gpu", "compute", "hyperpod", containers=False)
    assert (hp.flavour, hp.options.containers) == ("hyperpod", False)


def test_roles_pick_their_steps():
    project = make_project()
    compute = [s.name for s in context_for(project, "gpu", "compute", fsx=FSX).steps()]
    head_only = ("85-imex-prolog", "88-slurm-policy", "89-slurm-teams")
    head_only += ("15-kubelet-volume",)  # not a head's either: HyperPod EKS nodes with a secondary volume only
    assert compute == [s.name for s in context.STEPS if s.name not in head_only]
    # a compute node never runs the slurm-policy step, QoS partitions or not (slurmctld runs on the head)
    assert "88-slurm-policy" not in [s.name for s in context_for(project, "gpu", "compute",
                                                                 qos_partitions=("gpu",)).steps()]
    head = [s.name for s in context_for(project, None, "head").steps()]
    assert head == ["10-preflight", "80-containers", "90-exporters", "99-healthcheck"]
    head = [s.name for s in context_for(project, None, "head", exporters=False, imex_prolog=True).steps()]
    assert head == ["10-preflight", "80-containers", "85-imex-prolog", "99-healthcheck"]
    head = [s.name for s in context_for(project, None, "head", imex_prolog=True, qos_partitions=("gpu",)).steps()]
    assert head == ["10-preflight", "80-containers", "85-imex-prolog", "88-slurm-policy", "90-exporters",
                    "99-healthcheck"]
    login_arm = context_for(make_project("p6e-gb200.36xlarge"), "gpu", "login")
    assert login_arm.instance is None and login_arm.arch == "aarch64"


def test_only_the_head_writes_the_shared_plugstack_on_parallelcluster():
    project = make_project(orchestrator="parallelcluster")
    assert context_for(project, "gpu", "head").writes_plugstack
    assert not context_for(project, "gpu", "compute").writes_plugstack
    assert context_for(project, "gpu", "compute", "hyperpod").writes_plugstack


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("nope", "compute"), {}, "has no compute group 'nope'"),
        ((None, "compute"), {}, "needs a compute group name"),
        (("gpu", "compute"), {"arch": "aarch64"}, "is x86_64, not aarch64"),
        (("gpu", "compute"), {"bundle_s3_uri": "https://example.com/b.zip"}, "is not an s3:// URI"),
    ],
)
def test_context_errors_say_what_is_wrong(args, kwargs, message):
    with pytest.raises(versions.BootstrapError, match=re.escape(message)):
        context_for(make_project(), *args, **kwargs)


def test_cdk_token_is_accepted_as_bundle_uri():
    ctx = context_for(make_project(), "gpu", "compute", bundle_s3_uri="${Token[TOKEN.123]}")
    entry = render.entry_script(ctx, "0" * 64)
    assert "BUNDLE_URI='${Token[TOKEN.123]}'" in entry


@pytest.mark.parametrize(
    "bad",
    [
        {"mount_path": "/fsx; rm -rf /"},
        {"mount_name": "abc$(id)"},
        {"dns_name": "x`id`.example.com"},
        {"file_system_id": "fs-xyz"},
    ],
)
def test_fsx_mount_rejects_values_that_are_not_names(bad):
    fields = FSX.model_dump() | bad
    with pytest.raises(ValueError):
        context.FsxMount(**fields)


def test_templates_are_strict_about_undefined_names():
    env = render._environment()
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ ctx.no_such_field }}").render(ctx=context_for(make_project(), "gpu", "compute"))


def test_templates_state_no_catalog_figures():
    """Instance names, GPU models and versions reach scripts only through the context."""
    words = set(catalog.CATALOG) | {e.gpu_model for e in catalog.CATALOG.values()}
    pinned = versions.load_versions().summary().values()
    for template in render.TEMPLATES_DIR.rglob("*.j2"):
        text = template.read_text()
        for word in (*words, *pinned):
            assert not re.search(rf"(?<![\w.]){re.escape(word)}(?![\w.])", text), f"{template.name} states {word}"


def test_bundle_layout_manifest_and_sums(tmp_path: Path):
    ctx = context_for(make_project(), "gpu", "compute", fsx=FSX)
    manifest = render.render_bundle(ctx, tmp_path)
    assert json.loads((tmp_path / "manifest.json").read_text()) == manifest.model_dump()
    assert [s.file for s in manifest.steps] == sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "steps").iterdir())
    sums = (tmp_path / "SHA256SUMS").read_bytes()
    assert hashlib.sha256(sums).hexdigest() == manifest.sums_sha256
    assert f"SUMS_SHA256={manifest.sums_sha256}" in (tmp_path / "bootstrap.sh").read_text()
    proc = subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    assert manifest.entry_bytes == (tmp_path / "bootstrap.sh").stat().st_size < render.USER_DATA_LIMIT
    assert (tmp_path / "files/dcgm-counters.csv").read_text() == render.DCGM_COUNTERS_FILE.read_text()
    assert manifest.versions["efa_installer"] == "1.51.0"
    assert manifest.placeholders == []  # nothing this node needs waits on a pin
    assert "pyxis.source.sha256" in manifest.optional_unpinned  # parallelcluster: pyxis is optional
    # rendering is deterministic
    again = render.render_bundle(ctx, tmp_path / "again")
    assert again.sums_sha256 == manifest.sums_sha256


def test_dcgm_counters_file_must_exist(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(render, "DCGM_COUNTERS_FILE", tmp_path / "missing.csv")
    ctx = context_for(make_project(), "gpu", "compute")
    with pytest.raises(versions.BootstrapError, match="DCGM counters file"):
        render.render_bundle(ctx, tmp_path / "b")


def test_dcgm_counters_file_has_the_fields_the_issue_names():
    fields = {line.split(",")[0].strip() for line in render.DCGM_COUNTERS_FILE.read_text().splitlines() if line and not line.startswith("#")}
    for field in ("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
                  "DCGM_FI_DEV_THERMAL_VIOLATION", "DCGM_FI_DEV_ROW_REMAP_FAILURE"):
        assert field in fields


def test_efa_counters_collector_writes_textfile_metrics(tmp_path: Path):
    ctx = context_for(make_project(), "gpu", "compute")
    script = tmp_path / "collector"
    script.write_text(render.render_files(ctx)["files/fmcluster-efa-counters"])
    counters = tmp_path / "sys/class/infiniband/rdmap16s27/ports/1/hw_counters"
    counters.mkdir(parents=True)
    (counters / "rdma_read_bytes").write_text("42\n")
    (counters / "junk").write_text("n/a\n")
    proc = subprocess.run(["bash", str(script), "--once"], env={"FMC_ROOT": str(tmp_path), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = (tmp_path / "var/lib/fmcluster/textfile/efa.prom").read_text()
    assert 'node_amazonefa_rdma_read_bytes{device="rdmap16s27",port="1"} 42' in out
    assert '# TYPE node_amazonefa_rdma_read_bytes untyped' in out
    assert "junk" not in out


# --- versions.yaml ---------------------------------------------------------------------------


def test_versions_yaml_pins_what_facts_md_says():
    v = versions.load_versions()
    assert v.efa_installer.version == "1.51.0"
    assert v.efa_installer.bundles["aws_ofi_nccl"] == v.aws_ofi_nccl.version == "1.22.0"
    assert v.efa_installer.tarball.gpg_fingerprint == "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC"
    assert v.nvidia_driver.version == v.fabric_manager.version == "580.105.08"
    assert v.node_exporter.version == "1.9.1"
    assert (v.enroot.version, v.pyxis.version) == ("3.4.1", "0.19.0")
    assert v.node_exporter.port == 9100 and v.dcgm_exporter.port == 9400


def test_no_pin_a_node_needs_is_missing_and_only_optional_components_are_unpinned():
    v = versions.load_versions()
    assert v.placeholders() == []
    unpinned = v.unpinned()
    assert "gdrcopy.source.sha256" in unpinned and "pyxis.source.sha256" in unpinned
    assert {k.split(".")[0] for k in unpinned} <= set(versions.Versions.OPTIONAL)
    assert v.nvidia_repo.keys["ubuntu"].fingerprint == "EB693B3035CD5710E231E123A4B469963BF863CC"
    assert v.nvidia_repo.keys["al2023"].fingerprint == "610C7B14E068A878070DA4E99CD0A493D42D0685"
    assert v.nvidia_repo.repo_url("ubuntu-24.04", "aarch64") == "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/sbsa"


def _versions_data() -> dict:
    return yaml.safe_load(versions.VERSIONS_FILE.read_text())


def test_fabric_manager_must_match_the_driver(tmp_path: Path):
    data = _versions_data()
    data["fabric_manager"]["version"] = "580.95.05"
    path = tmp_path / "v.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(versions.BootstrapError, match="must equal nvidia_driver.version"):
        versions.load_versions(path)


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        (("gdrcopy", "source", "sha256"), "abc", "not a sha256"),
        (("efa_installer", "tarball", "gpg_fingerprint"), "4E90 91BC", "not a GPG fingerprint"),
        (("nvidia_repo", "keys", "ubuntu", "fingerprint"), "EB69 3B30", "not a GPG fingerprint"),
        (("nvidia_driver", "packages", "ubuntu"), ["nvidia driver"], "not a package name"),
        (("nvidia_driver", "packages", "ubuntu"), ["nvidia-open|nvidia driver"], "not a package name"),
        (("fabric_manager", "packages", "al2023"), ["nvidia-fabricmanager|nvidia-fabricmanager-{branch}"],
         "alternatives .* only on ubuntu"),
    ],
)
def test_versions_yaml_rejects_malformed_pins(tmp_path: Path, where, value, message):
    data = _versions_data()
    node = data
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    path = tmp_path / "v.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(versions.BootstrapError, match=message):
        versions.load_versions(path)


def test_scratch_follows_the_storage_section() -> None:
    from support.sandbox import make_project

    project = make_project("p5.48xlarge", "ubuntu-22.04", "none")
    on = context_for(project, "gpu", "compute")
    assert "60-nvme" in [s.name for s in on.steps()] and on.options.scratch_path == "/scratch"
    moved = project.model_copy(update={"storage": project.storage.model_copy(update={
        "scratch": project.storage.scratch.model_copy(update={"mount_path": "/nvme"})})})
    assert context_for(moved, "gpu", "compute").options.scratch_path == "/nvme"
    off = project.model_copy(update={"storage": project.storage.model_copy(update={
        "scratch": project.storage.scratch.model_copy(update={"enabled": False})})})
    assert "60-nvme" not in [s.name for s in context_for(off, "gpu", "compute").steps()]
