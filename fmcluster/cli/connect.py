"""``fmcluster connect PROJECT [--node NODE]``: a shell on the cluster through AWS Systems Manager Session Manager
(no key pair, no SSH ingress: the nodes' role has ``AmazonSSMManagedInstanceCore``). It finds the node
(:mod:`fmcluster.aws.connect`) and runs ``aws ssm start-session --target ...`` in its place; with ``--print``, or
where the AWS CLI or the Session Manager plugin is missing, it prints that command instead.
"""

from __future__ import annotations

import os
import shlex

import typer

from fmcluster.cli.awserrors import account_errors
from fmcluster.cli.deployed import deployed
from fmcluster.cli.project import PROJECT_ARG, Output
from fmcluster.cli.status import REGION_OPT
from fmcluster.contracts import stack_name


def connect(
    project: str = PROJECT_ARG,
    node: str | None = typer.Option(None, "--node", help="Which node: head (ParallelCluster), controller (HyperPod), "
                                    "login, compute (orchestrator none). Default: the orchestrator's first."),
    group: str | None = typer.Option(None, "--group", help="With --node compute: the compute group (default the "
                                     "first)."),
    print_only: bool = typer.Option(False, "--print", help="Print the aws ssm start-session command; start nothing."),
    region: str | None = REGION_OPT,
) -> None:
    """Start a Session Manager session on the head node, controller or a login node (needs credentials, the AWS CLI
    and the Session Manager plugin). Exit 1 when no such node runs or the plugin is missing (the command is
    printed), 2 when the project has no such node.

    Example: fmcluster connect llama-pretrain --print
    """
    found = deployed(project, Output.text, "connect")  # a broken project file: the node is found from the stacks
    plan = found.plan
    chosen = node
    if plan is not None:
        nodes = plan.cluster.driver.nodes
        chosen = node or nodes[0]
        kind = plan.cluster.orchestrator
        if chosen not in nodes:
            typer.echo(f"error: --node {chosen}: {kind} clusters have {', '.join(nodes)} (hint: --node {nodes[0]})",
                       err=True)
            raise typer.Exit(2)
        if group is not None and chosen != "compute":
            typer.echo(f"error: --group picks a compute group's node, with --node compute; {kind} clusters have "
                       f"{', '.join(nodes)}", err=True)
            raise typer.Exit(2)
    with account_errors():
        # boto3 and botocore load for the commands that call AWS only.
        from fmcluster.aws import connect as aws_connect
        from fmcluster.aws.nodes import ClusterReadError  # boto3, as above
        from fmcluster.aws.session import aws_session  # boto3, as above
        from fmcluster.aws.stackstate import StackState, stack_state  # boto3, as above

        session = aws_session(found, region=region, command="connect")
        def cluster_stack() -> StackState:
            stack = stack_state(session.client("cloudformation"), stack_name(found.name, "cluster"))
            if not stack.deployed:
                raise ClusterReadError(f"stack {stack.name} is not deployed in {session.region} (hint: fmcluster "
                                       f"deploy {found.name} --all)")
            return stack

        with session.errors():
            try:
                if plan is None:
                    target = aws_connect.by_name(session.client, found.name, cluster_stack(), chosen, group)
                else:
                    target = aws_connect.TARGETS[plan.cluster.orchestrator](session.client, plan, cluster_stack,
                                                                            chosen, group)
            except ClusterReadError as exc:
                typer.echo(f"error: {exc}", err=True)
                raise typer.Exit(exc.exit_code) from None
    command = aws_connect.session_command(target.target, session.region, session.profile)
    missing = aws_connect.missing_tools()
    become = (f"the session starts as {aws_connect.SESSION_USER}; become the cluster's user (its home, its jobs): "
              f"{aws_connect.os_user(plan)}")
    if print_only or missing:
        typer.echo(shlex.join(command))
        typer.echo(become, err=True)
        if missing and not print_only:
            typer.echo(f"error: {' and '.join(missing)} not found on PATH; the line above starts the session on "
                       f"{target.what} once installed (hint: the Session Manager plugin: {aws_connect.PLUGIN_DOCS})",
                       err=True)
            raise typer.Exit(1)
        return
    typer.echo(f"starting a Session Manager session on {target.what} ({shlex.join(command)})", err=True)
    typer.echo(become, err=True)
    os.execvp(command[0], command)  # the AWS CLI takes over this process: its session, its exit code
