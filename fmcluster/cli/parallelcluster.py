"""``fmcluster parallelcluster config PROJECT``: write cluster.yaml, and say what to do with it: ``pcluster
create-cluster`` only when ``cdk deploy`` does not create the cluster itself (``create_cluster: false``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
import yaml
from rich.table import Table

from fmcluster import checks, config
from fmcluster.aws import StackOutputsError
from fmcluster.cli.awserrors import account_errors
from fmcluster.cli.outdir import default_out
from fmcluster.cli.plantext import row
from fmcluster.contracts import stack_name
from fmcluster.errors import ConfigError
from fmcluster.generate import parallelcluster as generate
from fmcluster.generate import placeholders
from fmcluster.plan import Plan

app = typer.Typer(help="AWS ParallelCluster: the cluster configuration fmcluster generates.", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """AWS ParallelCluster: the cluster configuration fmcluster generates."""


def render(loaded: config.LoadedProject, plan: Plan, *, cfn: Any | None = None, region: str | None = None,
           target: str = "cluster.yaml") -> str:
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
    accounting = None
    if cluster.accounting_store == "database":  # SlurmSettings.Database from NAME-accounting
        if cfn is None:
            accounting = placeholders.accounting(name)
        else:
            # Heavy, and needed only here: botocore loads for the commands that call AWS.
            from fmcluster.aws.stacks import accounting_contract

            accounting = accounting_contract(cfn, name)
            origin = origin.replace(" and -cluster", ", -accounting and -cluster")
    data = generate.cluster_config(cluster, network=network, storage=storage, bootstrap_uri=bootstrap,
                                   bootstrap_args=args, node_policy_arns=[policy], region=region or cluster.region,
                                   accounting=accounting)
    header = (f"# ParallelCluster {cluster.pcluster.version} configuration for fmcluster project "
              f"{name}, generated from {loaded.file or 'the project'}.\n# IDs: {origin}.\n"
              + "".join(f"# {line}\n" for line in next_steps(name, cluster.pcluster_name,
                                                              cluster.pcluster.create_cluster, target)))
    return header + yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def next_steps(project: str, cluster_name: str, created_by_cdk: bool, target: str = "cluster.yaml") -> list[str]:
    """What to do with the file: for a cluster `cdk deploy` creates, never `create-cluster` (a second cluster).

    The pcluster commands and flags are ParallelCluster 3's (`pcluster describe-cluster --help`,
    `pcluster update-cluster --help` of aws-parallelcluster 3.16.1: -n/--cluster-name, -c/--cluster-configuration,
    --dryrun DRYRUN)."""
    name = f"--cluster-name {cluster_name}"
    if created_by_cdk:
        return [f"`cdk deploy` creates and updates this cluster (stack {stack_name(project, 'cluster')}, "
                "create_cluster: true):",
                "do not run pcluster create-cluster with this file; it would make a second cluster.",
                f"Inspect: pcluster describe-cluster {name}",
                f"Compare: pcluster update-cluster {name} --cluster-configuration {target} --dryrun true",
                "Change it by editing the project file and running `cdk deploy` again."]
    return [f"Create: pcluster create-cluster {name} --cluster-configuration {target}",
            f"Then: pcluster describe-cluster {name}; after a change, "
            f"pcluster update-cluster {name} --cluster-configuration {target}"]


@app.command("config")
def config_command(
    project: str = typer.Argument(..., help="Project name (under projects/) or path to a project file."),
    out: str | None = typer.Option(None, "--out", help="Where to write the configuration (default: "
                                   "out/PROJECT/cluster.yaml); `-` for stdout."),
    from_stacks: bool = typer.Option(False, "--from-stacks",
                                     help="Read real IDs from the deployed stacks' outputs (needs AWS credentials)."),
    region: str | None = typer.Option(None, "--region", help="AWS Region of the stacks (default: the project's)."),
) -> None:
    """Write the cluster configuration (placeholders unless --from-stacks) and say what to do with it.

    With create_cluster: true (the default) `cdk deploy` creates the cluster: the file is for
    `pcluster describe-cluster` / `update-cluster --dryrun`, never `create-cluster`.
    """
    try:
        loaded = config.load(project)
        plan, _ = checks.validate(loaded)
        if loaded.project.orchestrator.type != "parallelcluster":
            line = loaded.line(("orchestrator", "type"))
            where = f"{loaded.file}:{line}" if line else str(loaded.file)
            typer.echo(f"{where}  orchestrator.type  is {loaded.project.orchestrator.type!r}, not 'parallelcluster' "
                       "(hint: set orchestrator.type: parallelcluster)", err=True)
            raise typer.Exit(2)
        out = out or str(default_out(loaded.project.name, "cluster.yaml"))
        if from_stacks:
            with account_errors():
                # heavy, and needed only with --from-stacks
                from fmcluster.aws.session import aws_session

                session = aws_session(loaded.project, region=region,
                                      command="parallelcluster config --from-stacks")
                with session.errors():
                    text = render(loaded, plan, cfn=session.client("cloudformation"), region=session.region,
                                  target="cluster.yaml" if out == "-" else out)
        else:
            text = render(loaded, plan, region=region, target="cluster.yaml" if out == "-" else out)
    except ConfigError as exc:
        typer.echo(exc.report(), err=True)
        raise typer.Exit(exc.exit_code) from None
    except StackOutputsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    if out == "-":
        sys.stdout.write(text)
        return
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    steps = next_steps(plan.project, plan.cluster.pcluster_name, plan.cluster.pcluster.create_cluster, out)
    typer.echo(f"wrote {target.resolve()}: ParallelCluster configuration of {plan.cluster.pcluster_name}")
    typer.echo("\n".join(steps))


if __name__ == "__main__":
    app()


def plan_rows(plan: Plan, data: dict, lines: Table) -> None:
    """The plan's scheduler section as text (:data:`fmcluster.cli.planservices.ROWS`)."""
    created = ("created by cdk deploy" if data["created_by_cdk_deploy"]
               else "cluster.yaml only (create_cluster: false)")
    row(lines, "Slurm", f"AWS ParallelCluster {data['version']}, cluster {data['cluster_name']}, {created}")
    head = data["head_node"]
    row(lines, "head node", f"{head['instance_type']}, {head['root_volume_gib']} GiB root ({head['os']})")
    if data["login_nodes"] is not None:
        row(lines, "login nodes", f"{data['login_nodes']['count']} x {data['login_nodes']['instance_type']}")
    for queue in data["queues"]:
        nodes = ", ".join(f"{g['count']} x {g['instance_type']} ({g['static']} static)" for g in queue["groups"])
        row(lines, f"queue {queue['name']}", f"{nodes}; {queue['capacity_type']}")
    row(lines, "on destroy", "the cluster is deleted with its stack" if data["deletion_policy"] == "Delete"
        else "the cluster is kept (Retain): delete it with pcluster delete-cluster")
