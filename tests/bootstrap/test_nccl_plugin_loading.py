"""Every rendered script that gives NCCL its network plugin does so in a way every NCCL from 2.18 to the newest
loads, on every image profile: decided with NCCL's own loading rules per version (tests/support/nccl_loader.py,
which names the NVIDIA/nccl files and lines it encodes).

The scripts: /etc/profile.d/fmcluster-nccl.sh as step 50-nccl-env writes it (jobs on the host), the enroot hook
step 80-containers installs (jobs in containers), and the acceptance jobs' copy of the profile. Each is run on a
root holding the image's aws-ofi-nccl files (bootstrap/profiles, each layout a profile names); what it exports
must make each NCCL version dlopen one of those files, and on NCCL >= 2.21 find aws-ofi-nccl's tuner too."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fmcluster.bootstrap import acceptance, profiles, render
from fmcluster.bootstrap.context import context_for
from support import nccl_loader
from support.nccl_loader import VERSIONS, Loader, Nccl
from support.sandbox import make_project

from fmcluster.plan import make_plan
from fmcluster import orchestrators

ORCHESTRATOR = {o.flavour: o.name for o in orchestrators.ORCHESTRATORS.values()}  # flavour -> orchestrator.type
INSTANCE = {"x86_64": "p5.48xlarge", "aarch64": "p6e-gb200.36xlarge"}
BEGIN, END = "# --- begin fmcluster-nccl.sh ---\n", "# --- end fmcluster-nccl.sh ---\n"


def _layouts() -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(id, profile, arch, the aws-ofi-nccl files) for every layout every profile names."""
    out = []
    for p in profiles.load_profiles():
        for arch, section in sorted(p.arches.items()):
            ofi = section.components.efa.ofi_nccl
            for label, files in (("as-written", ofi.files), ("alternative", ofi.alternative_files)):
                if files:
                    out.append((f"{p.name}-{arch}-{label}", p.name, arch, tuple(f.format(arch=arch) for f in files)))
    return out


LAYOUTS = _layouts()


def _project(profile_name: str, arch: str):
    p = next(p for p in profiles.load_profiles() if p.name == profile_name)
    return p, make_project(INSTANCE[arch], p.os, ORCHESTRATOR[p.flavour])


