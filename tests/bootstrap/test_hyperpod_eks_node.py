"""HyperPod on EKS: every instance group's bundle of both examples boots twice on HyperPod's EKS AMI (its image profile,
bootstrap/profiles/hyperpod-eks-al2023.yaml) and installs nothing over it (no driver, Fabric Manager, EFA or GDRCopy);
containerd's and kubelet's data move to the secondary volume once, as AWS's on_create.sh moves them, and a second boot
changes nothing. An image without the driver is refused, never completed."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import ROOT
from support.sandbox import Image, Sandbox, build_sandbox

from fmcluster import config
from fmcluster.bootstrap import profiles
from fmcluster.bootstrap.hyperpod_eks import DATA_VOLUME, eks_lifecycle_contexts
from fmcluster.bootstrap.render import render_bundle
from fmcluster.plan import make_plan
from support.shellcheck import SHELLCHECK

EXAMPLES = [ROOT / "examples" / "p5-hyperpod-eks-teams.yaml", ROOT / "examples" / "p5en-hyperpod-eks.yaml"]
INSTALLS = ("nvidia-driver", "nvidia-open", "kmod-nvidia", "cuda-drivers", "nvidia-fabric", "nvidia-imex", "gdrcopy",
            "libgdrapi", "efa", "libfabric", "rdma-core")
"""Package names of what the image carries: none of them may be installed over it."""


def _contexts():
    out = {}
    for path in EXAMPLES:
        cluster = make_plan(config.load(path).project).cluster
        for group, ctx in eks_lifecycle_contexts(cluster).items():
            out[f"{path.stem}-{group}"] = ctx
    return out


CONTEXTS = _contexts()


def _image(ctx, present=None, **over) -> Image:
    (profile,) = profiles.profiles_for("hyperpod-eks", ctx.os, ctx.arch)
    hw = {}
    if ctx.instance is not None:
        i = ctx.instance
        hw = dict(gpus=i.gpus, gpu_name=f"NVIDIA {i.gpu_model}", efa_devices=i.efa_devices,
                  nvme_drives=i.local_nvme_drives or 4)
    return Image.from_profile(profile, ctx.arch, present, **(hw | over))


def _tree(sb: Sandbox) -> dict[str, str]:
    """Every file and link under the node's root, with its content or target; the bundle's own log and state aside."""
    out = {}
    for p in sorted(sb.root.rglob("*")):
        rel = str(p.relative_to(sb.root))
        if rel.startswith(("var/log/", "var/lib/fmcluster/")):
            continue
        if p.is_symlink():
            out[rel] = "-> " + str(p.readlink())
        elif p.is_file():
            out[rel] = p.read_text(errors="replace")
    return out


def _installed(res) -> list[str]:
    return [c for c in res.calls if c.startswith(("dnf", "apt-get", "rpm -i", "rpm -U")) and " install " in f" {c} "
            and any(name in c for name in INSTALLS)]


@pytest.mark.parametrize("key", CONTEXTS)
def test_boots_twice_installing_nothing_over_the_image_and_moving_the_data_once(tmp_path, key):
    ctx = CONTEXTS[key]
    assert ctx.os == "al2023" and ctx.data_volume == DATA_VOLUME  # both examples keep the groups' extra volumes
    sb = build_sandbox(tmp_path / "sb", ctx, _image(ctx))
    first = sb.run()
    assert first.rc == 0, first.out[-3000:]
    assert not _installed(first), _installed(first)
    assert not [c for c in first.calls if "aws-efa-installer" in c or c.startswith("make")], first.calls
    if ctx.gpu:
        assert "NVIDIA driver 580.167.08 is already installed (image); not reinstalling" in first.out
        assert "EFA installer 1.47.0 is already installed (image); not reinstalling" in first.out
        assert "GDRCopy is already installed (image); not rebuilding" in first.out

    volume = sb.root / DATA_VOLUME.lstrip("/")
    kubelet = sb.root / "var/lib/kubelet"
    # kubelet: its folder now a link to the volume, every file (hidden ones too) moved there
    assert kubelet.is_symlink() and kubelet.readlink() == volume / "kubelet"
    assert (volume / "kubelet/pki/kubelet.crt").read_text() == "cert\n"
    assert (volume / "kubelet/.hidden-state").read_text() == "state\n"
    # containerd: its data copied to the volume, a configuration there whose root is that copy, started through a
    # drop-in; the NVIDIA runtime the default where the image has the toolkit (GPU and system nodes: same AMI)
    assert (volume / "containerd/data-root/io.containerd.content.v1.content/blobs/pause").read_text() == "layer\n"
    conf = (volume / "containerd/config.toml").read_text()
    assert 'root = "/opt/sagemaker/containerd/data-root"' in conf.splitlines()
    assert 'default_runtime_name = "nvidia"' in conf.splitlines()
    dropin = (sb.root / "etc/systemd/system/containerd.service.d/10-fmcluster-data-volume.conf").read_text()
    assert dropin.splitlines()[-2:] == ["ExecStart=", "ExecStart=/usr/bin/containerd --config "
                                                      "/opt/sagemaker/containerd/config.toml"]
    assert "systemctl daemon-reload" in first.calls and "systemctl try-restart containerd.service" in first.calls

    before = _tree(sb)
    second = sb.run()
    assert second.rc == 0, second.out[-3000:]
    assert "[15-kubelet-volume] already done (data-volume=/opt/sagemaker); nothing to do" in second.out
    assert _tree(sb) == before
    assert not _installed(second) and "systemctl try-restart containerd.service" not in second.calls

    # without its marker (a bundle replaced, the state lost) the step finds everything in place, changes nothing
    (sb.root / "var/lib/fmcluster/markers/15-kubelet-volume").unlink()
    third = sb.run()
    assert third.rc == 0, third.out[-3000:]
    assert "/var/lib/kubelet already lives on the volume; kept" in third.out
    assert "containerd's data root is already on the volume; kept" in third.out
    assert _tree(sb) == before and "systemctl daemon-reload" not in third.calls


def test_a_new_root_volume_over_a_kept_volume_replaces_the_old_images_data_once(tmp_path):
    """The secondary volume kept while the root volume is replaced (an image update): its containerd and kubelet data
    are the old image's; as AWS's on_create.sh does, they are replaced, once (a further boot keeps the new)."""
    ctx = CONTEXTS["p5-hyperpod-eks-teams-shared"]
    sb = build_sandbox(tmp_path / "sb", ctx, _image(ctx))
    volume = sb.root / DATA_VOLUME.lstrip("/")
    (volume / "containerd/data-root").mkdir(parents=True)
    (volume / "containerd/data-root/old-image-layer").write_text("old\n")
    (volume / "kubelet/pods").mkdir(parents=True)
    (volume / "kubelet/pods/old-pod").write_text("old\n")
    first = sb.run()
    assert first.rc == 0, first.out[-3000:]
    assert not (volume / "containerd/data-root/old-image-layer").exists()
    assert (volume / "containerd/data-root/io.containerd.content.v1.content/blobs/pause").exists()
    assert not (volume / "kubelet/pods").exists() and (volume / "kubelet/pki/kubelet.crt").exists()
    before = _tree(sb)
    (sb.root / "var/lib/fmcluster/markers/15-kubelet-volume").unlink()
    assert sb.run().rc == 0 and _tree(sb) == before


def test_a_gpu_node_whose_image_lacks_the_driver_efa_or_gdrcopy_is_refused(tmp_path):
    ctx = CONTEXTS["p5-hyperpod-eks-teams-shared"]
    for lacking, says in (({"driver": False}, "the NVIDIA driver is missing"),
                          ({"efa": False}, "EFA is missing"),
                          ({"gdrcopy": False}, "GDRCopy is missing")):
        sb = build_sandbox(tmp_path / next(iter(lacking)), ctx, _image(ctx, lacking))
        res = sb.run()
        assert res.rc != 0, res.out[-2000:]
        assert says in res.out and "fmcluster installs none over that image" in res.out
        assert not _installed(res) and not [c for c in res.calls if "aws-efa-installer" in c]


def test_without_the_volume_mounted_the_data_stays_and_the_node_says_so(tmp_path):
    """As AWS's on_create.sh: no /opt/sagemaker after 60 s, containerd and kubelet keep their data on the root
    volume."""
    ctx = CONTEXTS["p5-hyperpod-eks-teams-shared"]
    sb = build_sandbox(tmp_path / "sb", ctx, _image(ctx))
    for mark in (sb.path / "state/mounted").iterdir():
        if mark.name.endswith("_opt_sagemaker"):
            mark.unlink()
    res = sb.run()
    assert res.rc == 0, res.out[-2000:]
    assert "/opt/sagemaker is not mounted after 60 s" in res.out
    assert not (sb.root / "var/lib/kubelet").is_symlink() and (sb.root / "var/lib/kubelet/pki/kubelet.crt").exists()
    assert len([c for c in res.calls if c == "sleep 5"]) == 12


def test_a_group_without_the_extra_volume_moves_nothing():
    path = EXAMPLES[1]
    project = config.load(path).project
    eks = project.orchestrator.hyperpod_eks.model_copy(update={"groups": {"train": project.orchestrator.hyperpod_eks.
                                                                          groups["train"].model_copy(
                                                                              update={"ebs_volume_gib": None})}})
    project = project.model_copy(update={"orchestrator": project.orchestrator.model_copy(update={"hyperpod_eks": eks})})
    contexts = eks_lifecycle_contexts(make_plan(project).cluster)
    assert contexts["train"].data_volume is None
    assert "15-kubelet-volume" not in [s.name for s in contexts["train"].steps()]
    assert contexts["system"].data_volume == DATA_VOLUME


def test_the_rendered_step_passes_shellcheck(tmp_path):
    ctx = CONTEXTS["p5-hyperpod-eks-teams-shared"]
    render_bundle(ctx, tmp_path / "b")
    scripts = sorted(str(p) for p in (tmp_path / "b/steps").glob("*.sh"))
    assert any(s.endswith("15-kubelet-volume.sh") for s in scripts)
    import subprocess
    res = subprocess.run([SHELLCHECK, "-f", "gcc", *scripts], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-4000:]



def test_the_profile_is_al2023_only_and_its_volume_is_where_the_bundle_moves_the_data():
    """HyperPod's EKS AMI is AL2023 (its release notes); its secondary volume is botocore's /opt/sagemaker, where the
    kubelet-volume step moves the data (bootstrap/hyperpod_eks.py DATA_VOLUME), on both architectures."""
    eks = [p for p in profiles.load_profiles() if p.flavour == "hyperpod-eks"]
    assert [p.os for p in eks] == ["al2023"] and set(eks[0].arches) == {"x86_64", "aarch64"}
    for arch, section in eks[0].arches.items():
        kube = section.kubernetes
        assert kube is not None and kube.data_volume.path == DATA_VOLUME, arch
        assert all(f.present and f.source for f in (kube.containerd, kube.kubelet, kube.data_volume)), arch
        comps = section.components
        assert comps.driver.present and comps.efa.present and comps.gdrcopy.present, arch  # what it must not install
