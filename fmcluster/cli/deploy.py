"""``fmcluster deploy PROJECT [cdk deploy options]``: the newcomer's deploy, guarded.

1. validate the project file (exit 2 on a bad file, as ``fmcluster validate``);
2. synthesize it as ``cdk deploy`` will (:func:`fmcluster.stacks.app.synthesize`);
3. read the deployed template of each of its stacks (CloudFormation ``GetTemplate``; a stack not deployed yet has
   none: a first deploy compares with nothing);
4. run the replacement guard on them exactly as ``fmcluster plan --against`` does (:func:`fmcluster.guard.compare`):
   a change that would replace, shrink or orphan stored data, or that CloudFormation would refuse (a custom-named
   resource), exits 3 unless ``--allow-replace``;
5. run the real ``cdk deploy -c project=PROJECT`` with every other argument as given, and exit with its status.

``cdk deploy`` keeps working for those who want it; it runs no guard.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import typer

from fmcluster import guard
from fmcluster.contracts import STACKS
from fmcluster.cli.awserrors import account_errors
from fmcluster.cli.project import PROJECT_ARG, Output, _load, err, out, refuse_replacements

CDK_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


def aws(loaded: Any) -> Any:
    """This command's AWS session (:mod:`fmcluster.aws.session`: its Region, bounded waits and one-line errors)."""
    from fmcluster.aws.session import aws_session  # boto3 loads only for the commands that call AWS

    return aws_session(loaded.project, command="deploy")


def cdk_command(project: str, args: list[str]) -> tuple[list[str], Path]:
    """``cdk deploy -c project=PROJECT ARGS`` with the project's CDK CLI, and the folder holding cdk.json to run it in."""
    base = Path.cwd()
    if not (base / "cdk.json").is_file():  # else the checkout fmcluster runs from
        base = Path(__file__).resolve().parents[2]
    local = base / "node_modules" / ".bin" / "cdk"
    cdk = str(local) if local.exists() else shutil.which("cdk")
    if cdk is None:
        err.print("error: the AWS CDK CLI is not installed (hint: `npm ci` in the fmcluster checkout, or "
                  "`npm install -g aws-cdk`)", highlight=False, markup=False)
        raise typer.Exit(1)
    ref = str(Path(project).resolve()) if Path(project).is_file() else project
    return [cdk, "deploy", "-c", f"project={ref}", *args], base


def cdk_context(args: list[str]) -> dict[str, str]:
    """The ``-c KEY=VALUE`` / ``--context KEY=VALUE`` pairs among ``cdk deploy``'s arguments, which the app reads
    (``protect``, ``nag``, ...): the guard synthesizes with them, so it judges the templates cdk deploys."""
    found: dict[str, str] = {}
    for i, arg in enumerate(args):
        value = None
        if arg in ("-c", "--context") and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--context="):
            value = arg.removeprefix("--context=")
        if value is not None and "=" in value:
            key, _, val = value.partition("=")
            found[key] = val
    return found


def deploy(
    ctx: typer.Context,
    project: str = PROJECT_ARG,
    allow_replace: bool = typer.Option(False, "--allow-replace",
                                       help="Report what would replace stored data, then deploy anyway."),
) -> None:
    """Validate, refuse what would replace stored data in the deployed stacks, then run `cdk deploy`.

    Every other option goes to `cdk deploy` as given (e.g. `--all --require-approval never`). Exit 2 for a bad
    project file, 3 when the deployed stacks would lose data (unless --allow-replace), else cdk's exit status.
    """
    loaded, _, _ = _load(project, Output.text)
    # Heavy: CDK (and jsii's Node process) load only for the comparison.
    from fmcluster.stacks.app import synthesize

    with tempfile.TemporaryDirectory() as tmp:
        new = synthesize(project, Path(tmp) / "cdk.out", cdk_context(list(ctx.args)))
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
        out.print(f"deployed stacks {', '.join(sorted(old))}: no file system, association, bucket or workspace "
                  "would be replaced" if old else "no stack of this project is deployed yet: nothing to compare",
                  highlight=False, soft_wrap=True)
    command, cwd = cdk_command(project, list(ctx.args))
    out.print(f"$ {' '.join(command)}", highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(subprocess.run(command, cwd=cwd, env=os.environ.copy(), check=False).returncode)
