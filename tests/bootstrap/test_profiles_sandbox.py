"""Every bundle fmcluster renders (every example and shipped project, also on AL2023 and Ubuntu 24.04), one per
shape (:func:`_shape`), boots in the sandbox on every image profile of its flavour (each unconfirmed fact both ways)
and on the bare OS.

The stubs behave like the real tools (tests/support/sandbox.py): apt refuses a downgrade and a second
source for NVIDIA's CUDA repository, systemctl refuses a unit that does not exist. So a green boot here
means: nothing downgraded, no duplicate source, no unit enabled that the image lacks."""

from __future__ import annotations

from pathlib import Path

import pytest
from fmcluster.bootstrap import context, profiles
from fmcluster.flavours import FLAVOURS as FLAVOUR_TRAITS
from fmcluster.bootstrap.versions import BootstrapError
from support import PROJECTS
from support.sandbox import FSX, Image, build_sandbox, calls_of

from fmcluster import config
from fmcluster.bootstrap.hyperpod_eks import eks_lifecycle_contexts
from fmcluster.generate.hyperpod import instance_groups
from fmcluster.plan import make_plan

FIXTURE_PROJECTS = {
    (loaded := config.parse(p.read_text(), p)).project.name: loaded.project
    for p in sorted((Path(__file__).parent / "fixtures" / "projects").glob("pcs-*.yaml"))
}
"""PCS projects beside the examples: a GB200 one, so PCS bundles boot on the arm64 sections of the pcs profiles."""

GPU_NAME = {"A100 40GB": "NVIDIA A100-SXM4-40GB", "GB200": "NVIDIA GB200"}


def _shape(ctx: context.BootstrapContext) -> tuple:
    """What decides how a bundle boots on an image: flavour, OS, architecture, role, its steps, and the instance facts
    that change what the steps do (NVSwitch, IMEX, NVLSM, whether the NVMe count is known). Instance types that
    differ only in counts and names (p4d, p5, p5e, p5en; p6-b200, p6-b300) boot the same way on a profile; every
    instance type still boots, on an image without the driver, in test_matrix_sandbox."""
    i = ctx.instance
    facts = None if i is None else (i.nvswitch, i.needs_imex, ctx.needs_nvlsm, i.local_nvme_drives is None)
    return (ctx.flavour, ctx.os, ctx.arch, ctx.role, tuple(step.name for step in ctx.steps()), facts,
            ctx.instance.instance_type if ctx.traits.image_gpu_stack and ctx.instance else None)


def _bundles() -> dict[str, context.BootstrapContext]:
    """One context per distinct bundle shape (:func:`_shape`) of every project, on every OS."""
    out: dict[str, context.BootstrapContext] = {}
    shapes: set[tuple] = set()
    for name, project in sorted((FIXTURE_PROJECTS | PROJECTS).items()):
        for os_name in context.OPERATING_SYSTEMS:
            cluster = make_plan(project.model_copy(update={"os": os_name})).cluster
            flavour = context.ORCHESTRATOR_FLAVOUR[cluster.orchestrator]
            if os_name not in (FLAVOUR_TRAITS[flavour].operating_systems or (os_name,)):
                continue  # no image of that flavour for that OS (validate refuses the project)
            if flavour == "hyperpod-eks":  # every instance group's own context (the system group, the data volume)
                for group, ctx in eks_lifecycle_contexts(cluster).items():
                    key = f"{flavour}-{os_name}-{group}-{ctx.role}"
                    if _shape(ctx) not in shapes:
                        shapes.add(_shape(ctx))
                        out[key] = ctx
                continue
            if flavour == "hyperpod":
                roles = [(g.compute_group, g.role, g.instance_type) for g in instance_groups(cluster)]
            else:
                roles = [(g.name, "compute", g.instance_type) for g in cluster.groups]
            for group, role, itype in roles:
                key = f"{flavour}-{os_name}-{itype}-{role}"
                if key not in out:
                    fsx = FSX if context.bundle_mounts_fsx(flavour) else None
                    ctx = context.context_for(cluster, group, role, flavour, fsx=fsx)
                    if _shape(ctx) not in shapes:
                        shapes.add(_shape(ctx))
                        out[key] = ctx
    return out


BUNDLES = _bundles()
CASES = [
    (key, label, profile.name if profile else "bare", present)
    for key, ctx in BUNDLES.items()
    for profile in [*profiles.profiles_for(ctx.flavour, ctx.os, ctx.arch), None]
    for label, present in (profile.variants(ctx.arch) if profile else [("bare-os", None)])
]


def _image(ctx: context.BootstrapContext, profile_name: str, present: dict[str, bool] | None) -> Image:
    hw = {}
    if ctx.instance is not None:
        i = ctx.instance
        hw = dict(gpus=i.gpus, gpu_name=GPU_NAME.get(i.gpu_model, f"NVIDIA {i.gpu_model}"), efa_devices=i.efa_devices,
                  nvme_drives=i.local_nvme_drives or 4)
    if profile_name == "bare":
        return Image(driver=False, fabric_manager=False, efa=False, gdrcopy=False, lustre=False, enroot=False,
                     pyxis=False, dcgm_exporter=False, imex=False, units=(), profile="bare",
                     **hw)
    (profile,) = [p for p in profiles.load_profiles() if p.name == profile_name]
    return Image.from_profile(profile, ctx.arch, present, **hw)


