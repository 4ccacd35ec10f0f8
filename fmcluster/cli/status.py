"""``fmcluster status PROJECT``: on one screen, each of the project's stacks as CloudFormation holds it, the cluster
as its orchestrator reports it (per compute group: nodes expected, running, failing), and the alerts firing in the
project's Prometheus workspace. Reads only (:mod:`fmcluster.aws.status`).

Exit 0 when everything is up and nothing fires; 1 when something is not (or the account or network fails, one
line); 2 on a bad project file or Region.
"""

from __future__ import annotations

import json
from typing import Any

import typer

from fmcluster.cli.awserrors import account_errors
from fmcluster.cli.deployed import deployed
from fmcluster.cli.project import OUTPUT_OPT, PROJECT_ARG, Output

MARK = {True: "ok", False: "!!"}
REGION_OPT = typer.Option(None, "--region", help="AWS Region; must contain the project's zone. Default: the project's "
                          "region:, AWS_REGION, AWS_DEFAULT_REGION, the profile's, the zone's.")


def status(
    project: str = PROJECT_ARG,
    output: Output = OUTPUT_OPT,
    region: str | None = REGION_OPT,
) -> None:
    """The project's stacks, its cluster and nodes per compute group, and the alerts firing (needs credentials; reads
    only). Exit 1 when a stack is not complete, the cluster is not up, a group lacks nodes or has failing ones, or
    an alert fires.

    Example: fmcluster status llama-pretrain -o json
    """
    target = deployed(project, output, "status")  # the name and Region suffice for the stacks and alerts
    with account_errors(as_json=output is Output.json):
        # boto3 and botocore load for the commands that call AWS only.
        from fmcluster.aws import alerts
        from fmcluster.aws import status as aws_status  # boto3, as above
        from fmcluster.aws.session import aws_session  # boto3, as above

        session = aws_session(target, region=region, command="status")
        with session.errors():
            result = aws_status.project_status(session.client, target.plan, session.region, alerts.reader(session),
                                               target.name, "the project file gives its orchestrator and compute "
                                               f"groups (fix it: fmcluster validate {project})")
    if output is Output.json:
        print(json.dumps(result.as_dict(), indent=2))
    else:
        for line in render(result):
            typer.echo(line)
    if not result.healthy:
        raise typer.Exit(1)


def render(result: Any) -> list[str]:
    """The status as lines of text, at most 80 columns where names allow (a :class:`fmcluster.aws.status.
    ProjectStatus`)."""
    lines = [f"{result.project} in {result.region}: {'healthy' if result.healthy else 'NOT healthy'}", "", "stacks"]
    for state, built in result.stacks:
        mark = MARK[state.ok] if built else "--"
        extra = [] if built else ["not in the project any more"]
        if state.termination_protection:
            extra.append("protected")
        if state.reason and not state.ok:
            extra.append(state.reason)
        lines.append(f"  {mark} {state.name:<26} {state.status:<24} {'; '.join(extra)}".rstrip())
    cluster = [f"cluster: !! {result.cluster_not_read}"] if result.cluster_not_read else _cluster(result.cluster,
                                                                                                  result.project)
    lines += ["", *cluster, "", *_alerts(result.alerts)]
    return lines


def _cluster(cluster: Any, project: str) -> list[str]:
    if cluster is None:
        return [f"cluster: not deployed (deploy it: fmcluster deploy {project} --all)"]
    lines = [f"cluster {cluster.name}: {cluster.state}"]
    if cluster.problem:
        lines.append(f"  !! {cluster.problem}")
    lines += [f"  {key:<16} {value}" for key, value in cluster.facts.items()]
    if cluster.groups:
        lines.append(f"     {'group':<12} {'instance type':<18} {'expected':>8} {'running':>7} {'pending':>7} "
                     f"{'failing':>7}")
    for g in cluster.groups:
        lines.append(f"  {MARK[g.healthy]} {g.name:<12} {g.instance_type:<18} {g.expected:>8} {g.running:>7} "
                     f"{g.pending:>7} {g.failing:>7}")
        if g.detail:  # its own line: the table stays within 80 columns
            lines.append(f"     {'':<12} {g.detail}")
    return lines


def _alerts(alerts: Any) -> list[str]:
    if alerts is None:
        return ["alerts: no Prometheus workspace (observability off, or its stack not deployed)"]
    if alerts.problem:
        return [f"alerts: !! {alerts.problem}"]
    silenced = f", {alerts.silenced} silenced or inhibited" if alerts.silenced else ""
    lines = [f"alerts (workspace {alerts.workspace_id}): {len(alerts.firing)} firing{silenced}"]
    for alert in alerts.firing:
        where = alert.labels.get("instance") or alert.labels.get("group") or alert.labels.get("partition") or ""
        text = " ".join(part for part in (alert.severity or "", alert.name, where) if part)
        lines.append(f"  !! {text}" + (f": {alert.summary}" if alert.summary else "") +
                     (f" (since {alert.since})" if alert.since else ""))
    return lines
