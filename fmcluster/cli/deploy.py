"""``fmcluster deploy PROJECT [cdk deploy options]``: the newcomer's deploy, guarded, of exactly what was guarded.

1. validate the project file (exit 2 on a bad file, as ``fmcluster validate``);
2. synthesize it once, as ``cdk deploy`` would (:func:`fmcluster.stacks.assembly.synthesize_assembly`: the app of
   ``app.py``, cdk.json's context, every ``-c``/``--context`` value given, the CDK CLI's own synthesis context), into
   the ``-o/--output`` folder given, else a temporary folder removed afterwards;
3. read the deployed template of each of its stacks (CloudFormation ``GetTemplate``; a stack not deployed yet has
   none: a first deploy compares with nothing);
4. run the replacement guard on that assembly exactly as ``fmcluster plan --against`` does
   (:func:`fmcluster.guard.compare`): a change that would replace, shrink or orphan stored data, or that
   CloudFormation would refuse (a custom-named resource), exits 3 unless ``--allow-replace``;
5. compare the deployed ParallelCluster configuration with the new one (:mod:`fmcluster.generate.pcluster_update`):
   a change ParallelCluster refuses whatever the fleet's state exits 3; one it applies only with the compute fleet
   stopped, on a fleet that is not, exits 3 with the commands to run, or with ``--stop-fleet`` names the running
   jobs, asks (unless ``--yes``), deploys the other stacks with the fleet running, stops it, deploys ``NAME-cluster``
   alone and starts it again (:mod:`fmcluster.cli.deployfleet`);
6. run the real ``cdk deploy --app ASSEMBLY`` with every other argument as given, and exit with its status.

``cdk deploy`` keeps working for those who want it; it runs no guard.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from fmcluster import guard
from fmcluster.cli import deployfleet
from fmcluster.cli.awserrors import account_errors
from fmcluster.cli.project import PROJECT_ARG, Output, _load, err, out, refuse_replacements
from fmcluster.contracts import STACKS, stack_name
from fmcluster.errors import ConfigError
from fmcluster.generate import pcluster_update

CDK_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}
INPUT_EXIT = 2
SYNTH_FLAGS = ("path-metadata", "asset-metadata", "version-reporting", "staging")
"""``cdk deploy`` options that change what the app synthesizes (``--no-...`` negates each)."""


def aws(loaded: Any) -> Any:
    """This command's AWS session (:mod:`fmcluster.aws.session`: its Region, bounded waits and one-line errors)."""
    from fmcluster.aws.session import aws_session  # boto3 loads only for the commands that call AWS

    return aws_session(loaded.project, command="deploy")