def _root(tmp: Path, files: tuple[str, ...]) -> Path:
    root = tmp / "root"
    for f in files:
        (root / f.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (root / f.lstrip("/")).write_text("ELF\n")
    (root / "etc").mkdir(parents=True, exist_ok=True)
    return root


def _heredoc(text: str, tag: str) -> str:
    start = text.index(f"<<'{tag}'\n") + len(f"<<'{tag}'\n")
    return text[start:text.index(f"\n{tag}\n", start) + 1]


def _sourced(script: str, root: Path, shell: str) -> dict[str, str]:
    """What a login shell gets from sourcing ``script`` on ``root`` (FMC_ROOT), from an empty environment."""
    probe = ('. "$1"; for v in NCCL_NET_PLUGIN NCCL_TUNER_PLUGIN LD_LIBRARY_PATH; do '
             'eval "[ -n \\"\\${$v+x}\\" ] && printf \'%s=%s\\n\' $v \\"\\${$v}\\""; done; true')
    path = root.parent / "profile.sh"
    path.write_text(script)
    out = subprocess.run([shell, "-c", probe, "probe", str(path)], env={"FMC_ROOT": str(root), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines())


def _environments(tmp: Path, profile_name: str, arch: str, root: Path) -> dict[str, dict[str, str]]:
    """script -> the NCCL environment it gives a job on ``root``."""
    p, project = _project(profile_name, arch)
    cluster = make_plan(project).cluster
    ctx = context_for(cluster, "gpu", "compute", p.flavour)
    files = render.render_files(ctx)
    envs = {}
    step = _heredoc(files["steps/50-nccl-env.sh"], "PROFILE")
    for shell in ("bash", "sh"):  # /etc/profile sources profile.d with sh too
        envs[f"profile.d ({shell})"] = _sourced(step, root, shell)
    if "files/fmcluster-enroot-nccl.sh" in files:
        hook, environ = tmp / "hook.sh", tmp / "environ"
        hook.write_text(files["files/fmcluster-enroot-nccl.sh"])
        environ.write_text("")
        subprocess.run(["bash", str(hook)], check=True, env={"ENROOT_ROOTFS": str(root), "ENROOT_ENVIRON": str(environ),
                                                              "PATH": "/usr/bin:/bin"})
        envs["enroot hook"] = dict(line.split("=", 1) for line in environ.read_text().splitlines())
    out = tmp / "acceptance"
    acceptance.render_acceptance(cluster, out)
    jobs = [f for f in sorted(out.rglob("*")) if f.is_file() and BEGIN in f.read_text()]
    assert jobs, "no acceptance job carries the NCCL profile"
    for job in jobs:
        text = job.read_text()
        block = text[text.index(BEGIN) + len(BEGIN):text.index(END)]
        envs[f"acceptance {job.name}"] = _sourced(block, root, "bash")
    return envs


@pytest.mark.parametrize("layout", LAYOUTS, ids=[lay[0] for lay in LAYOUTS])
def test_every_nccl_from_2_18_loads_the_plugin_every_script_names(tmp_path, layout):
    _, profile_name, arch, files = layout
    root = _root(tmp_path, files)
    plugins = {f for f in files if f.rsplit("/", 1)[1].startswith("libnccl-net")}
    ofi_libs = set(files)
    failures = []
    for script, env in _environments(tmp_path, profile_name, arch, root).items():
        loader = Loader(root, env.get("LD_LIBRARY_PATH", ""))
        for v in VERSIONS:
            got, value = nccl_loader.net_plugin(v, env, loader), env.get("NCCL_NET_PLUGIN")
            if got not in plugins:
                failures.append(f"{script}: NCCL {v.label} with NCCL_NET_PLUGIN={value or '(unset)'} tries "
                                f"{nccl_loader.net_names(v, value)} and loads {got or 'nothing (sockets)'}")
            elif v.tuner_era in ("v221", "v226") and nccl_loader.tuner(v, env, loader, ofi_libs) is None:
                failures.append(f"{script}: NCCL {v.label} finds no aws-ofi-nccl tuner "
                                f"(NCCL_TUNER_PLUGIN={env.get('NCCL_TUNER_PLUGIN', '(unset)')})")
    assert not failures, "\n".join(failures)


def _v(label: str) -> Nccl:
    return next(v for v in VERSIONS if v.label == label)


@pytest.mark.parametrize("value, loads", [
    # (NCCL_NET_PLUGIN, versions that load /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so with lib/ on LD_LIBRARY_PATH)
    ("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", {"2.21.5", "2.22.3", "2.23.4", "2.24.3", "2.25.1", "2.26.6",
                                                     "2.27.5", "2.27.7", "2.28.9", "2.29.7", "2.30.7"}),
    ("libnccl-net-ofi.so", {"2.21.5", "2.22.3", "2.23.4", "2.24.3", "2.25.1", "2.26.6", "2.27.3", "2.27.5",
                            "2.27.7", "2.28.9", "2.29.7", "2.30.7"}),
    ("ofi", {v.label for v in VERSIONS}),
    (None, set()),  # the default libnccl-net.so: not there in the 1.44+ layout
])
def test_the_rules_give_what_facts_md_records(tmp_path, value, loads):
    """FACTS.md section 4 ("NCCL's network plugin name"): 2.18-2.20 open only libnccl-net-<value>.so, 2.27.3 opens
    the value as given only when it looks like lib*.so, 2.21.x, 2.26.x, 2.27.5+ also accept a path; ofi loads
    on every version. A check of the encoded rules against those findings, not a copy of them."""
    plugin = "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so"
    root = _root(tmp_path, (plugin,))
    env = {} if value is None else {"NCCL_NET_PLUGIN": value}
    loader = Loader(root, "/opt/amazon/ofi-nccl/lib")
    assert {v.label for v in VERSIONS if nccl_loader.net_plugin(v, env, loader) == plugin} == loads


def test_an_unset_variable_finds_the_default_name_on_every_version(tmp_path):
    plugin = "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net.so"
    loader = Loader(_root(tmp_path, (plugin,)), "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu")
    assert all(nccl_loader.net_plugin(v, {}, loader) == plugin for v in VERSIONS)
    # ...and a set variable stops every version from trying it (2.18-2.26 try only the named plugin; 2.27+ a list)
    assert not any(nccl_loader.net_plugin(v, {"NCCL_NET_PLUGIN": "ofi"}, loader) for v in VERSIONS)


def test_aws_ofi_nccl_tuner_loads_from_2_21_through_the_net_plugin_and_never_on_2_19_2_20(tmp_path):
    """Why the scripts set no NCCL_TUNER_PLUGIN: 2.19-2.20 accept only ncclTunerPlugin_v1, which aws-ofi-nccl does
    not export; from 2.21 NCCL finds the tuner in the net plugin once NCCL_NET_PLUGIN names it."""
    files = ("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", "/opt/amazon/ofi-nccl/lib/libnccl-ofi-tuner.so")
    loader = Loader(_root(tmp_path, files), "/opt/amazon/ofi-nccl/lib")
    env = {"NCCL_NET_PLUGIN": "ofi"}
    got = {v.label: nccl_loader.tuner(v, env, loader, set(files)) for v in VERSIONS}
    assert {k for k, lib in got.items() if lib is None} == {"2.18.6", "2.19.4", "2.20.5"}
    assert {lib for lib in got.values() if lib} == {files[0]}
    # the file path the templates used to export is lost on 2.27.3 (neither lib*.so nor a name)
    path_env = env | {"NCCL_TUNER_PLUGIN": files[1]}
    assert nccl_loader.tuner(_v("2.27.3"), path_env | {"NCCL_NET_PLUGIN": files[0]}, loader, set(files)) is None


CONTAINER_LAYOUTS = {
    # aws-ofi-nccl as a container image may carry it (versions.yaml aws_ofi_nccl.plugin_files: every layout the
    # bundle searches). The DLC images the first job and acceptance name (versions.yaml first_job_image) carry one of
    # the first two (EFA installer >= 1.44 on x86_64; 1.42 on aarch64); which one exactly is unconfirmed, so all are.
    "efa-1.44+": ("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", "/opt/amazon/ofi-nccl/lib/libnccl-ofi-tuner.so"),
    "efa-<1.44, both names": ("/opt/amazon/ofi-nccl/lib/{arch}-linux-gnu/libnccl-net.so",
                              "/opt/amazon/ofi-nccl/lib/{arch}-linux-gnu/libnccl-net-ofi.so"),
    "aws-ofi-nccl <1.15, libnccl-net.so only": ("/opt/amazon/ofi-nccl/lib/{arch}-linux-gnu/libnccl-net.so",),
}


def _pyxis(job: dict[str, str], container: dict[str, str]) -> dict[str, str]:
    """The environment of a pyxis task: the job's, then every variable of the container's own environment (the
    image's /etc/environment and what enroot hooks wrote) overwriting it (NVIDIA/pyxis pyxis_slurmstepd.c
    spank_import_container_env: spank_setenv(..., overwrite=1) over /proc/<pid>/environ)."""
    return job | container


@pytest.mark.parametrize("layout", CONTAINER_LAYOUTS)
def test_a_container_loads_its_own_plugin_whatever_the_host_profile_exports(tmp_path, layout):
    """A job submitted from a login shell carries the host profile's NCCL variables (sbatch exports the submitting
    environment); pyxis passes every one the container does not set. The enroot hook pins the container's own, so
    every NCCL from 2.18 loads the container's aws-ofi-nccl, never nothing."""
    arch = "x86_64"
    host_files = ("/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so",)  # the host's 1.44+ layout: it exports ofi
    host_env = _environments(tmp_path / "host", "parallelcluster-ubuntu-22.04", arch,
                             _root(tmp_path / "host", host_files))["profile.d (bash)"]
    assert host_env.get("NCCL_NET_PLUGIN") == "ofi"
    files = tuple(f.format(arch=arch) for f in CONTAINER_LAYOUTS[layout])
    (tmp_path / "c").mkdir()
    root = _root(tmp_path / "c", files)
    p, project = _project("parallelcluster-ubuntu-22.04", arch)
    hook_text = render.render_files(context_for(make_plan(project).cluster, "gpu", "compute", p.flavour))[
        "files/fmcluster-enroot-nccl.sh"]
    hook, environ = tmp_path / "hook.sh", tmp_path / "environ"
    hook.write_text(hook_text)
    environ.write_text("")
    subprocess.run(["bash", str(hook)], check=True, env={"ENROOT_ROOTFS": str(root), "ENROOT_ENVIRON": str(environ),
                                                          "PATH": "/usr/bin:/bin"})
    env = _pyxis(host_env, dict(line.split("=", 1) for line in environ.read_text().splitlines()))
    loader = Loader(root, env.get("LD_LIBRARY_PATH", ""))
    plugins = {f for f in files if f.rsplit("/", 1)[1].startswith("libnccl-net")}
    failures = [f"NCCL {v.label}: NCCL_NET_PLUGIN={env.get('NCCL_NET_PLUGIN', '(unset)')} loads "
                f"{nccl_loader.net_plugin(v, env, loader) or 'nothing (sockets)'}"
                for v in VERSIONS if nccl_loader.net_plugin(v, env, loader) not in plugins]
    assert not failures, "\n".join(failures)
