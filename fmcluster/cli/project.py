"""``fmcluster validate``, ``plan`` and ``new``: check, show and create project files.

Touches no AWS, except ``plan --prices``, which reads the AWS Price List API."""

from __future__ import annotations

import io
import ipaddress
import json
import re
from enum import Enum
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.util import load_yaml_guess_indent

from fmcluster import checks, config
from fmcluster.aws import AwsError
from fmcluster.cli import plandiff
from fmcluster.cli.plancost import LIVE_NOT_READ, live_lookup
from fmcluster.cli.planservices import plan_json
from fmcluster.cli.planview import print_plan
from fmcluster.config import neighbours
from fmcluster.errors import ConfigError, Problem
from fmcluster.generate.costs import project_cost
from fmcluster.plan import Plan
from fmcluster.plan.cost import sagemaker_types

out = Console()
err = Console(stderr=True)


class Output(str, Enum):
    text = "text"
    json = "json"


PROJECT_ARG = typer.Argument(..., help="A project name under projects/ or a path to a YAML file.")
OUTPUT_OPT = typer.Option(Output.text, "--output", "-o", help="text for people, json for machines.")


def _load(ref: str, output: Output) -> tuple[config.LoadedProject, Plan, list[Problem]]:
    """Load and check a project, or report every problem and exit 2."""
    try:
        loaded = config.load(ref)
        plan, warnings = checks.validate(loaded)
    except ConfigError as exc:
        if output is Output.json:
            print(json.dumps({"ok": False, "problems": [p.as_dict() for p in exc.problems + exc.warnings]}, indent=2))
        else:
            for problem in exc.warnings:
                err.print(f"[yellow]warning[/]: {escape(problem.format())}", highlight=False, soft_wrap=True)
            for problem in exc.problems:
                err.print(f"[red]error[/]: {escape(problem.format())}", highlight=False, soft_wrap=True)
            n = len(exc.problems)
            err.print(f"{n} error{'s' if n != 1 else ''}; fix the file and run again.", highlight=False)
        raise typer.Exit(ConfigError.exit_code) from None
    if output is Output.text:
        for problem in warnings:
            err.print(f"[yellow]warning[/]: {escape(problem.format())}", highlight=False, soft_wrap=True)
    return loaded, plan, warnings


def validate(project: str = PROJECT_ARG, output: Output = OUTPUT_OPT) -> None:
    """Check a project file's structure and meaning. Exit code 2 when it has errors."""
    loaded, _, warnings = _load(project, output)
    if output is Output.json:
        print(json.dumps({"ok": True, "project": loaded.project.name, "problems": [w.as_dict() for w in warnings]}, indent=2))
    else:
        out.print(f"{loaded.file}: ok ({len(warnings)} warning{'s' if len(warnings) != 1 else ''})", highlight=False,
                  markup=False, soft_wrap=True)


REPLACEMENT_EXIT = 3


