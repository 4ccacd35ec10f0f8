"""LNet over EFA uses as many EFA interfaces as the FSx for Lustre guide gives for the client's
instance type (issue 11, defect 8; "Configuring EFA clients", step 4, "Default Number of EFA
Interfaces"): 16 on p6-b300, 8 on p5/p5e/p5en/p6-b200/p6e-gb200, 2 on other types with several
network cards. The expected figures below are the guide's table typed in again, not read from the
code under test. The rendered per-boot script runs in the sandbox; lnetctl is a recording stub.
"""

from __future__ import annotations

import pytest
from fmcluster.bootstrap import context
from support.sandbox import FSX, Image, build_sandbox, context_for, make_project

from fmcluster.catalog import CATALOG

GUIDE = {
    "p6-b300.48xlarge": 16,
    "p6e-gb200.36xlarge": 8,
    "p6-b200.48xlarge": 8,
    "p5en.48xlarge": 8,
    "p5e.48xlarge": 8,
    "p5.48xlarge": 8,
    "p4d.24xlarge": 2,  # not in the table: "Other instances with multiple network cards"
    "p5.4xlarge": 1,  # not in the table, one network card with one EFA interface: all it has
}


def _run(tmp_path, itype: str, fsx: context.FsxMount = FSX):
    ctx = context_for(make_project(itype, "ubuntu-22.04", "none"), "gpu", "compute", fsx=fsx)
    sb = build_sandbox(tmp_path / "sb", ctx, Image(efa_devices=ctx.instance.efa_devices, gpus=ctx.instance.gpus))
    res = sb.run(script="files/fmcluster-lnet-efa")
    assert res.rc == 0, res.out
    added = [c.split("--if ")[1].split()[0] for c in res.calls if c.startswith("lnetctl net add --net efa")]
    return ctx, added, res


def test_every_catalog_type_is_covered():
    assert set(GUIDE) == set(CATALOG)


@pytest.mark.parametrize("itype", sorted(GUIDE))
def test_lnet_uses_the_guides_number_of_efa_interfaces(tmp_path, itype):
    ctx, added, res = _run(tmp_path, itype)
    devices = ctx.instance.efa_devices
    assert len(added) == GUIDE[itype], added
    assert len(set(added)) == len(added)  # distinct devices
    assert added[0] == "rdmap16s27" and added[-1] == f"rdmap{16 + devices - 1}s27"  # spread: first and last
    assert all("--peer-credits 32" in c for c in res.calls if c.startswith("lnetctl net add --net efa"))
    assert f"LNet over EFA: {GUIDE[itype]} of {devices} EFA devices" in res.out


def test_a_project_figure_overrides_the_guides_default(tmp_path):
    fsx = FSX.model_copy(update={"efa_lnet_interfaces": 4})
    _, added, _ = _run(tmp_path, "p5.48xlarge", fsx)
    assert len(added) == 4


def test_fewer_devices_than_wanted_uses_every_device(tmp_path):
    ctx = context_for(make_project("p6-b300.48xlarge", "ubuntu-22.04", "none"), "gpu", "compute", fsx=FSX)
    sb = build_sandbox(tmp_path / "sb", ctx, Image(efa_devices=3))
    res = sb.run(script="files/fmcluster-lnet-efa")
    assert res.rc == 0, res.out
    assert len([c for c in res.calls if c.startswith("lnetctl net add --net efa")]) == 3


def test_nodes_without_lnet_over_efa_have_no_figure():
    head = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "head", fsx=FSX)
    tcp = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "none"), "gpu", "compute",
                      fsx=FSX.model_copy(update={"efa_enabled": False}))
    assert head.lnet_efa_interfaces is None and tcp.lnet_efa_interfaces is None
