"""``fmcluster deploy``'s ParallelCluster updates: name each change that needs more than an update, and stop the
compute fleet around the cluster stack's deploy when asked (``--stop-fleet``: the other stacks deploy first, the fleet
running, and only ``NAME-cluster`` with it stopped) or refuse with the commands to run.

What a change needs comes from :mod:`fmcluster.generate.pcluster_update` (ParallelCluster's own update policies);
the fleet is read and changed through :mod:`fmcluster.aws.fleet`.
"""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer

from fmcluster.cli import plandiff
from fmcluster.cli.project import REPLACEMENT_EXIT, err, out
from fmcluster.generate import pcluster_update as pu

HINTS = {
    "HeadNode.CustomActions.OnNodeConfigured":
        "the head node's custom action changed: a cluster deployed before fmcluster's bootstrap launcher names its "
        "old script; ParallelCluster runs OnNodeConfigured only when the head node is created",
}
"""Why a change ParallelCluster refuses happens, for the paths fmcluster writes whose reason is not obvious."""


def _print(line: str, *, error: bool = False) -> None:
    (err if error else out).print(line, highlight=False, markup=False, soft_wrap=True)


refused = plandiff.impossible
"""The updates no fleet stop makes possible: a new cluster, or the login nodes stopped first."""


def report(updates: list[pu.ClusterUpdate]) -> None:
    for update in updates:
        hint = next((h for path, h in HINTS.items() if update.change.where.startswith(path)), None)
        _print(f"cluster update: {update.format()}{f' ({hint})' if hint else ''}", error=True)


def refuse_impossible(updates: list[pu.ClusterUpdate]) -> None:
    """Exit 3 when ParallelCluster would refuse the update whatever the fleet's state."""
    blocked = refused(updates)
    if not blocked:
        return
    report(updates)  # every change the update needs something for, the fleet stop too: the whole picture
    login = any(u.needs != pu.NEVER for u in blocked)
    first = "; stop the login nodes in a deploy of their own first" if login else ""
    _print("refused: ParallelCluster would refuse this update and CloudFormation roll the cluster stack back (hint: "
           f"keep those settings as deployed{first}; or delete the cluster stack (its termination protection "
           "lifted) and deploy a new cluster: the provider refuses a new cluster name as an update too)", error=True)
    raise typer.Exit(REPLACEMENT_EXIT)


def needs_fleet_stop(updates: list[pu.ClusterUpdate]) -> dict[str, list[pu.ClusterUpdate]]:
    """Cluster name -> its updates that need the compute fleet stopped."""
    found: dict[str, list[pu.ClusterUpdate]] = {}
    for update in updates:
        if update.needs == pu.FLEET:
            found.setdefault(update.cluster, []).append(update)
    return found


def commands(project: str, args: list[str], clusters: list[str], region: str) -> list[str]:
    """What to run instead: fmcluster's own way, or ParallelCluster's CLI around a deploy."""
    again = shlex.join(["fmcluster", "deploy", project, "--stop-fleet", *args])
    by_hand = [shlex.join(["pcluster", "update-compute-fleet", "--cluster-name", c, "--status", "STOP_REQUESTED",
                           "--region", region]) for c in clusters]
    start = [shlex.join(["pcluster", "update-compute-fleet", "--cluster-name", c, "--status", "START_REQUESTED",
                         "--region", region]) for c in clusters]
    return [again, "or by hand:", *by_hand, "  (wait until `pcluster describe-compute-fleet` says STOPPED)",
            shlex.join(["fmcluster", "deploy", project, *args]), *start]


def ask(question: str) -> bool:
    """A yes/no question; no answer (no terminal, end of input) is a no."""
    try:
        return typer.confirm(question, default=False)
    except typer.Abort:  # typer vendors click: its confirm raises its own Abort
        return False


