"""Health-check cases beyond test_health.py: the NCCL network plugin resolves under the name NCCL will use."""

from __future__ import annotations

import pytest
from support.sandbox import FSX, Image, build_sandbox, context_for, make_project


def _booted(path, image: Image, os_name: str = "ubuntu-22.04"):
    ctx = context_for(make_project("p5.48xlarge", os_name, "parallelcluster"), "gpu", "compute", fsx=FSX)
    sb = build_sandbox(path, ctx, image)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    return sb


@pytest.fixture(scope="module")
def p5(tmp_path_factory):
    return _booted(tmp_path_factory.mktemp("p5"), Image())


def test_the_plugin_nccl_will_open_is_found(p5):
    res = p5.run(script="steps/99-healthcheck.sh")
    assert res.rc == 0, res.out
    assert "NCCL net plugin: /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so" in res.out


def test_a_plugin_that_is_gone_fails_the_node(p5):
    plugin = p5.root / "opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so"
    away = plugin.with_name("libnccl-net-ofi.so.away")
    plugin.rename(away)
    try:
        res = p5.run(script="steps/99-healthcheck.sh")
    finally:
        away.rename(plugin)
    assert res.rc != 0
    reason = ("nccl: NCCL would look for its network plugin as libnccl-net.so (NCCL_NET_PLUGIN=unset) and find it "
              "neither in LD_LIBRARY_PATH= nor in the ld.so cache: jobs would fall back to sockets")
    assert reason in (p5.root / "var/lib/fmcluster/health").read_text()


def test_the_check_follows_the_profile_to_the_name_it_gives(p5):
    """With only libnccl-net.so left beside it, the profile leaves NCCL_NET_PLUGIN unset, NCCL tries its default name,
    and the health check looks for that name, as a job's NCCL would."""
    plugin = p5.root / "opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so"
    away = plugin.with_name("libnccl-net-ofi.so.away")
    plugin.rename(away)
    (plugin.parent / "libnccl-net.so").write_text("ELF\n")
    try:
        res = p5.run(script="steps/99-healthcheck.sh")
    finally:
        away.rename(plugin)
        (plugin.parent / "libnccl-net.so").unlink()
    assert res.rc == 0, res.out
    assert "NCCL net plugin: /opt/amazon/ofi-nccl/lib/libnccl-net.so" in res.out


def test_the_pre_1_44_layout_is_checked_under_the_default_name(tmp_path):
    sb = _booted(tmp_path / "old", Image(ofi_nccl_files=("/opt/amazon/ofi-nccl/lib/{arch}-linux-gnu/libnccl-net.so",)),
                 "ubuntu-24.04")
    res = sb.run(script="steps/99-healthcheck.sh")
    assert res.rc == 0, res.out
    assert "NCCL net plugin: /opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net.so" in res.out
