"""The ``fmcluster`` command. Only ``deploy``, ``destroy``, ``preflight``, ``status``, ``connect``, ``capacity search``,
``dashboards push``, ``hyperpod status``, ``parallelcluster config --from-stacks`` and ``plan --prices`` call AWS, each
through the one session of :mod:`fmcluster.aws.session` and failing with one line (:mod:`fmcluster.cli.awserrors`);
everything else works offline."""

from __future__ import annotations

import sys
from importlib.metadata import version

import typer
import typer.core

from fmcluster.cli import (
    acceptance,
    bootstrap,
    capacity,
    connect,
    dashboards,
    deploy,
    destroy,
    diagram,
    hyperpod,
    hyperpod_eks,
    parallelcluster,
    preflight,
    project,
    status,
)
from fmcluster.cli.project import REPLACEMENT_EXIT
from fmcluster.errors import ConfigError

__all__ = ["REPLACEMENT_EXIT", "app", "main"]

_type_of = typer.core.TyperOption.display_type_rich


def _flags_show_no_type(self: typer.core.TyperOption, ctx: object) -> str | None:
    """typer 0.29 prints a type beside every option, ``<bool>`` beside a flag that takes no value: none for flags."""
    return None if self.is_flag else _type_of(self, ctx)


typer.core.TyperOption.display_type_rich = _flags_show_no_type  # type: ignore[method-assign]

app = typer.Typer(help="fmcluster: one YAML file per project -> a GPU training cluster on AWS.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)


def _version(value: bool) -> None:
    if value:
        print(f"fmcluster {version('fmcluster')}")  # the installed distribution's, as pip shows it
        raise typer.Exit()


@app.callback()
def _root(_: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit.")) -> None:
    """fmcluster: one YAML file per project -> a GPU training cluster on AWS."""


@app.command("help")
def help_command(ctx: typer.Context,
                 command: list[str] = typer.Argument(None, help="A command (and subcommand) to explain.")) -> None:
    """Show the help of fmcluster, or of a command: `fmcluster help plan`, `fmcluster help bootstrap render`."""
    root = ctx.find_root()
    target, parent = root.command, root
    for word in command or []:
        group = hasattr(target, "get_command")  # a group (typer 0.29 carries its own click: no isinstance)
        found = target.get_command(ctx, word) if group else None
        if found is None:
            names = ", ".join(sorted(target.list_commands(ctx))) if group else ""
            print(f"error: no command {word!r}" + (f" (commands: {names})" if names else ""), file=sys.stderr)
            raise typer.Exit(2)
        target = found
    with target.make_context(" ".join(command or []) or "fmcluster", [], parent=parent if command else None,
                             resilient_parsing=True) as sub:
        print(target.get_help(sub))


app.command()(project.validate)
app.command()(project.plan)
app.command()(project.new)
app.command(context_settings=deploy.CDK_CONTEXT)(deploy.deploy)
app.command()(destroy.destroy)
app.command()(preflight.preflight)
app.command()(status.status)
app.command()(connect.connect)
app.command()(diagram.diagram)
app.add_typer(bootstrap.app, name="bootstrap", help="Node bootstrap: pinned versions, rendered bundles.")
app.add_typer(dashboards.dashboards_app, name="dashboards")
app.add_typer(parallelcluster.app, name="parallelcluster", help="ParallelCluster: write cluster.yaml.")
app.add_typer(hyperpod.app, name="hyperpod", help="SageMaker HyperPod: cluster and node health.")
app.add_typer(hyperpod_eks.app, name="hyperpod-eks", help="SageMaker HyperPod on EKS: fetch its Helm chart.")
app.add_typer(capacity.app, name="capacity", help="Capacity blocks: search offerings (buys nothing).")
app.add_typer(acceptance.app, name="acceptance", help="After deploy: NCCL, EFA and GPU checks as jobs, and their report.")


def main() -> None:
    try:
        app()
    except ConfigError as exc:  # a safety net: commands report their own, this keeps tracebacks away
        print(exc.report(), file=sys.stderr)
        sys.exit(exc.exit_code)