def to_stop(session: Any, project: str, args: list[str], updates: list[pu.ClusterUpdate], *, stop: bool,
            yes: bool, confirm: Callable[[str], bool] = ask) -> list[str]:
    """The clusters whose compute fleet the deploy must stop: none when no update needs the fleet stopped or the fleet
    is STOPPED already; else, with ``stop``, those running, after naming their running jobs and a confirmation
    (unless ``yes``); without ``stop``, or on a no, refuse (exit 3) with the commands to run."""
    from fmcluster.aws import fleet  # boto3, as for every account call of deploy

    wanted = needs_fleet_stop(updates)
    with session.errors():
        running = {c: s for c in wanted if (s := _status(session, c)) != fleet.STOPPED}
    if not running:
        return []
    report([u for c in running for u in wanted[c]])
    if not stop:
        many = sum(len(v) for v in wanted.values()) != 1
        _print(f"refused: ParallelCluster applies {'these changes' if many else 'this change'} only with the "
               f"compute fleet stopped ({', '.join(f'{c} is {s}' for c, s in running.items())}); the update would "
               "fail and CloudFormation roll the cluster stack back. Run:", error=True)
        for line in commands(project, args, sorted(running), session.region):
            _print(f"  {line}", error=True)
        raise typer.Exit(REPLACEMENT_EXIT)
    with session.errors():
        for cluster in running:
            _jobs(session, cluster)
    if not yes and not confirm(f"Stop the compute fleet of {', '.join(running)} (running jobs end) for the cluster "
                               "stack's deploy, and start it again?"):
        _print("not deployed: the compute fleet was left as it is (--yes stops it without asking)", error=True)
        raise typer.Exit(REPLACEMENT_EXIT)
    return list(running)


@contextmanager
def stopped(session: Any, clusters: list[str]) -> Iterator[None]:
    """The compute fleets of ``clusters`` stopped around the body (the cluster stack's deploy), and started again
    after it, whether it worked or rolled back: the fleet ran before it."""
    from fmcluster.aws import fleet  # boto3, as above

    done: list[str] = []
    try:
        with session.errors():
            for cluster in clusters:
                fleet.change(session.client("dynamodb"), cluster, fleet.STOP, say=_print)
                done.append(cluster)
        yield
    finally:
        with session.errors():
            for cluster in done:
                fleet.change(session.client("dynamodb"), cluster, fleet.START, say=_print)


def split_selection(args: list[str], stacks: list[str]) -> tuple[list[str], list[str] | None]:
    """``cdk deploy``'s arguments as (its options, the stacks they select): ``--all`` selects every stack of the
    assembly; a positional name or wildcard (cdk's own patterns) selects those it matches. None: nothing selects
    (cdk then deploys the app's only stack, or asks for a selection)."""
    options, selected, chose = [], [], False
    for arg in args:
        if arg == "--all":
            selected += stacks
            chose = True
        elif not arg.startswith("-") and (hits := fnmatch.filter(stacks, arg)):
            selected += hits
            chose = True
        else:
            options.append(arg)
    return options, [s for s in stacks if s in selected] if chose else None


def _status(session: Any, cluster: str) -> str:
    from fmcluster.aws import fleet  # boto3, as above

    return fleet.status(session.client("dynamodb"), cluster)


def _jobs(session: Any, cluster: str) -> None:
    """Name the running jobs stopping the fleet ends (or say why they cannot be listed)."""
    from fmcluster.aws import fleet  # boto3, as above

    instance = fleet.head_node(session.client("ec2"), cluster)
    if instance is None:
        _print(f"{cluster}: no running head node found (EC2 tag parallelcluster:cluster-name): jobs not listed")
        return
    try:
        jobs = fleet.running_jobs(session.client("ssm"), instance)
    except fleet.FleetError as exc:
        _print(f"{cluster}: running jobs not listed: {exc}")
        return
    if not jobs:
        _print(f"{cluster}: no job is running (squeue on {instance})")
        return
    _print(f"{cluster}: {len(jobs)} running job{'s' if len(jobs) != 1 else ''} end when the fleet stops "
           "(job|user|partition|name|time|nodes):")
    for line in jobs:
        _print(f"  {line}")
