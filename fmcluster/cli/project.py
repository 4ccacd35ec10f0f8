"""``fmcluster validate``, ``plan`` and ``new``: check, show and create project files. Touches no AWS."""

from __future__ import annotations

import ipaddress
import json
import re
from enum import Enum
from pathlib import Path

import typer
import yaml
from rich.console import Console
from rich.table import Table

from fmcluster import checks, config, guard
from fmcluster.errors import ConfigError, Problem
from fmcluster.plan import Plan

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
                err.print(f"[yellow]warning[/]: {problem.format()}", highlight=False, markup=True, soft_wrap=True)
            for problem in exc.problems:
                err.print(f"[red]error[/]: {problem.format()}", highlight=False, soft_wrap=True)
            n = len(exc.problems)
            err.print(f"{n} error{'s' if n != 1 else ''}; fix the file and run again.", highlight=False)
        raise typer.Exit(ConfigError.exit_code) from None
    if output is Output.text:
        for problem in warnings:
            err.print(f"[yellow]warning[/]: {problem.format()}", highlight=False, soft_wrap=True)
    return loaded, plan, warnings


def validate(project: str = PROJECT_ARG, output: Output = OUTPUT_OPT) -> None:
    """Check a project file's structure and meaning. Exit code 2 when it has errors."""
    loaded, _, warnings = _load(project, output)
    if output is Output.json:
        print(json.dumps({"ok": True, "project": loaded.project.name, "problems": [w.as_dict() for w in warnings]}, indent=2))
    else:
        out.print(f"{loaded.file}: ok ({len(warnings)} warning{'s' if len(warnings) != 1 else ''})", highlight=False)


def _num(value: float | None, fmt: str = "{:,.1f}") -> str:
    return "unknown" if value is None else fmt.format(value)


REPLACEMENT_EXIT = 3


def plan(
    project: str = PROJECT_ARG,
    output: Output = OUTPUT_OPT,
    against: str | None = typer.Option(
        None, "--against", help="The project file as deployed now: refuse changes that would replace stored data."),
    allow_replace: bool = typer.Option(False, "--allow-replace", help="Report replacements but do not refuse them."),
) -> None:
    """Show what a project builds: nodes, GPUs, PFLOPS, HBM, EFA, addresses, storage and checkpoint times.

    With --against OLD, also compare what both files synthesize and exit 3 if deploying this
    one would replace a file system, data repository association, bucket or metrics workspace.
    """
    loaded, the_plan, warnings = _load(project, output)
    replacements = None
    if against is not None:
        _load(against, output)  # report a broken OLD file as such
        # Heavy: CDK (and jsii's Node process) load only when a comparison needs synthesis.
        from fmcluster.stacks.app import synthesize

        replacements = guard.check(project, against, synthesize)
    if output is Output.json:
        data = the_plan.as_dict()
        data["warnings"] = [w.as_dict() for w in warnings]
        if replacements is not None:
            data["replacements"] = [r.__dict__ for r in replacements]
        print(json.dumps(data, indent=2))
    else:
        print_plan(the_plan)
    if replacements:
        for r in replacements:
            err.print(f"[red]replaces[/]: {r.format()}", highlight=False, soft_wrap=True)
        if not allow_replace:
            err.print("refused: deploying this would replace stored data (hint: keep those settings, or pass "
                      "--allow-replace once you have copied the data off)", highlight=False, soft_wrap=True)
            raise typer.Exit(REPLACEMENT_EXIT)
    elif replacements is not None and output is Output.text:
        out.print(f"against {against}: no file system, association, bucket or workspace would be replaced",
                  highlight=False)


