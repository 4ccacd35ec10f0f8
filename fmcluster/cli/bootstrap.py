"""`fmcluster bootstrap ...`: show the pinned versions, render a node bundle for inspection."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from fmcluster import config
from fmcluster.bootstrap import context, render
from fmcluster.bootstrap import versions as pinned
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
    project: Annotated[str, typer.Argument(help="A project name under projects/, or a path to a YAML file.")],
    out: Annotated[Path, typer.Option("--out", help="Directory to write the bundles into.")],
    group: Annotated[Optional[list[str]], typer.Option("--group", help="Only these compute groups (repeatable).")] = None,
    role: Annotated[Optional[list[str]], typer.Option("--role", help="Only these roles: head, login, compute.")] = None,
    flavour: Annotated[Optional[str], typer.Option(help="Override the flavour: self-managed, parallelcluster, hyperpod.")] = None,
) -> None:
    """Render the bootstrap bundles of PROJECT into OUT/<group>-<role>/ for inspection."""
    try:
        loaded = config.load(project)
    except ConfigError as exc:
        typer.echo(exc.report(), err=True)
        raise typer.Exit(exc.exit_code) from None
    proj = loaded.project
    cluster = make_plan(proj).cluster
    roles = role or ["compute"]
    for r in roles:
        if r not in context.ROLES:
            typer.echo(f"unknown role {r!r}; one of: {', '.join(context.ROLES)}", err=True)
            raise typer.Exit(2)
    if flavour is not None and flavour not in context.FLAVOURS:
        typer.echo(f"unknown flavour {flavour!r}; one of: {', '.join(context.FLAVOURS)}", err=True)
        raise typer.Exit(2)
    groups = group or [g.name for g in proj.compute_groups]
    try:
        for g in groups:
            for r in roles:
                ctx = context.context_for(cluster, g, r, flavour)  # type: ignore[arg-type]
                target = out / f"{g}-{r}"
                manifest = render.render_bundle(ctx, target)
                typer.echo(
                    f"{target}: {len(manifest.steps)} steps, entry {manifest.entry_bytes} bytes"
                    + (f", {len(manifest.placeholders)} checksums not pinned" if manifest.placeholders else "")
                )
                for key in manifest.placeholders:
                    typer.echo(f"  not pinned: {key} (the node refuses to download it unless its image has it)")
    except pinned.BootstrapError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
