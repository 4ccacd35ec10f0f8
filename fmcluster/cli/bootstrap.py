"""`fmcluster bootstrap ...`: show the pinned versions, render a node bundle for inspection."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from fmcluster import catalog, config, orchestrators
from fmcluster.bootstrap import budget, bundles, context, profiles, render, staging
from fmcluster.bootstrap import versions as pinned
from fmcluster.cli.outdir import OUTPUT_ROOT, default_out
from fmcluster.errors import ConfigError
from fmcluster.plan import make_plan

app = typer.Typer(help="Node bootstrap: pinned versions and rendered bundles.", no_args_is_help=True)


@app.command()
def versions() -> None:
    """Print versions.yaml: every pinned version, URL, checksum and key (and the placeholders)."""
    versions = pinned.load_versions()
    sys.stdout.write(pinned.VERSIONS_FILE.read_text(encoding="utf-8"))
    missing = versions.placeholders()
    sys.stdout.write(f"\n# {len(missing)} not pinned that a node needs (it would stop at that step)\n")
    sys.stdout.writelines(f"#   {key}\n" for key in missing)
    optional = [k for k in versions.unpinned() if k not in missing]
    if optional:
        sys.stdout.write(
            f"# {len(optional)} of optional components not pinned (used when the image carries them, "
            "otherwise skipped with a warning; never downloaded unverified):\n"
        )
        sys.stdout.writelines(f"#   {key}\n" for key in optional)


@app.command(name="render")
def render_cmd(
    project: Annotated[Optional[str], typer.Argument(help="A project name under projects/, or a path to a YAML file.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Directory to write the bundles into. Default: "
                                                "out/PROJECT/bundles (out/matrix with --matrix).")] = None,
    group: Annotated[Optional[list[str]], typer.Option("--group", help="Only these compute groups (repeatable).")] = None,
    role: Annotated[Optional[list[str]], typer.Option("--role", help="Only these roles: head, login, compute.")] = None,
    flavour: Annotated[Optional[str], typer.Option(help="Override the flavour: self-managed, parallelcluster, hyperpod, "
                                                   "pcs (for inspection: not what this project deploys).")] = None,
    matrix: Annotated[bool, typer.Option("--matrix", help="Render every OS x instance type x flavour (no PROJECT), "
                                         "with OUT/SUMMARY.md and OUT/summary.json, for reviewers.")] = False,
) -> None:
    """Render the bootstrap bundles of PROJECT into OUT/<bundle>/ for inspection.

    By default every bundle the deployment publishes, named as it is there (ParallelCluster: head-node and one per
    instance type; HyperPod: one per instance group; self-managed and PCS: one per compute group, and PCS's login),
    rendered by the same function; --role and --group pick some. Under self-managed and PCS nodes the bundles mount
    the project's FSx for Lustre (its identity given at boot when this deployment creates it); ParallelCluster and
    HyperPod mount FSx themselves. With --flavour, OUT/<group>-<role>/ for each group and role (default: compute).
    """
    if matrix:
        if project is not None or group or role or flavour:
            typer.echo("--matrix renders every OS, instance type and flavour; give no PROJECT, --group, --role or --flavour",
                       err=True)
            raise typer.Exit(2)
        out = out or OUTPUT_ROOT / "matrix"
        try:
            rows = render_matrix(out)
        except pinned.BootstrapError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        typer.echo(f"{out}: {len(rows)} bundles; summary in {out / 'SUMMARY.md'}")
        return
    if project is None:
        typer.echo("give a PROJECT (or --matrix)", err=True)
        raise typer.Exit(2)
    try:
        loaded = config.load(project)
    except ConfigError as exc:
        typer.echo(exc.report(), err=True)
        raise typer.Exit(exc.exit_code) from None
    proj = loaded.project
    out = out or default_out(proj.name, "bundles")
    plan = make_plan(proj)
    cluster = plan.cluster
    for r in role or ():
        if r not in context.ROLES:
            typer.echo(f"unknown role {r!r}; one of: {', '.join(context.ROLES)}", err=True)
            raise typer.Exit(2)
    if flavour is not None and flavour not in context.FLAVOURS:
        typer.echo(f"unknown flavour {flavour!r}; one of: {', '.join(context.FLAVOURS)}", err=True)
        raise typer.Exit(2)
    names = [g.name for g in proj.compute_groups]
    for g in group or ():
        if g not in names:
            typer.echo(f"project {proj.name!r} has no compute group {g!r}; groups: {', '.join(names)}", err=True)
            raise typer.Exit(2)
    effective = flavour or context.ORCHESTRATOR_FLAVOUR[cluster.orchestrator]
    fsx = _deployed_fsx(plan.storage.spec) if context.bundle_mounts_fsx(effective) else None
    try:
        if flavour is None:
            targets = {name: ctx for name, ctx in bundles.deployed_contexts(cluster, fsx).items()
                       if (not role or ctx.role in role) and (not group or ctx.group in group)}
        else:
            targets = {f"{g}-{r}": context.context_for(cluster, g, r, flavour, fsx=fsx)  # type: ignore[arg-type]
                       for g in group or names for r in role or ["compute"]}
        for name, ctx in targets.items():
            _render_one(ctx, out / name, fsx)
    except pinned.BootstrapError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def _render_one(ctx: context.BootstrapContext, target: Path, fsx: context.FsxMount | None) -> None:
    manifest = render.render_bundle(ctx, target)
    typer.echo(
        f"{target}: {ctx.role}{f' of {ctx.group}' if ctx.role == 'compute' else ''}, {len(manifest.steps)} steps, "
        f"entry {manifest.entry_bytes} bytes"
        + (f", {len(manifest.placeholders)} checksums not pinned" if manifest.placeholders else "")
    )
    if fsx is not None and fsx.at_boot:
        typer.echo(f"  mounts FSx at {fsx.mount_path}; its identity comes at boot "
                   f"({', '.join(context.FSX_BOOT_ENV)} in the user data)")
    for key in manifest.placeholders:
        typer.echo(f"  not pinned: {key} (the node refuses to download it unless its image has it)")
    # Only the images this flavour's nodes boot; the bare OS only where the flavour has no image profile.
    for image in profiles.profiles_for(ctx.flavour, ctx.os, ctx.arch) or [None]:
        for line in budget.estimate(ctx, image).report():
            typer.echo(f"  {line}")


def _deployed_fsx(spec) -> context.FsxMount | None:
    """The FSx mount the deployed bundle has (as the app passes it): an existing file system's
    identity from the project file; one this deployment creates gets its identity at boot."""
    fsx = spec.fsx
    if not fsx.enabled:
        return None
    if fsx.existing is not None:
        e = fsx.existing
        return context.FsxMount(file_system_id=e.file_system_id, dns_name=e.dns_name, mount_name=e.mount_name,
                                mount_path=fsx.mount_path, efa_enabled=e.efa_enabled)
    return context.FsxMount(mount_path=fsx.mount_path, efa_enabled=fsx.efa_enabled)


MATRIX_PROJECT = """\
name: matrix
availability_zone_id: use1-az6
os: {os}
compute_groups:
  - name: gpu
    instance_type: {itype}
    count: 2
orchestrator:
  type: {orchestrator}
"""


def render_matrix(out: Path) -> list[dict]:
    """Every OS x catalog type x flavour, compute role, into OUT/<os>/<type>/<flavour>/. Bundles of
    flavours that mount FSx (self-managed) mount an EFA-enabled one whose identity comes at boot (the widest path)."""
    orchestrator = {f: orchestrators.by_flavour(f).name for f in context.FLAVOURS}
    rows = []
    for os_name in context.OPERATING_SYSTEMS:
        for itype in catalog.CATALOG:
            for flavour in context.FLAVOURS:
                text = MATRIX_PROJECT.format(os=os_name, itype=itype, orchestrator=orchestrator[flavour])
                cluster = make_plan(config.parse(text).project).cluster
                fsx = context.FsxMount(efa_enabled=True) if context.bundle_mounts_fsx(flavour) else None
                ctx = context.context_for(cluster, "gpu", "compute", flavour, fsx=fsx)
                target = out / os_name / itype / flavour
                manifest = render.render_bundle(ctx, target)
                rows.append({
                    "os": os_name, "instance_type": itype, "arch": ctx.arch, "flavour": flavour,
                    "path": str(target.relative_to(out)), "steps": [s.name for s in manifest.steps],
                    "entry_bytes": manifest.entry_bytes, "sums_sha256": manifest.sums_sha256,
                    "placeholders": manifest.placeholders, "optional_unpinned": manifest.optional_unpinned,
                })
    (out / "summary.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    lines = ["# Bootstrap matrix", "",
             f"{len(rows)} compute bundles: every OS x catalog instance type x flavour. The flavours whose bundle "
             f"mounts FSx ({', '.join(f for f in context.FLAVOURS if context.bundle_mounts_fsx(f))}) mount an "
             "EFA-enabled FSx for Lustre whose identity comes at boot.", "",
             "| OS | instance type | arch | flavour | steps | entry bytes | not pinned (stops) | optional, not pinned |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        steps = " ".join(s.split("-", 1)[0] for s in r["steps"])
        lines.append(f"| {r['os']} | {r['instance_type']} | {r['arch']} | {r['flavour']} | {steps} | {r['entry_bytes']} | "
                     f"{', '.join(r['placeholders']) or '-'} | {', '.join(r['optional_unpinned']) or '-'} |")
    (out / "SUMMARY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return rows


@app.command(name="stage", hidden=True)
def stage_cmd(
    url: Annotated[str, typer.Argument(help="Where the release publishes it (https).")],
    name: Annotated[str, typer.Option("--name", help="What it is, for messages.")],
    sha256: Annotated[str, typer.Option("--sha256", help="Its pinned sha256 (bootstrap/versions.yaml).")],
) -> None:
    """Print the path of a verified copy of URL (downloaded into ~/.cache/fmcluster/artefacts unless there).

    Run by the CDK CLI's asset publisher at deploy, for each monitoring artefact the nodes' bundles list
    (fmcluster.bootstrap.staging), only when the deployment's asset bucket lacks it; the publisher uploads the file.
    """
    try:
        path = staging.fetch(name, url, sha256)
    except pinned.BootstrapError as exc:
        print(f"fmcluster: {exc}", file=sys.stderr)
        raise typer.Exit(1) from None
    print(path)

