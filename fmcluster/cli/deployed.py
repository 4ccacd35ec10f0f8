"""The project an account command acts on (``destroy``, ``status``, ``connect``): the project file when it validates;
otherwise only the project's name and Region, so the user can still read and take down what they built after a
half-edited file (``count: 0``, a mistyped instance type) or a release with stricter checks.

The name comes from the file's ``name:`` where the YAML still parses (else the file's stem, or the name given); the
Region from ``--region``, else the file's ``region:`` or ``availability_zone_id`` where they are well formed, else
the environment and profile (:func:`fmcluster.aws.session.resolve_region`). The stacks are then read by name
(``NAME-network`` ... ``NAME-cluster``); nothing is synthesized. What was not used is said in one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import typer
import yaml
from rich.markup import escape

from fmcluster import checks, config
from fmcluster.cli.project import Output, err
from fmcluster.config.loader import MAX_BYTES, resolve
from fmcluster.config.project import AZ_ID, DNS_NAME, REGION
from fmcluster.errors import ConfigError
from fmcluster.plan import Plan


@dataclass(frozen=True)
class Deployed:
    """What an account command knows of the project. ``region`` and ``availability_zone_id`` are what
    :func:`fmcluster.aws.session.aws_session` reads from a project."""

    name: str
    region: str | None
    availability_zone_id: str | None
    loaded: config.LoadedProject | None = None
    plan: Plan | None = None
    problem: str | None = None
    """Why the project file is not used (None: it validates, ``plan`` is its plan)."""


def deployed(ref: str, output: Output, command: str) -> Deployed:
    """The project file's plan when it validates (its warnings printed as every command prints them); otherwise its
    name and Region with one line saying why the file is not used, or exit 2 when not even a name can be found."""
    try:
        loaded = config.load(ref)
        plan, warnings = checks.validate(loaded)
    except ConfigError as exc:
        return _from_name(ref, exc, command)
    if output is Output.text:
        for problem in warnings:
            err.print(f"[yellow]warning[/]: {escape(problem.format())}", highlight=False, soft_wrap=True)
    project = loaded.project
    return Deployed(project.name, project.region, project.availability_zone_id, loaded, plan)


def _from_name(ref: str, exc: ConfigError, command: str) -> Deployed:
    path = resolve(ref)
    raw = _raw(path)
    name = next((n for n in (raw.get("name"), path.stem) if isinstance(n, str) and re.match(DNS_NAME, n)), None)
    first = exc.problems[0].format() if exc.problems else "it cannot be used"
    if name is None:
        err.print(f"[red]error[/]: {escape(first)}", highlight=False, soft_wrap=True)
        err.print(f"{command} needs the project's name: give the name its stacks carry (NAME-network, ...), e.g. "
                  f"fmcluster {command} NAME --region REGION", highlight=False, soft_wrap=True, markup=False)
        raise typer.Exit(ConfigError.exit_code)
    region = raw.get("region") if isinstance(raw.get("region"), str) and re.match(REGION, raw["region"]) else None
    zone = raw.get("availability_zone_id")
    zone = zone if isinstance(zone, str) and re.match(AZ_ID, zone) else None
    if not path.is_file():
        why = f"no project file at {path}"
    else:
        n = len(exc.problems)
        why = f"{path} does not validate ({n} error{'s' if n != 1 else ''}; first: {first})"
    problem = (f"{why}: {command} reads the deployed stacks of {name} by name "
               f"({name}-network ... {name}-cluster) and uses nothing else from it")
    err.print(f"[yellow]warning[/]: {escape(problem)}", highlight=False, soft_wrap=True)
    return Deployed(name, region, zone, problem=problem)


def _raw(path: Path) -> dict:
    """The file's top-level mapping where it still parses as YAML (only ``name``, ``region`` and
    ``availability_zone_id`` are read from it), else empty."""
    try:
        with path.open("rb") as stream:
            data = yaml.safe_load(stream.read(MAX_BYTES))
    except (OSError, yaml.YAMLError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