def plan(
    project: str = PROJECT_ARG,
    output: Output = OUTPUT_OPT,
    against: str | None = typer.Option(
        None, "--against", help="The project file as deployed now: refuse changes that would replace stored data."),
    allow_replace: bool = typer.Option(False, "--allow-replace", help="Report replacements but do not refuse them."),
    wide: bool = typer.Option(False, "--wide", help="One wide table per subject, every column at once (for wide "
                              "terminals); by default the plan fits 80 columns."),
    prices: bool = typer.Option(False, "--prices", help="Read on-demand prices from the AWS Price List API (needs "
                                "credentials; cached a week under ~/.cache/fmcluster) and show cost per hour and day."),
) -> None:
    """Show what a project builds: nodes, GPUs, PFLOPS, HBM, EFA, addresses, storage and checkpoint times.

    With --against OLD, also compare what both files synthesize and exit 3 if deploying this
    one would replace a file system, data repository association, bucket or metrics workspace.
    With --prices, also what it costs on demand (the only plan path that calls AWS).
    """
    loaded, the_plan, warnings = _load(project, output)
    quote, live_note = _quote(loaded, the_plan) if prices else (None, None)
    if live_note is not None:
        err.print(f"warning: {LIVE_NOT_READ}: {live_note}", highlight=False, markup=False, soft_wrap=True)
    comparison = None
    if against is not None:
        _load(against, output)  # report a broken OLD file as such
        # Heavy: CDK (and jsii's Node process) load only when a comparison needs synthesis.
        from fmcluster.stacks.app import synthesize

        comparison = plandiff.compare_files(project, against, synthesize)
    replacements = None if comparison is None else comparison.replacements
    if output is Output.json:
        data = plan_json(the_plan)
        data["cost"] = project_cost(the_plan, live_lookup(quote)).as_dict()
        data["cost"]["live_prices"] = {"read": quote is not None, "why_not": live_note}
        data["warnings"] = [w.as_dict() for w in warnings]
        if comparison is not None:
            data["replacements"] = [r.__dict__ for r in comparison.replacements]
            data["changes"] = comparison.as_dict()
        if quote is not None:
            data["prices"] = _quote_dict(quote)
        print(json.dumps(data, indent=2))
    else:
        if comparison is not None and against is not None:  # the verdict first, the plan after it
            for line in plandiff.summary(against, comparison):
                out.print(line, highlight=False, markup=False, soft_wrap=True)
            out.print()
        print_plan(the_plan, out, wide=wide, quote=quote, live_note=live_note)
    refuse_replacements(replacements, allow_replace)
    if comparison is not None and plandiff.impossible(comparison.cluster_updates):
        err.print("refused: fmcluster deploy would refuse this: ParallelCluster cannot apply it to the running cluster "
                  "at any fleet state (the changes are listed above; exit 3)", highlight=False, soft_wrap=True)
        raise typer.Exit(REPLACEMENT_EXIT)


def refuse_replacements(replacements: list | None, allow_replace: bool) -> None:
    """Print each replacement the guard found; exit 3 unless ``--allow-replace`` (``plan --against`` and ``deploy``).
    ``None``: nothing was compared."""
    for r in replacements or ():
        err.print(f"[red]replaces[/]: {escape(r.format())}", highlight=False, soft_wrap=True)
    if replacements and not allow_replace:
        err.print("refused: deploying this would replace stored data (hint: keep those settings, or pass "
                  "--allow-replace once you have copied the data off)", highlight=False, soft_wrap=True)
        raise typer.Exit(REPLACEMENT_EXIT)


def _quote(loaded: config.LoadedProject, the_plan: Plan) -> tuple[object, str | None]:
    """The Price List's on-demand prices for the project's instance types and file system (a
    :class:`fmcluster.aws.pricing.Quote`), or None and why they could not be read (the account, the network, the
    Price List's answer, in the words every account command uses): the plan then shows the table's figures."""
    st = the_plan.storage
    fsx = (st.deployment_type or "", st.throughput_per_tib) if st.created else None
    # boto3 loads only here: --prices is the one plan path that calls AWS.
    from fmcluster.aws import pricing
    from fmcluster.aws.session import aws_session, translate  # boto3, as above

    try:
        session = aws_session(loaded.project, command="plan --prices")
        with session.errors():
            return pricing.quote(session.region, [g.instance_type for g in the_plan.groups], fsx,
                                 session=session, ml_types=sagemaker_types(the_plan)), None
    except (AwsError, pricing.PriceError) as exc:
        return None, str(exc)
    except Exception as exc:
        if not type(exc).__module__.startswith("botocore"):
            raise
        return None, str(translate(exc))


def _quote_dict(quote) -> dict:
    """The prices as `plan -o json` shows them (only with --prices)."""
    def price(p):
        return None if p is None else {"usd": p.usd, "unit": p.unit, "fetched": p.fetched, "sku": p.sku}
    return {"region": quote.region, "instances": {t: price(p) for t, p in quote.instances.items()},
            "sagemaker": {t: price(p) for t, p in quote.sagemaker.items()},
            "fsx": price(quote.fsx), "fsx_note": quote.fsx_note}


def _used_cidrs(exclude: Path | None = None) -> list[ipaddress.IPv4Network]:
    return [cidr for _, cidr in neighbours.vpc_cidrs(config.projects_dir(), exclude)]


def free_cidr(used: list[ipaddress.IPv4Network], prefix: int = 16) -> str:
    """The first 10.x.0.0/16 (then 172.16-31, then 192.168) that overlaps none of ``used``."""
    for space in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"):
        for candidate in ipaddress.IPv4Network(space).subnets(new_prefix=max(prefix, ipaddress.IPv4Network(space).prefixlen)):
            if not any(candidate.overlaps(u) for u in used):
                return str(candidate)
    raise ValueError("no free private /16 left")