def print_plan(the_plan: Plan, console: Console | None = None) -> None:
    console = console or out
    compute = Table(title=f"{the_plan.project} in {the_plan.availability_zone_id}: compute", title_justify="left")
    for column in ("group", "type", "nodes", "capacity", "GPUs", "BF16 PF", "HBM TB"):
        compute.add_column(column, justify="left" if column in ("group", "type", "capacity") else "right")
    network = Table(title="EFA and addresses (per node)", title_justify="left")
    for column in ("group", "interfaces", "EFA Gbps", "of spec", "IPs/node", "IPs"):
        network.add_column(column, justify="left" if column == "group" else "right")
    for g in the_plan.groups:
        compute.add_row(
            g.name, g.instance_type, str(g.count), g.capacity + ("" if g.placement_group else " (no PG)"),
            f"{g.gpus:,} {g.gpu_model}", _num(g.bf16_pflops), _num(None if g.hbm_gb is None else g.hbm_gb / 1000, "{:,.2f}"),
        )
        network.add_row(
            g.name, f"1 ENA + {g.efa_interfaces} EFA", f"{g.efa_gbps_exposed:,.0f}/{g.efa_gbps_spec:,}",
            f"{g.efa_fraction:.0%}", str(g.ips_per_node), f"{g.ips:,}",
        )
    compute.add_section()
    compute.add_row("total", "", str(the_plan.nodes), "", f"{the_plan.gpus:,}", _num(the_plan.bf16_pflops),
                    _num(None if the_plan.hbm_gb is None else the_plan.hbm_gb / 1000, "{:,.2f}"))
    console.print(compute)
    console.print(network)
    net = the_plan.network
    subnet = net.compute_subnet_cidr or "imported subnet"
    size = "unknown size" if net.ips_usable is None else f"{net.ips_usable:,} usable"
    console.print(
        f"compute subnet {subnet} ({size}); needs {net.ips_needed:,} addresses "
        f"(smallest that fits: /{net.smallest_prefix_that_fits})", highlight=False,
    )
    if net.public_subnet_cidr:
        console.print(f"VPC {net.vpc_cidr}, public subnet {net.public_subnet_cidr} (NAT gateway)", highlight=False)
    _print_storage(the_plan, console)
    if the_plan.bf16_pflops is None:
        console.print("unknown: a figure the catalog marks unconfirmed (FACTS.md); check DescribeInstanceTypes", highlight=False)


def _print_storage(the_plan: Plan, console: Console) -> None:
    st = the_plan.storage
    if not st.fsx:
        console.print("storage: no FSx for Lustre", highlight=False)
        return
    if not st.created:
        console.print("storage: an existing FSx for Lustre file system (its size is not planned here)", highlight=False)
        return
    table = Table(title="FSx for Lustre (MB = 10^6 B, GiB = 2^30 B, TiB = 2^40 B)", title_justify="left")
    for column in ("type", "capacity GiB", "MB/s per TiB", "aggregate GB/s", "per GPU MB/s", "checkpoint",
                   "write s", "restore s", "target s"):
        table.add_column(column, justify="left" if column == "type" else "right")
    table.add_row(
        st.deployment_type or "", f"{st.capacity_gib:,}" + (" (planned)" if st.sized_by_planner else ""),
        str(st.throughput_per_tib or 200), f"{st.aggregate_mb_s / 1000:,.2f}",
        _num(st.per_gpu_mb_s, "{:,.0f}"),
        "-" if st.checkpoint_bytes is None else f"{st.checkpoint_bytes / 10**12:,.2f} TB",
        _num(st.write_seconds, "{:,.0f}"), _num(st.restore_seconds, "{:,.0f}"),
        "-" if st.target_write_seconds is None else f"{st.target_write_seconds:g}",
    )
    console.print(table)


def _used_cidrs(exclude: Path | None = None) -> list[ipaddress.IPv4Network]:
    used = []
    for path in sorted(config.projects_dir().glob("*.yaml")):
        if exclude is not None and path.resolve() == exclude.resolve():
            continue
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            cidr = ((data.get("network") or {}).get("vpc_cidr")) or config.Network().vpc_cidr
            used.append(ipaddress.IPv4Network(cidr))
        except (yaml.YAMLError, ValueError, AttributeError, TypeError):
            continue  # a broken neighbour is reported when it is validated, not here
    return used


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
                  "starting with a letter, 2-32 characters)", highlight=False)
        raise typer.Exit(2)
    if target.exists():
        err.print(f"error: {target} already exists; nothing written (hint: pick another name or edit that file)",
                  highlight=False)
        raise typer.Exit(1)
    source, _, _ = _load(from_, output)
    data = yaml.safe_load(source.file.read_text(encoding="utf-8"))  # type: ignore[union-attr]
    data["name"] = name
    data.setdefault("tags", {})
    data["tags"] = {**(data["tags"] or {}), "project": name}
    network = data.setdefault("network", {}) or {}
    data["network"] = network
    if "existing" not in network:
        prefix = ipaddress.IPv4Network(network.get("vpc_cidr") or config.Network().vpc_cidr).prefixlen
        network["vpc_cidr"] = free_cidr(_used_cidrs(), prefix)
    text = f"# fmcluster project {name}, created from {source.file}\n" + yaml.safe_dump(data, sort_keys=False)
    config.parse(text, target)  # refuse to write a file we could not read back
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    if output is Output.json:
        print(json.dumps({"ok": True, "file": str(target), "vpc_cidr": data["network"].get("vpc_cidr")}))
    else:
        out.print(f"wrote {target} (VPC {data['network'].get('vpc_cidr', 'existing')})", highlight=False)
