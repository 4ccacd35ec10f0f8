"""What ``fmcluster status`` and ``fmcluster connect`` read about a cluster, whatever its orchestrator: the cluster's
state, its compute groups' nodes (expected, running, failing) and the node a session starts on; and the EC2 reads
the orchestrators that launch EC2 instances share (boto3 EC2 ``DescribeInstances``, ``DescribeInstanceStatus``).

Each orchestrator's own module (``fmcluster/aws/{selfmanaged,parallelcluster,hyperpod,pcs}.py``) fills these in;
:data:`fmcluster.aws.status.CLUSTERS` and :data:`fmcluster.aws.connect.TARGETS` are the tables naming them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

HEALTH_TAG = "fmcluster:health"
"""The tag the bootstrap's health check puts on a node whose checks failed (``templates/bootstrap/healthcheck.sh.j2``,
value ``unhealthy``; self-managed and PCS nodes, which no orchestrator drains at boot)."""
UNHEALTHY = "unhealthy"
LIVE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")
"""EC2 instance states a cluster's node can be in; terminated instances are gone (ParallelCluster reads the same
but ``shutting-down``: ``pcluster/models/cluster.py`` ``_get_instance_filters``)."""
IMPAIRED = "impaired"
"""An EC2 status check that failed (``DescribeInstanceStatus``: ``InstanceStatus`` or ``SystemStatus``)."""


class ClusterReadError(RuntimeError):
    """The cluster, or the node asked for, cannot be found or read: one line saying which and what to do."""

    exit_code = 1


class NodeNotInProject(ClusterReadError):
    """The node asked for is not one the project has (login nodes it does not configure, an unknown group)."""

    exit_code = 2


@dataclass(frozen=True)
class GroupStatus:
    """One compute group's nodes: how many the orchestrator aims at, how many run, how many fail."""

    name: str
    instance_type: str
    expected_min: int
    expected_max: int
    """Static nodes (always there) and the most the group may hold; equal for a fixed-size group."""
    running: int
    pending: int = 0
    failing: int = 0
    """Nodes that failed: an impaired EC2 status check, the bootstrap's health tag, HyperPod's ``Failure``."""
    states: dict[str, int] = field(default_factory=dict)
    """Every node by its state as the API names it (EC2 state, HyperPod ``InstanceStatus``)."""
    detail: str = ""
    """The group's own state where the orchestrator keeps one (a PCS node group's status)."""

    @property
    def healthy(self) -> bool:
        return self.failing == 0 and self.expected_min <= self.running <= max(self.expected_max, self.expected_min)

    @property
    def expected(self) -> str:
        return str(self.expected_max) if self.expected_min == self.expected_max else \
            f"{self.expected_min}-{self.expected_max}"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "healthy": self.healthy}


@dataclass(frozen=True)
class ClusterStatus:
    """The orchestrator's cluster: its name and state, facts about it (``compute fleet: RUNNING``), its groups."""

    orchestrator: str
    name: str
    state: str
    ok: bool
    """The cluster is up (its state one of the orchestrator's good ones)."""
    facts: dict[str, str] = field(default_factory=dict)
    groups: list[GroupStatus] = field(default_factory=list)
    problem: str | None = None
    """What stopped the cluster from being read (not deployed, not found), in one line; None when it was read."""

    @property
    def healthy(self) -> bool:
        return self.ok and self.problem is None and all(g.healthy for g in self.groups)

    def as_dict(self) -> dict[str, Any]:
        return {"orchestrator": self.orchestrator, "name": self.name, "state": self.state, "ok": self.ok,
                "healthy": self.healthy, "facts": dict(self.facts), "problem": self.problem,
                "groups": [g.as_dict() for g in self.groups]}


@dataclass(frozen=True)
class Target:
    """Where a Session Manager session starts: ``target`` as ``aws ssm start-session --target`` takes it (an
    instance ID, or HyperPod's ``sagemaker-cluster:`` form), and what it is, in words."""

    target: str
    instance_id: str
    what: str


# --- EC2 ------------------------------------------------------------------------------------------

def instances(ec2: Any, filters: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every live instance matching ``filters`` (``DescribeInstances``, every page)."""
    found: list[dict[str, Any]] = []
    query = [*filters, {"Name": "instance-state-name", "Values": list(LIVE_STATES)}]
    for page in ec2.get_paginator("describe_instances").paginate(Filters=query):
        for reservation in page.get("Reservations", []):
            found.extend(reservation.get("Instances", []))
    return sorted(found, key=lambda i: (i.get("LaunchTime") is None, str(i.get("LaunchTime", "")), i["InstanceId"]))


def tag(instance: dict[str, Any], key: str) -> str | None:
    return next((t.get("Value") for t in instance.get("Tags", []) if t.get("Key") == key), None)


def impaired(ec2: Any, instance_ids: Iterable[str]) -> set[str]:
    """The instances among ``instance_ids`` with a failed EC2 status check (``DescribeInstanceStatus``)."""
    ids = sorted(set(instance_ids))
    bad: set[str] = set()
    for start in range(0, len(ids), 100):  # at most 100 IDs a request (EC2 API reference, DescribeInstanceStatus)
        pages = ec2.get_paginator("describe_instance_status").paginate(InstanceIds=ids[start:start + 100])
        for page in pages:
            for status in page.get("InstanceStatuses", []):
                checks = (status.get("InstanceStatus", {}).get("Status"), status.get("SystemStatus", {}).get("Status"))
                if IMPAIRED in checks:
                    bad.add(status["InstanceId"])
    return bad


def ec2_group(ec2: Any, name: str, instance_type: str, expected: tuple[int, int], found: list[dict[str, Any]],
              detail: str = "") -> GroupStatus:
    """A group of EC2 instances as :class:`GroupStatus`: running, pending, and failing (an impaired status check or
    the bootstrap's health tag)."""
    states = Counter(i.get("State", {}).get("Name", "unknown") for i in found)
    running = [i for i in found if i.get("State", {}).get("Name") == "running"]
    bad = impaired(ec2, [i["InstanceId"] for i in running]) if running else set()
    bad |= {i["InstanceId"] for i in running if tag(i, HEALTH_TAG) == UNHEALTHY}
    return GroupStatus(name=name, instance_type=instance_type, expected_min=expected[0], expected_max=expected[1],
                       running=len(running) - len(bad), pending=states.get("pending", 0), failing=len(bad),
                       states=dict(sorted(states.items())), detail=detail)


def first_running(found: list[dict[str, Any]], what: str, looked: str) -> dict[str, Any]:
    """The first-launched running instance of ``found``, or a :class:`ClusterReadError` naming what was looked for."""
    running = [i for i in found if i.get("State", {}).get("Name") == "running"]
    if not running:
        states = ", ".join(f"{i['InstanceId']} {i.get('State', {}).get('Name', '?')}" for i in found)
        raise ClusterReadError(f"no running {what} ({looked}{'; found ' + states if states else ''}) (hint: "
                               "`fmcluster status PROJECT` shows the cluster's state)")
    return running[0]


def tag_filter(key: str, value: str) -> dict[str, Any]:
    return {"Name": f"tag:{key}", "Values": [value]}