def new(
    name: str = typer.Argument(..., help="DNS-safe name of the new project."),
    from_: str = typer.Option("default", "--from", help="Project to copy (name or path)."),
    output: Output = OUTPUT_OPT,
) -> None:
    """Write projects/NAME.yaml from another project, with its own name, tags and a free VPC CIDR."""
    target = config.projects_dir() / f"{name}.yaml"
    if not re.fullmatch(config.DNS_NAME, name):
        err.print(f"error: {name!r} is not a valid project name (hint: lowercase letters, digits and '-', "
                  "starting with a letter, 2-32 characters)", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(2)
    if target.exists():
        err.print(f"error: {target} already exists; nothing written (hint: pick another name or edit that file)",
                  highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(1)
    source, _, _ = _load(_example_or(from_), output)
    shipped = source.file is not None and source.file.resolve() == config.shipped_default().resolve()
    origin = "fmcluster's default project" if shipped else str(source.file)
    text, cidr = copy_project(source.file.read_text(encoding="utf-8"), name,  # type: ignore[union-attr]
                              f"# fmcluster project {name}, created from {origin}\n")
    config.parse(text, target)  # refuse to write a file we could not read back
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    if output is Output.json:
        print(json.dumps({"ok": True, "file": str(target), "vpc_cidr": cidr}))
    else:
        out.print(f"wrote {target} (VPC {cidr or 'existing'})", highlight=False, markup=False, soft_wrap=True)


def _example_or(ref: str) -> str:
    """``--from NAME``: a project under projects/ first, then an example of that name (``examples/NAME.yaml`` of
    the folder fmcluster runs in or of its checkout)."""
    if Path(ref).suffix in (".yaml", ".yml") or "/" in ref or (config.projects_dir() / f"{ref}.yaml").exists():
        return ref
    for folder in (Path.cwd() / "examples", Path(__file__).resolve().parents[2] / "examples"):
        if (folder / f"{ref}.yaml").is_file():
            return str(folder / f"{ref}.yaml")
    return ref


def _mapping_indent(text: str) -> int:
    """How far a file indents a mapping under its key (the most common step; 2 when it never does)."""
    steps: dict[int, int] = {}
    previous: tuple[int, str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        depth = len(line) - len(line.lstrip(" "))
        if previous and previous[1].endswith(":") and not previous[1].startswith("- ") and not stripped.startswith("-") \
                and depth > previous[0]:
            steps[depth - previous[0]] = steps.get(depth - previous[0], 0) + 1
        previous = (depth, stripped.split(" #")[0].rstrip())
    return max(steps, key=lambda k: steps[k]) if steps else 2


def copy_project(text: str, name: str, header: str) -> tuple[str, str | None]:
    """The project file ``text`` with its own name, ``tags.project`` and a free VPC CIDR, its comments kept.

    A round trip through ruamel.yaml keeps comments, key order, quoting and indentation; only the
    three values change (a missing ``tags`` or ``network`` section is added). Returns the text and
    the new VPC CIDR (None for an existing VPC).
    """
    _, sequence, offset = load_yaml_guess_indent(text)
    rt = YAML()
    rt.preserve_quotes = True
    rt.width = 4096  # never re-wrap a long line
    rt.indent(mapping=_mapping_indent(text), sequence=sequence or 2, offset=offset or 0)
    data = rt.load(text)
    data["name"] = name
    if not isinstance(data.get("tags"), dict):
        data["tags"] = CommentedMap()
    data["tags"]["project"] = name
    network = data.get("network")
    if not isinstance(network, dict):
        network = CommentedMap()
        if "network" in data:
            data["network"] = network
        else:
            data.insert(list(data).index("compute_groups") if "compute_groups" in data else len(data), "network", network)
    cidr = None
    if "existing" not in network:
        prefix = ipaddress.IPv4Network(network.get("vpc_cidr") or config.Network().vpc_cidr).prefixlen
        cidr = network["vpc_cidr"] = free_cidr(_used_cidrs(), prefix)
    stream = io.StringIO()
    rt.dump(data, stream)
    return header + stream.getvalue(), cidr
