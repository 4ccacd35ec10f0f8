"""``fmcluster preflight PROJECT``: ask the account whether the project can deploy there, before money is spent.

It calls AWS through the one session of :mod:`fmcluster.aws.session`; the checks are in
:mod:`fmcluster.aws.preflight`. Exit 1 on any fail or an account or network problem (one line), 2 on a bad
project file or Region.
"""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn
from rich.table import Table
from rich.text import Text

from fmcluster.cli.awserrors import account_errors
from fmcluster.cli.project import OUTPUT_OPT, PROJECT_ARG, Output, _load

out = Console()
err = Console(stderr=True)

STYLE = {"pass": "green", "warn": "yellow", "fail": "red"}


def preflight(
    project: str = PROJECT_ARG,
    output: Output = OUTPUT_OPT,
    timeout: float = typer.Option(30.0, "--timeout", min=1, help="Seconds each check may take before it is a warning."),
    region: str | None = typer.Option(None, "--region", help="AWS Region; must contain the project's zone. Default: "
                                      "the project's region:, AWS_REGION, AWS_DEFAULT_REGION, the profile's, the zone's."),
) -> None:
    """Check the project against the AWS account: credentials and Region, instance types offered in the zone,
    reservations and capacity blocks, quotas, an existing subnet or file system, IAM Identity Center.

    Prints pass, warn or fail per check with one line of advice; exit code 1 on any fail. Needs credentials.

    Example: fmcluster preflight llama-pretrain -o json
    """
    loaded, plan, _ = _load(project, output)
    with account_errors(as_json=output is Output.json):
        # boto3 loads only for the commands that call AWS.
        from fmcluster.aws import preflight as pf
        from fmcluster.aws.session import aws_session  # boto3, as above

        session = aws_session(loaded.project, region=region, command="preflight")
        clients = pf.make_clients(session)
        with session.errors():
            if output is Output.json:
                results = pf.preflight(loaded.project, plan, clients, timeout=timeout)
            else:
                with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=err, transient=True) as bar:
                    task = bar.add_task("credentials", total=None)
                    results = pf.preflight(loaded.project, plan, clients, timeout=timeout,
                                           on_check=lambda c: bar.update(task, description=f"{c.name}: {c.subject}"))
    region = session.region
    ok = not pf.failed(results)
    if output is Output.json:
        print(json.dumps({"ok": ok, "project": plan.project, "region": region,
                          "results": [r.as_dict() for r in results]}, indent=2))
    else:
        table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="underline")
        for column in ("", "check", "subject", "result"):
            table.add_column(column, overflow="fold")
        for r in results:
            detail = Text(r.message)
            if r.advice:
                detail.append(f"\n-> {r.advice}", style="dim")
            table.add_row(Text(r.status, style=STYLE[r.status]), Text(r.check), Text(r.subject), detail)
        out.print(table)
        counts = {s: sum(r.status == s for r in results) for s in STYLE}
        out.print(f"{plan.project} in {region}: {counts['pass']} pass, {counts['warn']} warn, {counts['fail']} fail",
                  highlight=False, markup=False)
    if not ok:
        raise typer.Exit(1)
