"""The bootstrap matrix the lint tests check (tests/bootstrap/test_lint.py) and count (tests/test_lint_subjects.py).

The full matrix (OS x role x flavour x every catalog instance type x with/without an FSx mount, and option variants)
renders and passes ``bash -n``; shellcheck, which is slower, runs on one bundle per *structure*: combinations that
differ only in figures (GPU count, EFA count, a path) render the same shell code paths, so they share a representative.
"""

from __future__ import annotations

import functools
import hashlib

from fmcluster.bootstrap import context, render
from fmcluster.bootstrap.collector import NODE_REMOTE_WRITE_MARKER

from fmcluster import catalog
from support.sandbox import FSX, context_for, make_project


@functools.cache
def matrix() -> list[tuple[str, context.BootstrapContext]]:
    """The matrix, built on first use (not at import: every xdist worker imports the test modules to collect them, and
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


def structure(ctx: context.BootstrapContext) -> tuple:
    i = ctx.instance
    return (
        ctx.os_family, ctx.role, ctx.flavour, ctx.fsx is not None, ctx.options, bool(ctx.qos_partitions),
        (i.nvswitch, i.needs_imex, i.local_nvme_drives is None, len(i.gpu_model_tokens)) if i else None,
    )


def scripts(ctx: context.BootstrapContext) -> dict[str, str]:
    """A bundle's shell scripts (steps, the entry, the scripts under files/) by path in the bundle."""
    files = {k: v for k, v in render.render_files(ctx).items() if not k.endswith((".csv", ".yml"))}
    files[render.ENTRY_NAME] = render.entry_script(ctx, "0" * 64)
    return files


def unique(contexts) -> dict[str, tuple[str, str]]:
    """sha256 of each distinct script -> (name "COMBINATION:PATH" of its first rendering, content)."""
    out: dict[str, tuple[str, str]] = {}
    for name, ctx in contexts:
        for path, content in scripts(ctx).items():
            out.setdefault(hashlib.sha256(content.encode()).hexdigest(), (f"{name}:{path}", content))
    return out


def representatives() -> list[tuple[str, context.BootstrapContext]]:
    """The first combination of each structure."""
    reps: dict[tuple, tuple[str, context.BootstrapContext]] = {}
    for name, ctx in matrix():
        reps.setdefault(structure(ctx), (name, ctx))
    return list(reps.values())


@functools.cache
def unique_matrix() -> dict[str, tuple[str, str]]:
    """Every distinct script of the whole matrix (``bash -n`` checks each)."""
    return unique(matrix())


@functools.cache
def representative_scripts() -> list[tuple[str, tuple[str, str]]]:
    """Every distinct script of the representatives, sorted by digest: shellcheck's subjects."""
    return sorted(unique(representatives()).items())


def prelude(ctx: context.BootstrapContext, path: str) -> str | None:
    """The common helpers (templates/bootstrap/partials/common.sh.j2) as step ``path`` of ``ctx``'s bundle renders
    them, or None for a script that holds none (the entry, the scripts under files/)."""
    for step in ctx.steps():
        if path == f"steps/{step.name}.sh":
            return render._render("partials/common.sh.j2", ctx, step=step, marker=NODE_REMOTE_WRITE_MARKER)
    return None


@functools.cache
def representative_subjects() -> list[tuple[str, str, str | None]]:
    """shellcheck's subjects, as (name, content, its common helpers or None), one per distinct content, sorted by the
    content's digest (the order of :func:`representative_scripts`)."""
    out: dict[str, tuple[str, str, str | None]] = {}
    for name, ctx in representatives():
        for path, content in scripts(ctx).items():
            digest = hashlib.sha256(content.encode()).hexdigest()
            if digest not in out:
                out[digest] = (f"{name}:{path}", content, prelude(ctx, path))
    return [out[d] for d in sorted(out)]
