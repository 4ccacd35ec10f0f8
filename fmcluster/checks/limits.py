"""Limit checks: what CloudFormation refuses in one stack, counted from the plan before anything is synthesized."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.contracts import stack_name
from fmcluster.facts import MAX_OUTPUTS_PER_STACK, MAX_RESOURCES_PER_STACK
from fmcluster.plan import Plan

CLUSTER_FIXED_RESOURCES = 4
"""The node role, its policy, the node-health policy and the instance profile (``stacks/cluster.py``)."""
STORAGE_FIXED_RESOURCES = 6
"""The buckets, their policies, the file system and its log group (``stacks/storage.py``); one more per association."""


def cluster_stack_counts(plan: Plan) -> tuple[int, int]:
    """Resources and outputs of ``NAME-cluster`` with fmcluster's own launch templates.

    Per compute group: a launch template and its ID output, and with a placement group the group and its
    name output. ``tests/checks/test_limits.py`` synthesizes a project and compares.
    """
    metrics_policy = 1 if plan.observability.enabled else 0  # the agents' aps:RemoteWrite policy
    resources = CLUSTER_FIXED_RESOURCES + metrics_policy + sum(1 + g.placement_group for g in plan.groups)
    outputs = sum(1 + g.placement_group for g in plan.groups)
    return resources, outputs


def storage_stack_resources(loaded: LoadedProject) -> int:
    return STORAGE_FIXED_RESOURCES + len(loaded.project.storage.fsx.associations)


@check("stack-limits", "error")
def _stack_limits(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """CloudFormation's per-stack quotas: 500 resources and 200 outputs."""
    project = loaded.project
    if plan.cluster.driver.unbounded_groups:
        resources, outputs = cluster_stack_counts(plan)
        stack = stack_name(project.name, "cluster")
        if resources > MAX_RESOURCES_PER_STACK or outputs > MAX_OUTPUTS_PER_STACK:
            what = (f"{resources} resources (CloudFormation allows {MAX_RESOURCES_PER_STACK})"
                    if resources > MAX_RESOURCES_PER_STACK else
                    f"{outputs} outputs (CloudFormation allows {MAX_OUTPUTS_PER_STACK})")
            yield Finding(("compute_groups",),
                          f"{len(plan.groups)} compute groups make {stack} a stack of {what}: each group adds a "
                          "launch template and, with placement_group, a placement group, and one output for each",
                          "use fewer, larger groups (a group holds up to 2048 nodes), or split the project in two")
    associations = len(project.storage.fsx.associations)
    if associations and storage_stack_resources(loaded) > MAX_RESOURCES_PER_STACK:
        yield Finding(("storage", "fsx", "associations"),
                      f"{associations} data repository associations make {stack_name(project.name, 'storage')} a "
                      f"stack of more than {MAX_RESOURCES_PER_STACK} resources",
                      "link a few parent directories instead of many small ones")
