"""A ParallelCluster cluster's compute fleet: its status, stopping and starting it, and the jobs running on it.

``pcluster update-compute-fleet --status STOP_REQUESTED|START_REQUESTED`` for a Slurm cluster does no more than
write the requested status into the cluster's DynamoDB table, conditional on the status it read; the head node's
clustermgtd acts on it (STOP_REQUESTED -> STOPPING -> STOPPED, START_REQUESTED -> STARTING -> RUNNING). From the
``aws-parallelcluster`` 3.16.1 package: ``pcluster/models/compute_fleet_status_manager.py``
(``JsonComputeFleetStatusManager``: table ``parallelcluster-<cluster name>``, item ``{"Id": "COMPUTE_FLEET"}``,
attribute ``Data`` a map of ``status`` and ``lastStatusUpdatedTime``; ``update_status`` puts only when the status is
neither the request, the transition nor the goal), ``pcluster/models/cluster.py`` (``stop_compute_fleet``,
``start_compute_fleet``, ``has_running_capacity``: anything but STOPPED counts as running) and
``pcluster/constants.py`` (``PCLUSTER_DYNAMODB_PREFIX``). This module does the same with boto3.

Running jobs are read on the head node (EC2 tags ``parallelcluster:cluster-name`` and ``parallelcluster:node-type``
``HeadNode``, which ParallelCluster puts on its instances) with SSM Run Command's ``AWS-RunShellScript`` and
``squeue`` (ParallelCluster installs Slurm under ``/opt/slurm``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from botocore.exceptions import ClientError

from fmcluster.aws.session import is_account_problem

TABLE_PREFIX = "parallelcluster-"
"""``pcluster.constants.PCLUSTER_DYNAMODB_PREFIX``."""
FLEET_KEY = {"Id": {"S": "COMPUTE_FLEET"}}

STOPPED, RUNNING = "STOPPED", "RUNNING"
STOP = ("STOP_REQUESTED", "STOPPING", STOPPED)
START = ("START_REQUESTED", "STARTING", RUNNING)
"""(request, transition, goal), as ``stop_compute_fleet`` / ``start_compute_fleet`` pass them to ``update_status``."""

WAIT_S = 900
"""How long to wait for a requested status: ``update_status`` waits 180 s for the request to be taken and 600 s
for the transition; a little more, as clustermgtd runs once a minute."""
POLL_S = 15
"""``_wait_for_status_transition``'s ``retry_every_seconds``."""

SQUEUE = "/opt/slurm/bin/squeue --noheader --states=RUNNING,COMPLETING,CONFIGURING --format='%i|%u|%P|%j|%M|%D'"
"""Job, user, partition, name, time used, nodes: one running job a line."""
JOBS_WAIT_S = 60


class FleetError(RuntimeError):
    """The fleet's status cannot be read or changed (no table, a concurrent change, a timeout)."""


def table(cluster: str) -> str:
    return TABLE_PREFIX + cluster


def status(ddb: Any, cluster: str) -> str:
    """The compute fleet's status (``get_status_with_last_updated_time``), or :class:`FleetError`."""
    try:
        item = ddb.get_item(TableName=table(cluster), Key=FLEET_KEY, ConsistentRead=True).get("Item")
    except ClientError as exc:
        if is_account_problem(exc):
            raise
        raise FleetError(f"cannot read the compute fleet status of {cluster} from DynamoDB table {table(cluster)}: "
                         f"{exc.response['Error'].get('Message', exc)}") from None
    value = ((item or {}).get("Data", {}).get("M", {}).get("status") or {}).get("S")
    if not value:
        raise FleetError(f"DynamoDB table {table(cluster)} holds no compute fleet status (is the cluster being "
                         "created or deleted?)")
    return value


