"""``fmcluster destroy PROJECT``: the reverse of deploy (:mod:`fmcluster.aws.destroy` does the work).

It shows what it will delete (the stacks, in order, and whose termination protection it lifts) and what it will
keep, asks for the project's name (or ``--yes`` / ``--confirm NAME``), deletes, and lists every resource still
kept: its ID, what keeping it costs a month, and the aws CLI lines that delete it. ``--delete-retained`` deletes the
kept data too; it needs the project's name typed, or ``--confirm NAME`` (``--yes`` is not enough).

Exit 0 when every stack it could delete is gone (a network kept under retained data is said, not an error), 1 when
a stack did not delete or AWS refused (one line), 2 on a bad project file or a confirmation that does not match.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

from fmcluster.cli.awserrors import account_errors
from fmcluster.facts import PROJECT_TAG
from fmcluster.cli.deployed import deployed
from fmcluster.cli.project import OUTPUT_OPT, PROJECT_ARG, Output, err, out


def _say(line: str) -> None:
    err.print(line, highlight=False, markup=False, soft_wrap=True)


def _show_plan(teardown: Any, delete_retained: bool) -> None:
    _say(f"{teardown.project} in {teardown.region}: deletes, in this order:")
    for s in teardown.stacks:
        lock = " (termination protection on: lifted first)" if s.protected else ""
        _say(f"  {s.name}  {s.status}{lock}")
    if teardown.kept:
        verb = "deletes too (--delete-retained)" if delete_retained else "keeps (retained)"
        _say(f"and {verb}: {len(teardown.kept)} resources:")
        for k in teardown.kept:
            size = f"  [{k.detail}]" if k.detail else ""
            _say(f"  {k.type}  {k.physical_id}{size}  {k.cost or 'cost not read'}  kept by {teardown.who_kept(k)}")
    if teardown.network and teardown.blocking() and not delete_retained:
        _say(f"  {teardown.network.name} stays while what it holds is kept (listed at the end)")


def _confirmed(name: str, yes: bool, confirm: str | None, delete_retained: bool, output: Output,
               data: str = "the data they kept") -> None:
    """Returns when the user said so; otherwise exits (2: a wrong or missing confirmation, 1: declined). One question
    per project: its name typed, after every resource it deletes was listed (:func:`_show_plan`)."""
    if confirm is not None and confirm != name:
        _say(f"error: --confirm {confirm!r} does not name the project {name!r} (hint: --confirm {name})")
        raise typer.Exit(2)
    if confirm == name or (yes and not delete_retained):
        return
    if output is Output.text and sys.stdin.isatty():
        what = f"its stacks AND {data}" if delete_retained else "its stacks"
        typed = typer.prompt(f"Type the project name ({name}) to delete {what}", default="", show_default=False)
        if typed.strip() == name:
            return
        _say("nothing deleted: the name typed is not the project's")
        raise typer.Exit(1)
    if delete_retained:
        _say(f"error: --delete-retained deletes {name}'s kept data: it needs --confirm {name} (--yes is not enough)")
    else:
        _say(f"error: destroy deletes {name}'s stacks: confirm with --yes or --confirm {name}")
    raise typer.Exit(2)


def _refuse_foreign(name: str, foreign: list[Any], as_json: bool) -> None:
    """Exit 2: a stack named like the project's is not one fmcluster deployed for it (the stacks are read by name)."""
    from fmcluster.aws.teardown import project_tag  # boto3, as the other account calls here

    which = ", ".join(f"{s.name} ({PROJECT_TAG}={tag})" if (tag := project_tag(s)) is not None
                      else f"{s.name} (no {PROJECT_TAG} tag)" for s in foreign)
    message = (f"{which}: not deployed by fmcluster for {name}, whose stacks carry the tag {PROJECT_TAG}={name}; "
               "nothing deleted (hint: check the project's name; delete a stack of your own with aws cloudformation "
               "delete-stack)")
    if as_json:
        print(json.dumps({"ok": False, "error": message, "exit_code": 2}, indent=2))
    _say(f"error: {message}")
    raise typer.Exit(2)


