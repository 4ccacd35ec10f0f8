"""Every catalog type (both architectures) on every OS boots end to end in the sandbox, from an
image that lacks the NVIDIA driver, Fabric Manager/IMEX and dcgm-exporter, against the real
versions.yaml; the flavour rotates so each OS meets each flavour. The stubs record what the
bundle ran: the repository, the package names and versions for that OS, the units enabled."""

from __future__ import annotations

import pytest
from fmcluster.bootstrap import context
from support.sandbox import (
    FSX,
    REAL,
    Image,
    build_sandbox,
    calls_of,
    context_for,
    make_project,
)

from fmcluster import catalog, orchestrators
from fmcluster.flavours import FLAVOURS as FLAVOUR_TRAITS

ORCHESTRATOR = {o.flavour: o.name for o in orchestrators.ORCHESTRATORS.values()}
"""The project each flavour's case is planned from."""
DISTRO = {"ubuntu-22.04": "ubuntu2204", "ubuntu-24.04": "ubuntu2404", "al2023": "amzn2023"}  # NVIDIA's repo paths
NV_ARCH = {"x86_64": "x86_64", "aarch64": "sbsa"}


INSTALLING = tuple(f for f in context.FLAVOURS if not FLAVOUR_TRAITS[f].image_gpu_stack)
"""The flavours whose bundles install what the image lacks. The others (HyperPod EKS) refuse an image without the
driver, EFA or GDRCopy, and boot on their image profiles (tests/bootstrap/test_profiles_sandbox.py)."""


def _flavour(itype: str, k: int) -> str:
    """The k-th installing flavour in rotation; an IMEX type skips the flavours that read IMEX peers from HyperPod's
    node API, which this sandbox does not model (tests/bootstrap/test_imex.py boots GB200 on both, with that API
    emulated)."""
    while True:
        flavour = INSTALLING[k % len(INSTALLING)]
        if not (catalog.CATALOG[itype].needs_imex and FLAVOUR_TRAITS[flavour].imex_members == "hyperpod-api"):
            return flavour
        k += 1


CASES = [
    (itype, os_name, _flavour(itype, i + j))
    for i, itype in enumerate(catalog.CATALOG)
    for j, os_name in enumerate(context.OPERATING_SYSTEMS)
]
GPU_NAME = {"A100 40GB": "NVIDIA A100-SXM4-40GB", "GB200": "NVIDIA GB200"}


def test_the_cases_cover_every_type_os_arch_and_flavour():
    assert {c[0] for c in CASES} == set(catalog.CATALOG)
    for os_name in context.OPERATING_SYSTEMS:
        assert {f for _, o, f in CASES if o == os_name} == set(INSTALLING)
    assert {catalog.CATALOG[t].architecture for t in catalog.CATALOG} >= {"x86_64", "arm64"}


def _installs(res, os_name: str) -> list[str]:
    tool = "dnf" if os_name == "al2023" else "apt-get"
    return [c for c in calls_of(res, tool) if " install " in c]


@pytest.mark.parametrize("itype, os_name, flavour", CASES, ids=["-".join(c) for c in CASES])
def test_boots_end_to_end(tmp_path, itype, os_name, flavour):
    project = make_project(itype, os_name, ORCHESTRATOR[flavour])
    ctx = context_for(project, "gpu", "compute", flavour, fsx=FSX)
    i = ctx.instance
    image = Image(driver=False, fabric_manager=False, dcgm_exporter=False, gpus=i.gpus,
                  gpu_name=GPU_NAME.get(i.gpu_model, f"NVIDIA {i.gpu_model}"), efa_devices=i.efa_devices,
                  nvme_drives=i.local_nvme_drives or 4)
    sb = build_sandbox(tmp_path / "sb", ctx, image)
    if i.needs_imex:
        (sb.path / "state/members").write_text("10.0.0.5\n")
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert (sb.root / "var/lib/fmcluster/health").read_text() == "healthy\n"
    assert sb.manifest.placeholders == []

    repo = f"https://developer.download.nvidia.com/compute/cuda/repos/{DISTRO[os_name]}/{NV_ARCH[ctx.arch]}"
    assert any(c.startswith("curl") and c.endswith(f"{repo}/{ctx.nvidia_repo_key.file}") for c in res.calls)
    installs = _installs(res, os_name)
    drv = REAL.nvidia_driver.version
    if os_name == "al2023":
        assert "dnf -q -y install nvidia-open-" + drv in installs, installs
        assert (sb.root / "etc/yum.repos.d/fmcluster-nvidia-cuda.repo").read_text().count(f"baseurl={repo}\n") == 1
        assert "dracut -f" in res.calls
        assert not calls_of(res, "apt-get")
    else:
        assert any(c.endswith(f"install --no-install-recommends nvidia-driver-580-open={drv}-1ubuntu1") for c in installs), installs
        assert (sb.root / "etc/apt/sources.list.d/fmcluster-nvidia-cuda.list").read_text().endswith(f" {repo}/ /\n")
        assert "update-initramfs -u" in res.calls
        assert not calls_of(res, "dnf")
    joined = " ".join(installs)
    if i.needs_imex:  # GB200: IMEX, no Fabric Manager
        assert "nvidia-imex" in joined and "nvidia-fabricmanager" not in joined
        if flavour == "parallelcluster":  # members per job: the head node's prolog (tests/bootstrap/test_imex.py)
            assert not [c for c in res.calls if "fmcluster-imex" in c]
        else:
            assert "systemctl enable fmcluster-imex.service fmcluster-imex.timer" in res.calls
            assert (sb.root / "etc/nvidia-imex/nodes_config.cfg").read_text() == "10.0.0.5\n"
    elif i.nvswitch:
        assert "nvidia-fabricmanager" in joined and "nvidia-imex" not in joined
        assert "systemctl enable --now nvidia-fabricmanager.service" in res.calls
    else:  # one GPU (p5.4xlarge): no NVSwitch in the instance, so neither Fabric Manager nor IMEX
        assert "nvidia-fabricmanager" not in joined and "nvidia-imex" not in joined
        assert not [c for c in res.calls if "fabricmanager" in c]
    assert "systemctl enable --now nvidia-persistenced.service" in res.calls
    assert f"{REAL.dcgm_exporter.package}" in joined
    assert f"systemctl enable {REAL.dcgm_exporter.service}" in res.calls
    assert "systemctl enable fmcluster-scratch.service" in res.calls
    if image.nvme_drives > 1:
        assert any(f"--raid-devices={image.nvme_drives}" in c for c in calls_of(res, "mdadm"))
    else:  # one drive (p5.4xlarge): the file system goes on it, no RAID
        assert not [c for c in calls_of(res, "mdadm") if "--create" in c]
        assert [c for c in res.calls if c.startswith("mkfs.xfs")]
    # LNet over EFA on this type's EFA devices, and the FSx mount
    assert [c for c in res.calls if c.startswith("lnetctl net add --net efa")]
    assert any(c.startswith("mount -t lustre") for c in res.calls)
    # the image's aws-ofi-nccl (EFA installer 1.44+ layout), given to NCCL by the name every NCCL from 2.18 opens
    folder = "/opt/amazon/ofi-nccl/" + ("lib64" if os_name == "al2023" else "lib")
    assert f"NCCL_NET_PLUGIN=ofi ({folder}/libnccl-net-ofi.so;" in res.log