def _bad(message: str) -> None:
    err.print(f"error: {message}", highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(INPUT_EXIT)


def cdk_binary() -> tuple[str, Path]:
    """The project's CDK CLI, and the folder holding cdk.json to run it in."""
    base = Path.cwd()
    if not (base / "cdk.json").is_file():  # else the checkout fmcluster runs from
        base = Path(__file__).resolve().parents[2]
    local = base / "node_modules" / ".bin" / "cdk"
    cdk = str(local) if local.exists() else shutil.which("cdk")
    if cdk is None:
        err.print("error: the AWS CDK CLI is not installed (hint: `npm ci` in the fmcluster checkout, or "
                  "`npm install -g aws-cdk`)", highlight=False, markup=False)
        raise typer.Exit(1)
    return cdk, base


def cdk_context(args: list[str]) -> dict[str, str]:
    """The ``-c KEY=VALUE`` / ``--context KEY=VALUE`` pairs among ``cdk deploy``'s arguments, which the app reads
    (``protect``, ``nag``, ...): the one synthesis takes them, so cdk deploys what the guard judged."""
    found: dict[str, str] = {}
    for i, arg in enumerate(args):
        value = None
        if arg in ("-c", "--context") and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(("--context=", "-c=")):
            value = arg.partition("=")[2]
        if value is not None and "=" in value:
            key, _, val = value.partition("=")
            found[key] = val
    return found


def split_args(args: list[str]) -> tuple[dict[str, str], dict[str, bool], Path | None, list[str]]:
    """The user's ``cdk deploy`` arguments as (context, synthesis flags, ``-o`` folder, what cdk deploy gets).

    ``-o/--output`` names where the assembly is written and kept (cdk deploy reads it with ``--app``); ``--app``
    and ``-c project=`` are refused: fmcluster gives the app its project and cdk deploy its assembly."""
    context = cdk_context(args)
    if "project" in context:
        _bad(f"-c project={context['project']}: give the project as fmcluster deploy's PROJECT argument")
    flags: dict[str, bool] = {}
    outdir: Path | None = None
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.removeprefix("--").partition("=")[0]
        if name in ("app", "a") or arg.startswith("-a"):
            _bad(f"{arg}: fmcluster deploy synthesizes the project itself and gives cdk deploy that assembly")
        if arg in ("-o", "--output") or arg.startswith("--output="):
            value = args[i + 1] if "=" not in arg and i + 1 < len(args) else arg.partition("=")[2]
            if not value:
                _bad(f"{arg} needs a folder")
            outdir = Path(value)
            i += 1 if "=" in arg else 2
            continue
        flag = name.removeprefix("no-")
        if arg.startswith("--") and flag in SYNTH_FLAGS:
            flags[flag] = not name.startswith("no-") and arg.partition("=")[2].lower() not in ("false", "0")
        rest.append(arg)
        i += 1
    return context, flags, outdir, rest


@contextmanager
def assembly_dir(outdir: Path | None) -> Iterator[Path]:
    """Where the one synthesis goes: the ``-o`` folder (kept) or a temporary one, removed after cdk deploy."""
    if outdir is not None:
        if outdir.exists():
            if not (outdir / "manifest.json").is_file() and any(outdir.iterdir()):
                _bad(f"-o {outdir}: the folder exists and holds no cloud assembly; give a new or an assembly folder")
            shutil.rmtree(outdir)  # as cdk synth does: a stale stack or asset must not be deployed with the new ones
        yield outdir.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="fmcluster-deploy-") as tmp:
        yield Path(tmp) / "cdk.out"


