"""``fmcluster hyperpod status PROJECT``: the HyperPod cluster's state and node health per instance group."""

from __future__ import annotations

import typer
from rich.table import Table

from fmcluster import checks, config
from fmcluster.cli.awserrors import account_errors
from fmcluster.cli.plantext import row
from fmcluster.errors import ConfigError
from fmcluster.plan import Plan

app = typer.Typer(help="SageMaker HyperPod: the cluster a hyperpod project builds.", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """SageMaker HyperPod: the cluster a hyperpod project builds."""


@app.command("status")
def status(
    project: str = typer.Argument(..., help="Project name (under projects/) or path to a project file."),
    region: str | None = typer.Option(None, "--region", help="AWS Region. Default: the project's region:, AWS_REGION, AWS_DEFAULT_REGION, "
                                      "the profile's, the zone's."),
) -> None:
    """Cluster status and, per instance group, nodes by status (needs AWS credentials; reads only).
    Exit 1 when the cluster cannot be read or a group is not all Running."""
    try:
        loaded = config.load(project)
        plan, _ = checks.validate(loaded)
    except ConfigError as exc:
        typer.echo(exc.report(), err=True)
        raise typer.Exit(exc.exit_code) from None
    if loaded.project.orchestrator.type != "hyperpod":
        line = loaded.line(("orchestrator", "type"))
        where = f"{loaded.file}:{line}" if line else str(loaded.file)
        typer.echo(f"{where}  orchestrator.type  is {loaded.project.orchestrator.type!r}, not 'hyperpod' "
                   "(hint: this command reads a HyperPod cluster)", err=True)
        raise typer.Exit(2)
    with account_errors():
        # Heavy, and needed only here: boto3 and botocore load for the commands that call AWS.
        from fmcluster.aws.hyperpod import HyperPodError, cluster_health, deployed_cluster
        from fmcluster.aws.session import aws_session  # boto3, as above

        session = aws_session(loaded.project, region=region, command="hyperpod status")
        try:
            with session.errors():
                name = deployed_cluster(session.client("cloudformation"), plan)
                health = cluster_health(session.client("sagemaker"), name)
        except HyperPodError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
    typer.echo(f"cluster {health.name}: {health.status}" + (f" ({health.failure})" if health.failure else ""))
    for group in health.groups:
        nodes = ", ".join(f"{n} {s}" for s, n in group.statuses.items()) or "no nodes"
        mark = "ok" if group.healthy else "!!"
        typer.echo(f"  {mark} {group.name:<12} {group.instance_type:<24} {group.current}/{group.target}  {nodes}")
    if health.status != "InService" or not all(g.healthy for g in health.groups):
        raise typer.Exit(1)


def capacity_rows(group: dict, lines: Table) -> None:
    """A HyperPod instance group's training plan and UltraServers (both HyperPod orchestrators' plans show them)."""
    if group["training_plan_arn"]:  # arn:aws:sagemaker:REGION:ACCOUNT:training-plan/NAME, in words that wrap
        # between identifiers, never inside one (the whole ARN is in `plan -o json` and the project file)
        _, _, _, region, account, resource = group["training_plan_arn"].split(":", 5)
        row(lines, "  training plan", f"{resource.split('/', 1)[-1]} in {region}, account {account}")
    u = group["ultraservers"]
    if u:
        row(lines, "  UltraServers", f"{u['servers']} x {u['type']} ({u['instances_per_server']} instances "
                                     "each, one NVLink domain per UltraServer)")


def plan_rows(plan: Plan, data: dict, lines: Table) -> None:
    """The plan's scheduler section as text (:data:`fmcluster.cli.planservices.ROWS`)."""
    row(lines, "Slurm", f"SageMaker HyperPod cluster {data['cluster_name']}, created by cdk deploy; "
                        f"node recovery {data['node_recovery']}, slurm.conf {data['slurm_config_strategy']}")
    for group in data["instance_groups"]:
        where = f"partition {group['partition']}" if group["partition"] else group["node_type"].lower()
        detail = f"{group['count']} x {group['instance_type']}, {where}"
        if group["deep_health_checks"]:
            detail += f"; deep health checks {', '.join(group['deep_health_checks'])}"
        row(lines, f"group {group['name']}", detail)
        capacity_rows(group, lines)
    row(lines, "on destroy", "the cluster is deleted with its stack; the lifecycle bucket is kept")
