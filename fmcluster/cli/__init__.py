"""The ``fmcluster`` command. Only ``deploy``, ``destroy``, ``preflight``, ``status``, ``connect``, ``capacity search``,
``dashboards push``, ``hyperpod status``, ``parallelcluster config --from-stacks`` and ``plan --prices`` call AWS, each
through the one session of :mod:`fmcluster.aws.session` and failing with one line (:mod:`fmcluster.cli.awserrors`);
everything else works offline."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, MutableMapping
from importlib.metadata import version

import typer
import typer.core

from fmcluster.cli.project import REPLACEMENT_EXIT
from fmcluster.errors import ConfigError

__all__ = ["REPLACEMENT_EXIT", "app", "main"]

_type_of = typer.core.TyperOption.display_type_rich


def _flags_show_no_type(self: typer.core.TyperOption, ctx: object) -> str | None:
    """typer 0.29 prints a type beside every option, ``<bool>`` beside a flag that takes no value: none for flags."""
    return None if self.is_flag else _type_of(self, ctx)


typer.core.TyperOption.display_type_rich = _flags_show_no_type  # type: ignore[method-assign]

COMMANDS: dict[str, tuple[str, str, dict]] = {
    "validate": ("project", "validate", {}),
    "plan": ("project", "plan", {}),
    "new": ("project", "new", {}),
    "deploy": ("deploy", "deploy", {"context_settings": "CDK_CONTEXT"}),
    "destroy": ("destroy", "destroy", {}),
    "preflight": ("preflight", "preflight", {}),
    "status": ("status", "status", {}),
    "connect": ("connect", "connect", {}),
    "diagram": ("diagram", "diagram", {}),
}
"""Command -> (module under ``fmcluster.cli``, function, what ``app.command`` takes: a string names a value of the
module). In help's order."""

GROUPS: dict[str, tuple[str, str, str | None]] = {
    "bootstrap": ("bootstrap", "app", "Node bootstrap: pinned versions, rendered bundles."),
    "dashboards": ("dashboards", "dashboards_app", None),
    "parallelcluster": ("parallelcluster", "app", "ParallelCluster: write cluster.yaml."),
    "hyperpod": ("hyperpod", "app", "SageMaker HyperPod: cluster and node health."),
    "hyperpod-eks": ("hyperpod_eks", "app", "SageMaker HyperPod on EKS: fetch its Helm chart."),
    "capacity": ("capacity", "app", "Capacity blocks: search offerings (buys nothing)."),
    "acceptance": ("acceptance", "app", "After deploy: NCCL, EFA and GPU checks as jobs, and their report."),
}
"""Command group -> (module under ``fmcluster.cli``, its Typer, the help shown for it, else the group's own)."""


def _command(name: str) -> typer.core.TyperCommand | typer.core.TyperGroup:
    """The click command of one entry of :data:`COMMANDS` or :data:`GROUPS`, its module imported now."""
    one = typer.Typer(add_completion=False)
    if name in COMMANDS:
        module_name, function, settings = COMMANDS[name]
        module = importlib.import_module(f"fmcluster.cli.{module_name}")
        kwargs = {key: getattr(module, value) for key, value in settings.items()}
        one.command(name, **kwargs)(getattr(module, function))
        return typer.main.get_command(one)
    module_name, attribute, help_text = GROUPS[name]
    module = importlib.import_module(f"fmcluster.cli.{module_name}")
    one.add_typer(getattr(module, attribute), name=name, **({"help": help_text} if help_text else {}))
    return typer.main.get_command(one).commands[name]


class _Commands(MutableMapping):
    """The root's commands: every name known from the start (help lists them all, a typo is matched against them),
    each made on first use (:func:`_command`). A command imports only its own modules: ``fmcluster status`` no longer
    loads the Kubernetes objects, Grafana's client or the bootstrap renderers (~1 s of every command's start)."""

    def __init__(self, made: dict, lazy: list[str]) -> None:
        self.made = dict(made)
        self.lazy: dict[str, Callable[[], object]] = {name: (lambda name=name: _command(name)) for name in lazy}

    def __getitem__(self, name: str) -> object:
        if name not in self.made and name in self.lazy:
            self.made[name] = self.lazy[name]()
        return self.made[name]

    def __setitem__(self, name: str, command: object) -> None:
        self.made[name] = command

    def __delitem__(self, name: str) -> None:
        self.made.pop(name, None)
        self.lazy.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        yield from self.made
        yield from (name for name in self.lazy if name not in self.made)

    def __len__(self) -> int:
        return len(set(self.made) | set(self.lazy))


class _Root(typer.core.TyperGroup):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.commands = _Commands(self.commands, [*COMMANDS, *GROUPS])


app = typer.Typer(help="fmcluster: one YAML file per project -> a GPU training cluster on AWS.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False, cls=_Root)


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



def main() -> None:
    try:
        app()
    except ConfigError as exc:  # a safety net: commands report their own, this keeps tracebacks away
        print(exc.report(), file=sys.stderr)
        sys.exit(exc.exit_code)