def _report(teardown: Any, outcome: Any) -> None:
    for line in outcome.left:
        out.print(f"left instead: {line}", highlight=False, markup=False, soft_wrap=True)
    if not outcome.kept and not outcome.network_kept:
        out.print(f"{teardown.project}: nothing is kept", highlight=False)
        return
    out.print(f"{teardown.project}: kept, and billed until you delete it:", highlight=False)
    for k in outcome.kept:
        detail = f"  [{k.detail}]" if k.detail else ""
        out.print(f"  {k.type}  {k.physical_id}  ({k.stack}/{k.logical_id}){detail}", highlight=False, markup=False,
                  soft_wrap=True)
        out.print(f"      cost: {k.cost}", highlight=False, markup=False, soft_wrap=True)
        for command in k.commands:
            out.print(f"      $ {command}", highlight=False, markup=False, soft_wrap=True)
    if outcome.network_kept:
        out.print(f"  {outcome.network_kept}; cost: {outcome.network_cost[1]}", highlight=False, markup=False,
                  soft_wrap=True)
        out.print(f"      $ fmcluster destroy {teardown.project} once they are gone (or --delete-retained "
                  f"--confirm {teardown.project})", highlight=False, markup=False, soft_wrap=True)
    known = total(outcome)
    by_use = sum(k.monthly_usd is None for k in outcome.kept)
    out.print(f"kept: ${known:,.2f}/month at list prices" + (f", plus {by_use} billed by use" if by_use else ""),
              highlight=False)


def total(outcome: Any) -> float:
    return sum(k.monthly_usd or 0.0 for k in outcome.kept) + (outcome.network_cost[0] or 0.0)


def destroy(
    project: str = PROJECT_ARG,
    yes: bool = typer.Option(False, "--yes", help="Delete the stacks without asking (never the kept data)."),
    delete_retained: bool = typer.Option(False, "--delete-retained",
                                         help="Also delete what the stacks keep: buckets, file system (after a final "
                                              "backup), database (after a final snapshot), workspace, key, logs. "
                                              "Needs the project's name typed or --confirm NAME."),
    confirm: str | None = typer.Option(None, "--confirm", metavar="NAME",
                                       help="The project's name: confirms without a prompt (with --delete-retained "
                                            "too)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would be deleted and kept; delete nothing."),
    wait_minutes: float = typer.Option(60.0, "--wait-minutes", min=1, help="The longest wait for one stack."),
    region: str | None = typer.Option(None, "--region", help="AWS Region. Default: the project's region:, "
                                      "AWS_REGION, AWS_DEFAULT_REGION, the profile's, the zone's."),
    output: Output = OUTPUT_OPT,
) -> None:
    """Delete the project's stacks, the reverse of deploy, and list what they keep (its cost and how to delete it).

    Lifts each stack's termination protection just before deleting it. Example: fmcluster destroy llama-pretrain
    """
    target = deployed(project, output, "destroy")  # the name and Region suffice: a broken file never blocks it
    name = target.name
    as_json = output is Output.json
    with account_errors(as_json=as_json):
        # boto3 loads only for the commands that call AWS.
        from fmcluster.aws import destroy as teardown_api
        from fmcluster.aws.session import aws_session  # boto3, as above

        session = aws_session(target, region=region, command="destroy")
        with session.errors():
            teardown = teardown_api.read(session, name)
        if foreign := teardown.foreign():
            _refuse_foreign(name, foreign, as_json)
        if not teardown.stacks:
            _say(f"no stack of {name} is deployed in {session.region}")
        else:
            _show_plan(teardown, delete_retained)
        if dry_run or not teardown.stacks and not (delete_retained and teardown.kept):
            outcome = teardown_api.Outcome(kept=teardown.kept)
            network = teardown.network
            if network and teardown.blocking() and not delete_retained:
                outcome.network_kept = f"{network.name} would be kept: what it holds is kept"
                outcome.network_cost = teardown_api.network_cost(network)
        else:
            earlier = sum(teardown.who_kept(k).startswith("an earlier") for k in teardown.kept)
            data = (f"the {len(teardown.kept)} resources listed above" +
                    (f", {earlier} of them kept by earlier destroys" if earlier else ""))
            _confirmed(name, yes, confirm, delete_retained, output, data)
            try:
                with session.errors():
                    outcome = teardown_api.destroy(session, teardown, delete_retained=delete_retained,
                                                   progress=_say, timeout_s=wait_minutes * 60)
            except teardown_api.DestroyError as exc:
                if as_json:
                    print(json.dumps({"ok": False, "error": str(exc), "exit_code": 1}, indent=2))
                _say(f"error: {exc}")
                raise typer.Exit(1) from None
    if as_json:
        print(json.dumps(as_dict(teardown, outcome, dry_run), indent=2))
    else:
        _report(teardown, outcome)


def as_dict(teardown: Any, outcome: Any, dry_run: bool = False) -> dict[str, Any]:
    return {"ok": True, "project": teardown.project, "region": teardown.region, "dry_run": dry_run,
            "stacks": [s.as_dict() for s in teardown.stacks],
            "deleted": outcome.deleted, "termination_protection_lifted": outcome.lifted,
            "deleted_retained": outcome.deleted_retained, "left": outcome.left,
            "network_kept": outcome.network_kept or None,
            "network_monthly_usd": outcome.network_cost[0] if outcome.network_kept else None,
            "kept": [{**k.as_dict(), "kept_by": teardown.who_kept(k)} for k in outcome.kept],
            "kept_monthly_usd": round(total(outcome), 2)}
