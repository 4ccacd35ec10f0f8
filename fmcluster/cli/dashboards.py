"""``fmcluster dashboards export|push``: Grafana dashboards of a project.

Mount in the main CLI with ``app.add_typer(dashboards_app, name="dashboards")`` (or merge
:data:`app`, which holds the ``dashboards`` group). ``export`` touches no AWS; ``push`` calls
the Grafana and CloudFormation APIs of the project's account.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from fmcluster import config
from fmcluster.aws import StackOutputsError, grafana
from fmcluster.contracts import GRAFANA_WORKSPACE_OUTPUT as WORKSPACE_OUTPUT
from fmcluster.contracts import PROMETHEUS_WORKSPACE_OUTPUT as PROMETHEUS_OUTPUT
from fmcluster.cli.awserrors import account_errors
from fmcluster.errors import ConfigError
from fmcluster.generate import dashboards, metrics
from fmcluster.plan import make_plan

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
dashboards_app = typer.Typer(help="Grafana dashboards: export them as JSON or push them to the workspace.",
                             no_args_is_help=True, pretty_exceptions_enable=False)
app.add_typer(dashboards_app, name="dashboards")
out = Console()
err = Console(stderr=True)

PROJECT_ARG = typer.Argument(..., help="A project name under projects/ or a path to a YAML file.")


def _project(ref: str) -> config.Project:
    try:
        return config.load(ref).project
    except ConfigError as exc:
        for problem in exc.problems:
            err.print(f"[red]error[/]: {escape(problem.format())}", highlight=False, soft_wrap=True)
        raise typer.Exit(ConfigError.exit_code) from None


def _slurm(project: config.Project) -> bool:
    """The Slurm dashboard only where a node runs the Slurm metrics script."""
    return metrics.runs_slurm_metrics(make_plan(project).cluster)


@dashboards_app.command("export")
def export(
    project: str = PROJECT_ARG,
    out_dir: Path = typer.Option(..., "--out", help="Directory to write one <uid>.json per dashboard into."),
) -> None:
    """Write the project's dashboards as Grafana JSON. Touches no AWS."""
    loaded = _project(project)
    paths = dashboards.export_dashboards(loaded.name, out_dir, slurm=_slurm(loaded))
    for path in paths:
        out.print(str(path), highlight=False, soft_wrap=True)


@dashboards_app.command("push")
def push(
    project: str = PROJECT_ARG,
    workspace_id: str | None = typer.Option(
        None, "--workspace-id", help=f"Grafana workspace ID. Default: output {WORKSPACE_OUTPUT} of NAME-observability."
    ),
    prometheus_workspace_id: str | None = typer.Option(
        None, "--prometheus-workspace-id",
        help=f"Amazon Managed Prometheus workspace ID. Default: output {PROMETHEUS_OUTPUT} of NAME-observability."),
    region: str | None = typer.Option(None, "--region", help="AWS Region. Default: the project's region:, "
                                      "AWS_REGION, AWS_DEFAULT_REGION, the profile's, the zone's."),
    token_ttl: int = typer.Option(grafana.DEFAULT_TOKEN_TTL_SECONDS, "--token-ttl", min=60,
                                  help="Seconds the temporary service-account token lives."),
) -> None:
    """Create (or update) the project's Amazon Managed Prometheus data source in its Amazon Managed Grafana workspace
    (SigV4 with the workspace's IAM role), then upload the dashboards, which select it by default (short-lived
    token)."""
    loaded = _project(project)
    models = dashboards.build_dashboards(loaded.name, slurm=_slurm(loaded))
    with account_errors():
        # Heavy, and needed only here: boto3 and botocore load for the commands that call AWS.
        from fmcluster.aws.session import aws_session
        from fmcluster.aws.stacks import observability_workspace_ids  # botocore, as above

        session = aws_session(loaded, region=region, command="dashboards push")
        with session.errors():
            if workspace_id is None or prometheus_workspace_id is None:
                try:
                    found = observability_workspace_ids(session.client("cloudformation"), loaded.name,
                                                        grafana=workspace_id is None,
                                                        prometheus=prometheus_workspace_id is None)
                except StackOutputsError as exc:
                    err.print(f"[red]error[/]: {escape(str(exc))} (hint: deploy it, or pass the workspace IDs)",
                              highlight=False, soft_wrap=True)
                    raise typer.Exit(1) from None
                workspace_id = workspace_id or found[0]
                prometheus_workspace_id = prometheus_workspace_id or found[1]
            source = dashboards.prometheus_datasource(loaded.name, session.region, prometheus_workspace_id)
            try:
                result = grafana.push_dashboards(session.client("grafana"), workspace_id, loaded.name, models,
                                                 datasources=[source], token_ttl_seconds=token_ttl)
            except grafana.PushError as exc:
                err.print(f"[red]error[/]: {escape(str(exc))}", highlight=False, soft_wrap=True)
                raise typer.Exit(1) from None
    for uid, what in result.datasources:
        out.print(f"data source {uid} ({source['name']}, {source['url']}, SigV4 with the workspace's IAM role): "
                  f"{what}", highlight=False, soft_wrap=True)
    out.print(f"pushed {len(result.dashboards)} dashboards to {result.url} (folder {result.folder_uid}); they show "
              f"{source['name']} by default", highlight=False, soft_wrap=True)
    out.print(access_text(workspace_id, loaded.observability.grafana.authentication), highlight=False, soft_wrap=True)


def access_text(workspace_id: str, authentication: str) -> str:
    """How users get into the workspace, for its authentication provider (Amazon Managed Grafana user guide:
    "Manage user and group access", ``UpdatePermissions``; "Use SAML with your Amazon Managed Grafana workspace")."""
    if authentication == "SAML":
        return ("Users: your SAML identity provider signs them in; the assertion attribute you map to `role` gives "
                "Admin or Editor to the values in roleValues (everyone else is a Viewer): aws grafana "
                f"update-workspace-authentication --workspace-id {workspace_id} --authentication-providers SAML "
                "--saml-configuration file://saml.json (idpMetadata, assertionAttributes, roleValues)")
    return ("Users: assign IAM Identity Center users or groups to the workspace (a VIEWER sees the dashboards, "
            f"EDITOR/ADMIN change them): aws grafana update-permissions --workspace-id {workspace_id} "
            f"--update-instruction-batch '{ACCESS_BATCH}' (USER_ID: "
            "aws identitystore list-users --identity-store-id STORE_ID; a group: type SSO_GROUP)")


ACCESS_BATCH = '[{"action":"ADD","role":"VIEWER","users":[{"id":"USER_ID","type":"SSO_USER"}]}]'
