"""HGX B200/B300 (fourth-generation NVSwitches): nvlsm with the InfiniBand tools and module ParallelCluster's build adds
with it (cookbook nvidia_nvlsm: infiniband-diags + ibutils on Ubuntu, infiniband-diags + libibumad on AL2023, ib_umad
loaded at boot; versions.yaml nvlsm), also where the image carries Fabric Manager but not nvlsm; decided by the
catalog's per-type flag, not by the GPU's name."""

from __future__ import annotations

import pytest
from fmcluster.bootstrap import context
from support.sandbox import REAL, Image, build_sandbox, calls_of, context_for, make_project

from fmcluster import catalog


def _boot(tmp_path, itype, os_name, image):
    ctx = context_for(make_project(itype, os_name, "parallelcluster"), "gpu", "compute")
    sb = build_sandbox(tmp_path / "sb", ctx, image)
    return ctx, sb, sb.run()


def _installs(res):
    return [c for c in calls_of(res, "apt-get") + calls_of(res, "dnf") if " install " in c]


@pytest.mark.parametrize("itype, os_name", [("p6-b200.48xlarge", "ubuntu-22.04"), ("p6-b300.48xlarge", "al2023")])
def test_an_image_with_fabric_manager_but_no_nvlsm_gets_nvlsm_and_its_infiniband_prerequisites(tmp_path, itype, os_name):
    image = Image(nvlsm=False, efa_devices=8 if "b200" in itype else 16,
                  gpu_name="NVIDIA B200" if "b200" in itype else "NVIDIA B300")
    ctx, sb, res = _boot(tmp_path, itype, os_name, image)
    assert res.rc == 0, res.out[-2000:]
    assert not [c for c in _installs(res) if "fabricmanager" in c]  # the image's Fabric Manager is kept
    ib = REAL.nvlsm.infiniband_packages[ctx.os_family]
    assert [c for c in _installs(res) if all(p in c.split() for p in ib)], _installs(res)
    assert [c for c in _installs(res) if c.endswith(" nvlsm")], _installs(res)
    assert (sb.root / "opt/nvidia/nvlsm/sbin/nvlsm").exists()
    conf = sb.root / "etc/modules-load.d/fmcluster-infiniband.conf"
    assert conf.read_text().split() == ["ib_umad"]
    assert "modprobe ib_umad" in res.calls
    ib_at = min(i for i, c in enumerate(res.calls) if " install " in c and ib[0] in c)
    nvlsm_at = min(i for i, c in enumerate(res.calls) if " install " in c and c.endswith(" nvlsm"))
    assert ib_at < nvlsm_at  # the prerequisites first, as the cookbook does


def test_an_image_with_nvlsm_and_its_tools_installs_nothing_more(tmp_path):
    image = Image(nvlsm=True, efa_devices=8, gpu_name="NVIDIA B200")
    ctx, sb, res = _boot(tmp_path, "p6-b200.48xlarge", "ubuntu-22.04", image)
    assert res.rc == 0, res.out[-2000:]
    assert not [c for c in _installs(res) if "nvlsm" in c or "infiniband" in c]
    assert "nvlsm is already installed (image); reused" in res.log
    assert "modprobe ib_umad" in res.calls  # loaded now and at every boot
    assert (sb.root / "etc/modules-load.d/fmcluster-infiniband.conf").is_file()


def test_nvlsm_is_decided_by_the_catalog_flag():
    flagged = {name for name, t in catalog.CATALOG.items() if t.needs_nvlsm}
    assert flagged == {"p6-b200.48xlarge", "p6-b300.48xlarge"}
    for name in catalog.CATALOG:
        ctx = context_for(make_project(name, "ubuntu-22.04", "parallelcluster"), "gpu", "compute")
        assert ctx.needs_nvlsm == (name in flagged), name
    # a type that carried B200 GPUs but no flag would get no nvlsm: the name of the GPU decides nothing
    ctx = context_for(make_project("p6-b200.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "compute")
    unflagged = ctx.model_copy(update={"instance": ctx.instance.model_copy(update={"needs_nvlsm": False})})
    assert isinstance(unflagged, context.BootstrapContext) and not unflagged.needs_nvlsm