def synthesize(project: str, where: Path, context: dict[str, str], flags: dict[str, bool]) -> Any:
    """The one synthesis (:func:`fmcluster.stacks.assembly.synthesize_assembly`), or exit 1 when cdk-nag refuses."""
    # Heavy: CDK (and jsii's Node process) load only for the deploy's synthesis.
    from fmcluster.stacks.assembly import cli_context, synthesize_assembly

    ref = str(Path(project).resolve()) if Path(project).is_file() else project
    try:
        return synthesize_assembly(ref, where, {**cli_context(flags), **context})
    except ConfigError as exc:  # validated above; a file changed under us
        err.print(exc.report(), highlight=False, markup=False)
        raise typer.Exit(exc.exit_code) from None
    except RuntimeError as exc:  # a validation plugin (cdk-nag) refused the templates; its report is above
        if "ValidationFailed" not in str(exc):
            raise
        err.print(f"synthesis stopped: {str(exc).splitlines()[0]}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(1) from None


def deploy(
    ctx: typer.Context,
    project: str = PROJECT_ARG,
    allow_replace: bool = typer.Option(False, "--allow-replace",
                                       help="Report what would replace stored data, then deploy anyway."),
    stop_fleet: bool = typer.Option(False, "--stop-fleet", help="When a ParallelCluster change applies only with the "
                                    "compute fleet stopped: name the running jobs, stop the fleet, deploy, start it."),
    yes: bool = typer.Option(False, "--yes", "-y", help="With --stop-fleet: do not ask before stopping the fleet."),
) -> None:
    """Validate, refuse what would replace stored data or fail as a ParallelCluster update, then run `cdk deploy`
    on the very assembly that was checked.

    Every other option goes to `cdk deploy` as given (e.g. `--all --require-approval never`; `-c` values also to the
    synthesis; `-o DIR` keeps the assembly there). Exit 2 for a bad project file or option, 3 when the deployed
    stacks would lose data (unless --allow-replace) or ParallelCluster would refuse the update (a change that needs
    the compute fleet stopped, unless --stop-fleet), else cdk's exit status.
    """
    loaded, _, _ = _load(project, Output.text)
    args = list(ctx.args)
    context, flags, outdir, rest = split_args(args)
    cdk, cwd = cdk_binary()
    with assembly_dir(outdir) as where:
        assembly = synthesize(project, where, context, flags)
        new = assembly.templates
        with account_errors():  # one line, exit 1 (the account or the network) or 2 (bad input)
            from fmcluster.aws.stacks import deployed_templates  # boto3, as above

            session = aws(loaded)
            with session.errors():
                # every stack the project can have, not only those this deploy builds: one it no longer builds stays
                # deployed (cdk never deletes it), and the guard says what that means (an accounting stack turned off)
                names = set(new) | {f"{loaded.project.name}-{role}" for role in STACKS}
                old = deployed_templates(session.client("cloudformation"), sorted(names))
            replacements = guard.compare(old, new)
            refuse_replacements(replacements, allow_replace)  # exit 3 here unless --allow-replace
            if not replacements:
                verdict = "no stack of this project is deployed yet: nothing to compare"
                if old:
                    verdict = (f"deployed stacks {', '.join(sorted(old))}: no file system, association, bucket or "
                               "workspace would be replaced")
                out.print(verdict, highlight=False, soft_wrap=True)
            updates = pcluster_update.template_updates(old, new)
            deployfleet.refuse_impossible(updates)  # exit 3: ParallelCluster refuses these at any fleet state
            command = [cdk, "deploy", "--app", str(where), *rest]
            again = [*(["--allow-replace"] if allow_replace else []), *args]  # the command to suggest, as given
            options, selected = deployfleet.split_selection(rest, list(new))
            cluster = stack_name(loaded.project.name, "cluster")
            with _fleet_errors():
                stop = [] if selected is not None and cluster not in selected else deployfleet.to_stop(
                    session, project, again, updates, stop=stop_fleet, yes=yes)
                if not stop:
                    raise typer.Exit(_cdk(command, cwd))
                # Only NAME-cluster's update needs the fleet stopped: the other stacks first (an accounting database
                # takes tens of minutes to create) with the fleet running, then the cluster stack alone, stopped
                others = [s for s in (selected or list(new)) if s != cluster]
                if others:
                    code = _cdk([cdk, "deploy", "--app", str(where), *options, "--exclusively", *others], cwd)
                    if code:
                        raise typer.Exit(code)  # the fleet was not touched
                with deployfleet.stopped(session, stop):
                    code = _cdk([cdk, "deploy", "--app", str(where), *options, "--exclusively", cluster], cwd)
    raise typer.Exit(code)


def _cdk(command: list[str], cwd: Path) -> int:
    out.print(f"$ {' '.join(command)}", highlight=False, markup=False, soft_wrap=True)
    return subprocess.run(command, cwd=cwd, env=cdk_env(), check=False).returncode


def cdk_env() -> dict[str, str]:
    """The CDK CLI's environment: this one, with this fmcluster's folder first on PATH. The CLI's asset publisher runs
    ``fmcluster bootstrap stage`` to stage the nodes' monitoring artefacts (fmcluster.bootstrap.staging); a virtual
    environment's or pipx's fmcluster sits beside its Python, which a user need not have activated."""
    env = os.environ.copy()
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), *filter(None, [env.get("PATH")])])
    return env


@contextmanager
def _fleet_errors() -> Iterator[None]:
    """A fleet that cannot be read, stopped or started: one line, exit 1."""
    from fmcluster.aws.fleet import FleetError  # boto3, as above

    try:
        yield
    except FleetError as exc:
        err.print(f"error: {exc} (hint: `pcluster describe-compute-fleet --cluster-name NAME` shows it; "
                  "`pcluster update-compute-fleet --status START_REQUESTED` starts it again)",
                  highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