def request(ddb: Any, cluster: str, current: str, wanted: str) -> None:
    """Write ``wanted`` if the status is still ``current`` (``JsonComputeFleetStatusManager._put_status``)."""
    try:
        ddb.update_item(
            TableName=table(cluster), Key=FLEET_KEY,
            UpdateExpression="SET #dt.#st = :s, #dt.#lut = :t",
            ConditionExpression="#dt.#st = :current",
            ExpressionAttributeNames={"#dt": "Data", "#st": "status", "#lut": "lastStatusUpdatedTime"},
            ExpressionAttributeValues={":s": {"S": wanted}, ":t": {"S": str(datetime.now(tz=timezone.utc))},
                                       ":current": {"S": current}},
        )
    except ClientError as exc:
        if is_account_problem(exc):
            raise
        if exc.response["Error"].get("Code") == "ConditionalCheckFailedException":
            raise FleetError(f"the compute fleet status of {cluster} changed while fmcluster set it to {wanted} "
                             "(someone else is stopping or starting it): run the command again") from None
        raise FleetError(f"cannot set the compute fleet of {cluster} to {wanted}: "
                         f"{exc.response['Error'].get('Message', exc)}") from None


def _pause(seconds: float) -> None:
    time.sleep(seconds)


def _clock() -> float:
    return time.monotonic()


def change(ddb: Any, cluster: str, steps: tuple[str, str, str], *, wait_s: float = WAIT_S, poll_s: float = POLL_S,
           say: Callable[[str], None] = lambda _line: None) -> str:
    """Request ``steps[0]`` and wait (at most ``wait_s``) for ``steps[2]`` (``update_status`` with
    ``wait_transition``); returns the status reached, or raises :class:`FleetError`."""
    requested, _, goal = steps
    now = status(ddb, cluster)
    if now == goal:
        return now
    if now not in steps:
        request(ddb, cluster, now, requested)
        say(f"compute fleet of {cluster}: {now} -> {requested}")
    deadline = _clock() + wait_s
    while now != goal:
        if _clock() >= deadline:
            raise FleetError(f"the compute fleet of {cluster} is {now}, not {goal}, after {wait_s:.0f} s")
        _pause(poll_s)
        last, now = now, status(ddb, cluster)
        if now != last:
            say(f"compute fleet of {cluster}: {now}")
        if now not in steps and now != last:
            raise FleetError(f"the compute fleet of {cluster} went to {now} while fmcluster waited for {goal}")
    return now


def head_node(ec2: Any, cluster: str) -> str | None:
    """The running head node's instance ID, or None."""
    found = ec2.describe_instances(Filters=[
        {"Name": "tag:parallelcluster:cluster-name", "Values": [cluster]},
        {"Name": "tag:parallelcluster:node-type", "Values": ["HeadNode"]},
        {"Name": "instance-state-name", "Values": ["running"]},
    ])
    ids = [i["InstanceId"] for r in found.get("Reservations", []) for i in r.get("Instances", [])]
    return ids[0] if ids else None


def running_jobs(ssm: Any, instance_id: str, *, wait_s: float = JOBS_WAIT_S, poll_s: float = 2) -> list[str]:
    """``squeue``'s running jobs on the head node, one ``job|user|partition|name|time|nodes`` line each; raises
    :class:`FleetError` when Run Command cannot tell."""
    try:
        sent = ssm.send_command(InstanceIds=[instance_id], DocumentName="AWS-RunShellScript",
                                Parameters={"commands": [SQUEUE]}, TimeoutSeconds=30,
                                Comment="fmcluster deploy: running jobs before stopping the compute fleet")
    except ClientError as exc:
        if is_account_problem(exc):
            raise
        raise FleetError(f"cannot run squeue on the head node {instance_id} with SSM: "
                         f"{exc.response['Error'].get('Message', exc)}") from None
    command_id = sent["Command"]["CommandId"]
    deadline = _clock() + wait_s
    while True:
        try:
            got = ssm.get_command_invocation(CommandId=command_id, InstanceId=instance_id)
        except ClientError as exc:
            if is_account_problem(exc) or exc.response["Error"].get("Code") != "InvocationDoesNotExist":
                raise
            got = {"Status": "Pending"}  # not registered yet
        state = got.get("Status")
        if state == "Success":
            return [line for line in got.get("StandardOutputContent", "").splitlines() if line.strip()]
        if state not in ("Pending", "InProgress", "Delayed"):
            raise FleetError(f"squeue on the head node {instance_id} ended {state}: "
                             f"{(got.get('StandardErrorContent') or '').strip()[:200]}")
        if _clock() >= deadline:
            raise FleetError(f"squeue on the head node {instance_id} did not answer within {wait_s:.0f} s")
        _pause(poll_s)
