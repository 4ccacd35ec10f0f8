"""``fmcluster parallelcluster config PROJECT``: write cluster.yaml for ``pcluster create-cluster``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
import yaml

from fmcluster import checks, config
from fmcluster.aws import StackOutputsError
from fmcluster.cli.awserrors import account_errors
from fmcluster.errors import ConfigError
from fmcluster.generate import parallelcluster as generate
from fmcluster.generate import placeholders
from fmcluster.plan import Plan

app = typer.Typer(help="AWS ParallelCluster: the cluster configuration fmcluster generates.", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """AWS ParallelCluster: the cluster configuration fmcluster generates."""


def render(loaded: config.LoadedProject, plan: Plan, *, cfn: Any | None = None, region: str | None = None) -> str:
    """cluster.yaml text: placeholders (``cfn`` None) or the deployed stacks' real IDs."""
    name = plan.project
    if cfn is None:
        network, storage = placeholders.NETWORK, placeholders.storage(plan.storage)
        bootstrap, policy = placeholders.bootstrap_uri(name), placeholders.node_policy_arn(name)
        args = placeholders.bootstrap_args(name)
        origin = "placeholders (all-zero IDs): run with --from-stacks after `npx cdk deploy` for real ones"
    else:
        # Heavy, and needed only here: botocore loads for the commands that call AWS.
        from fmcluster.aws.stacks import contracts_from_stacks

        network, storage, bootstrap, args, policy = contracts_from_stacks(cfn, name, plan.storage)
        origin = f"the outputs of the deployed {name}-network, -storage and -cluster stacks"
    cluster = plan.cluster
    data = generate.cluster_config(cluster, network=network, storage=storage, bootstrap_uri=bootstrap,
                                   bootstrap_args=args, node_policy_arns=[policy], region=region or cluster.region)
    header = (f"# ParallelCluster {cluster.pcluster.version} configuration for fmcluster project "
              f"{name}, generated from {loaded.file or 'the project'}.\n# IDs: {origin}.\n"
              f"# Create: pcluster create-cluster --cluster-name {cluster.pcluster_name} "
              "--cluster-configuration cluster.yaml\n")
    return header + yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


@app.command("config")
def config_command(
    project: str = typer.Argument(..., help="Project name (under projects/) or path to a project file."),
    out: Path = typer.Option(Path("cluster.yaml"), "--out", "-o", help="Where to write the configuration."),
    from_stacks: bool = typer.Option(False, "--from-stacks",
                                     help="Read real IDs from the deployed stacks' outputs (needs AWS credentials)."),
    region: str | None = typer.Option(None, "--region", help="AWS Region of the stacks (default: the project's)."),
) -> None:
    """Write the cluster configuration for `pcluster create-cluster` (placeholders unless --from-stacks)."""
    try:
        loaded = config.load(project)
        plan, _ = checks.validate(loaded)
        if loaded.project.orchestrator.type != "parallelcluster":
            line = loaded.line(("orchestrator", "type"))
            where = f"{loaded.file}:{line}" if line else str(loaded.file)
            typer.echo(f"{where}  orchestrator.type  is {loaded.project.orchestrator.type!r}, not 'parallelcluster' "
                       "(hint: set orchestrator.type: parallelcluster)", err=True)
            raise typer.Exit(2)
        if from_stacks:
            with account_errors():
                # heavy, and needed only with --from-stacks
                from fmcluster.aws.session import aws_session

                session = aws_session(loaded.project, region=region,
                                      command="parallelcluster config --from-stacks")
                with session.errors():
                    text = render(loaded, plan, cfn=session.client("cloudformation"), region=session.region)
        else:
            text = render(loaded, plan, region=region)
    except ConfigError as exc:
        typer.echo(exc.report(), err=True)
        raise typer.Exit(exc.exit_code) from None
    except StackOutputsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    out.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {out}")


if __name__ == "__main__":
    app()
