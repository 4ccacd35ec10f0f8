"""``orchestrator.type: none``: fmcluster makes launch templates and launches nothing, so the cluster is whatever the
team launched from them. Its nodes carry the templates' tags (``stacks/launch_template.py``: ``fmcluster:project``
and ``fmcluster:group``), by which ``status`` counts them per group and ``connect`` finds one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fmcluster.aws.nodes import (
    ClusterStatus,
    NodeNotInProject,
    Target,
    ec2_group,
    first_running,
    instances,
    tag,
    tag_filter,
)
from fmcluster.aws.stackstate import StackState
from fmcluster.facts import PROJECT_TAG
from fmcluster.plan import Plan

GROUP_TAG = "fmcluster:group"
"""The compute group of an instance launched from a group's template (``stacks/launch_template.py``)."""


def cluster_status(clients: Callable[[str], Any], plan: Plan, stack: StackState) -> ClusterStatus:
    """Per compute group, the instances tagged with the project and the group: nothing launches them but the team,
    so none is expected and up to the group's count may run; a failing one is impaired or tagged unhealthy."""
    ec2 = clients("ec2")
    found = instances(ec2, [tag_filter(PROJECT_TAG, plan.project)])
    groups = [ec2_group(ec2, g.name, g.instance_type, (0, g.count), [i for i in found if tag(i, GROUP_TAG) == g.name])
              for g in plan.cluster.groups]
    return ClusterStatus(orchestrator=plan.cluster.orchestrator, name=f"{plan.project} (self-managed)",
                         state="launch templates " + ("ready" if stack.ok else stack.status.lower()), ok=stack.ok,
                         facts={"launched by": "you, from the launch templates (nothing launches them)"},
                         groups=groups)


def target(clients: Callable[[str], Any], plan: Plan, cluster_stack: Callable[[], StackState], node: str,
           group: str | None) -> Target:
    """A running instance of ``group`` (the first compute group by default) launched from its template."""
    names = [g.name for g in plan.cluster.groups]
    chosen = group or names[0]
    if chosen not in names:
        raise NodeNotInProject(f"{plan.project} has no compute group {chosen!r}; its groups: {', '.join(names)}")
    cluster_stack()  # the launch templates are deployed (else it says so)
    found = instances(clients("ec2"), [tag_filter(PROJECT_TAG, plan.project), tag_filter(GROUP_TAG, chosen)])
    instance = first_running(found, f"instance of compute group {chosen}",
                             f"EC2 instances tagged {PROJECT_TAG}={plan.project}, {GROUP_TAG}={chosen}")
    return Target(instance["InstanceId"], instance["InstanceId"], f"{chosen} node {instance['InstanceId']}")