def _unpaired_dcgm(ctx: context.BootstrapContext, profile_name: str, present: dict[str, bool] | None) -> str | None:
    """The image's DCGM where the bundle must pair an exporter with it and no release is known for it."""
    if profile_name == "bare" or not (ctx.gpu and ctx.options.exporters) or present is None:
        return None
    if present.get("dcgm_exporter") or not present.get("dcgm"):
        return None
    (profile,) = [p for p in profiles.load_profiles() if p.name == profile_name]
    version = profile.arches[ctx.arch].components.dcgm.version or "4.4.2"  # the sandbox's default (Image.from_profile)
    pin = ctx.versions.dcgm.version
    have = tuple(int(x) for x in version.split("."))
    if have < tuple(int(x) for x in pin.split(".")):
        return None  # older than the pin: upgraded to the pin, whose exporter is known
    return None if version in ctx.versions.dcgm_exporter.builds else version


def test_every_flavour_os_and_arch_fmcluster_deploys_has_its_profile():
    for flavour in ("self-managed", "parallelcluster"):
        for os_name in context.OPERATING_SYSTEMS:
            for arch in context.ARCHES:
                assert profiles.profiles_for(flavour, os_name, arch), (flavour, os_name, arch)
    for arch in context.ARCHES:
        assert profiles.profiles_for("hyperpod", "ubuntu-22.04", arch)
        # HyperPod's EKS AMI: AL2023 only (its releases; no AL2 AMI for Kubernetes 1.33)
        assert profiles.profiles_for("hyperpod-eks", "al2023", arch)
        assert not [p for p in profiles.load_profiles() if p.flavour == "hyperpod-eks" and p.os != "al2023"]
        # AWS's dlami_for_pcs_imagebuilder recipe builds AL2023 and Ubuntu 24.04, x86_64 and arm64
        for os_name in ("al2023", "ubuntu-24.04"):
            assert profiles.profiles_for("pcs", os_name, arch), ("pcs", os_name, arch)


def test_pcs_is_booted_on_each_of_its_profiles_and_the_bare_os():
    booted = {(BUNDLES[key].flavour, profile, BUNDLES[key].arch) for key, _, profile, _ in CASES}
    for arch in context.ARCHES:  # x86_64 from the p5 fixture, aarch64 from the GB200 one
        assert {("pcs", "pcs-al2023", arch), ("pcs", "pcs-ubuntu-24.04", arch), ("pcs", "bare", arch)} <= booted


def test_pcs_profiles_put_slurm_where_aws_recipe_does_and_say_it_runs_configless():
    for p in profiles.load_profiles():
        if p.flavour != "pcs":
            continue
        for arch, ap in p.arches.items():
            slurm = ap.components.slurm
            assert slurm.present and slurm.configless, (p.name, arch)
            assert slurm.prefix == FLAVOUR_TRAITS["pcs"].slurm_prefix, (p.name, arch)
            assert slurm.plugstack is None, "configless slurmd ignores a node-local plugstack.conf"
            assert not ap.components.pyxis.present and "dlami_for_pcs_imagebuilder" in ap.components.pyxis.source


def test_a_fact_without_a_source_is_refused_naming_the_file(tmp_path):
    text = (profiles.PROFILES_DIR / "parallelcluster-ubuntu-22.04.yaml").read_text()
    (tmp_path / "bad.yaml").write_text(text.replace("unconfirmed: true", "unconfirmed: false", 1))
    with pytest.raises(BootstrapError, match=r"(?s)bad\.yaml: not a valid image profile.*needs its source"):
        profiles.load_profiles(tmp_path)


@pytest.mark.parametrize("key, variant, profile_name, present", CASES, ids=[f"{c[0]}-{c[2]}-{c[1]}" for c in CASES])
def test_boots_on_the_image(tmp_path, key, variant, profile_name, present):
    ctx = BUNDLES[key]
    image = _image(ctx, profile_name, present)
    sb = build_sandbox(tmp_path / "sb", ctx, image)
    if ctx.instance is not None and ctx.instance.needs_imex:
        (sb.path / "state/members").write_text("10.0.0.5\n")
    res = sb.run()
    if profile_name == "bare" and ctx.traits.image_gpu_stack and ctx.gpu:
        # HyperPod EKS on an image without the driver: refused, saying which image carries it; nothing installed
        assert res.rc != 0
        assert "the NVIDIA driver is missing" in res.out and "HyperPod's AMI for EKS carries it" in res.out
        assert not [c for c in res.calls if c.startswith(("dnf", "apt-get")) and " install " in c], res.calls
        return
    unpaired = _unpaired_dcgm(ctx, profile_name, present)
    if unpaired is not None:
        # NVIDIA has published no dcgm-exporter for this image's DCGM (versions.yaml dcgm_exporter.builds): the node
        # boots without one, saying so, instead of pairing an exporter built for another DCGM
        assert f"[90-exporters] WARNING: no dcgm-exporter release is known for this node's DCGM {unpaired}" in res.out
    assert res.rc == 0, res.out[-3000:]
    assert (sb.root / "var/lib/fmcluster/health").read_text() == "healthy\n"
    # one source for NVIDIA's CUDA repository (apt's stub refuses two; dnf's would take both)
    sources = [p for d in ("etc/apt/sources.list.d", "etc/yum.repos.d") if (sb.root / d).is_dir()
               for p in (sb.root / d).iterdir()
               if "developer.download.nvidia.com/compute/cuda/repos" in p.read_text()]
    assert len(sources) <= 1, sources
    # B200/B300: nvlsm is there afterwards (installed, or the image's), with ib_umad loaded at every boot
    if ctx.needs_nvlsm:
        assert (sb.root / "opt/nvidia/nvlsm/sbin/nvlsm").exists(), "a fourth-generation NVSwitch node without nvlsm"
        assert (sb.root / "etc/modules-load.d/fmcluster-infiniband.conf").read_text().split() == ["ib_umad"]
