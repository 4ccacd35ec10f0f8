"""aws-ofi-nccl is found whatever the EFA installer's layout (FACTS.md section 4: 1.44.0 moved it), and NCCL
gets the plugin by the name every NCCL from 2.18 opens (NCCL_NET_PLUGIN=ofi, or NCCL's default libnccl-net.so
where only that is there) with its folder on the loader path, on the host and in containers. Which NCCL
versions load what is decided in test_nccl_plugin_loading.py."""

from __future__ import annotations

import subprocess

import pytest
from fmcluster.bootstrap import render
from support.sandbox import FSX, Image, build_sandbox, context_for, make_project

LAYOUTS = {
    # (os, files the image has) -> (NCCL_NET_PLUGIN, the plugin's folder)
    "ubuntu-1.44+": ("ubuntu-22.04", ("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", "/opt/amazon/ofi-nccl/lib/libnccl-ofi-tuner.so"),
                     "ofi", "/opt/amazon/ofi-nccl/lib"),
    "al2023-1.44+": ("al2023", ("/opt/amazon/ofi-nccl/lib64/libnccl-net-ofi.so", "/opt/amazon/ofi-nccl/lib64/libnccl-ofi-tuner.so"),
                     "ofi", "/opt/amazon/ofi-nccl/lib64"),
    "ubuntu-pre-1.44": ("ubuntu-24.04", ("/opt/amazon/ofi-nccl/lib/{arch}-linux-gnu/libnccl-net.so",),
                        "", "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu"),
    "ubuntu-pre-1.44-with-ofi-name": ("ubuntu-24.04", ("/opt/amazon/ofi-nccl/lib/{arch}-linux-gnu/libnccl-net.so",
                                                        "/opt/amazon/ofi-nccl/lib/{arch}-linux-gnu/libnccl-net-ofi.so"),
                                      "ofi", "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu"),
    "al2023-pre-1.44": ("al2023", ("/opt/amazon/ofi-nccl/lib/libnccl-net.so",), "", "/opt/amazon/ofi-nccl/lib"),
}


def sourced(sb, file: str) -> dict[str, str]:
    """What a login shell on the node gets from ``file`` (an /etc/profile.d script), read with the sandbox's root."""
    out = subprocess.run(
        ["bash", "-c", 'set -eu; . "$1"; printf "%s|%s|%s" "${NCCL_NET_PLUGIN:-}" "${NCCL_TUNER_PLUGIN:-}" "${LD_LIBRARY_PATH:-}"',
         "profile", str(sb.root / file)],
        env={"FMC_ROOT": str(sb.root), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True).stdout
    net, tuner, ld = out.split("|")
    return {"NCCL_NET_PLUGIN": net, "NCCL_TUNER_PLUGIN": tuner, "LD_LIBRARY_PATH": ld}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_plugin_is_found_and_given_by_name(tmp_path, layout):
    os_name, files, name, folder = LAYOUTS[layout]
    ctx = context_for(make_project("p5.48xlarge", os_name, "none"), "gpu", "compute", fsx=FSX)
    sb = build_sandbox(tmp_path / "sb", ctx, Image(ofi_nccl_files=files))
    res = sb.run()
    assert res.rc == 0, res.out[-2000:]
    env = sourced(sb, "etc/profile.d/fmcluster-nccl.sh")
    assert env["NCCL_NET_PLUGIN"] == name
    assert env["NCCL_TUNER_PLUGIN"] == ""
    assert env["LD_LIBRARY_PATH"] == folder
    assert (sb.root / "etc/ld.so.conf.d/fmcluster-ofi-nccl.conf").read_text() == folder + "\n"
    assert (f"NCCL_NET_PLUGIN={name} ({folder}/libnccl-net-ofi.so" if name else
            f"aws-ofi-nccl found (image) in {folder}: NCCL's default libnccl-net.so") in res.log


def test_no_plugin_anywhere_stops_the_step_naming_every_place_looked(tmp_path):
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "none"), "gpu", "compute", fsx=FSX)
    sb = build_sandbox(tmp_path / "sb", ctx, Image(ofi_nccl_files=()))
    res = sb.run()
    assert res.rc != 0
    assert "[50-nccl-env] FAILED: aws-ofi-nccl is nowhere" in res.out
    assert "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so" in res.out and "lib64/libnccl-net-ofi.so" in res.out


def test_no_script_requires_the_pre_1_44_directory():
    for os_name in ("ubuntu-22.04", "al2023"):
        for orch in ("none", "parallelcluster", "hyperpod"):
            ctx = context_for(make_project("p5.48xlarge", os_name, orch), "gpu", "compute")
            for path, text in render.render_files(ctx).items():
                assert "-d \"${FMC_ROOT}/opt/amazon/ofi-nccl" not in text, path
                assert "x86_64-linux-gnu\"" not in text, path


@pytest.mark.parametrize("container_files, own_env, expected", [
    (("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", "/opt/amazon/ofi-nccl/lib/libnccl-ofi-tuner.so"), "",
     "NCCL_NET_PLUGIN=ofi\nLD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib\n"),
    (("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so",), "LD_LIBRARY_PATH=/usr/local/cuda/lib64\n",
     "NCCL_NET_PLUGIN=ofi\nLD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib:/usr/local/cuda/lib64\n"),
    (("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so",), "LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib:/usr/lib\n",
     "NCCL_NET_PLUGIN=ofi\n"),
    # older naming: a link of the name every NCCL opens, pinned, so the host's NCCL_NET_PLUGIN=ofi never decides
    (("/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net.so",), "",
     "NCCL_NET_PLUGIN=ofi\nLD_LIBRARY_PATH=/usr/local/lib/fmcluster-nccl:/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu\n"),
    ((), "", ""),
    (("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so",), "NCCL_NET_PLUGIN=ofi\n", ""),
], ids=["1.44+", "1.44+-image-path", "1.44+-already-on-path", "pre-1.44", "no-plugin", "image-sets-its-own"])
def test_containers_get_their_own_plugin_by_name(tmp_path, container_files, own_env, expected):
    """The enroot hook the containers step installs, run as enroot runs it at container start: ENROOT_ENVIRON
    already holds the image's /etc/environment (NVIDIA/enroot src/runtime.sh, runtime::_do_environ)."""
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "compute")
    sb = build_sandbox(tmp_path / "sb", ctx, Image())
    res = sb.run()
    assert res.rc == 0, res.out[-2000:]
    hook = sb.root / "etc/enroot/hooks.d/90-fmcluster-nccl.sh"
    rootfs = tmp_path / "rootfs"
    (rootfs / "etc").mkdir(parents=True)
    (rootfs / "etc/environment").write_text(own_env)
    for lib in container_files:
        (rootfs / lib.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (rootfs / lib.lstrip("/")).write_text("ELF\n")
    environ = tmp_path / "environ"
    environ.write_text(own_env)
    subprocess.run(["bash", str(hook)], env={"ENROOT_ROOTFS": str(rootfs), "ENROOT_ENVIRON": str(environ),
                                              "PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/host/only"}, check=True)
    assert environ.read_text() == own_env + expected
