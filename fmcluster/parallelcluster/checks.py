"""Checks for ``orchestrator.type: parallelcluster``: what ParallelCluster would refuse at create
time, reported before any synthesis with the file and line of the field to change.

Same shape as :mod:`fmcluster.checks` (``(loaded, plan) -> Iterator[Problem]``); the lead
registers them there. :data:`PARALLELCLUSTER_CHECKS` lists each with its name and level.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from fmcluster.config import LoadedProject, format_path
from fmcluster.errors import Level, Problem
from fmcluster.parallelcluster import support
from fmcluster.parallelcluster.settings import settings_of
from fmcluster.plan import Plan

PC = ("orchestrator", "parallelcluster")

TAG_VALUE = r"^([\w\+\-\=\.\_\:\@/]{0,256})$"
"""``pcluster.constants.PCLUSTER_TAG_VALUE_REGEX``."""


def _problem(loaded: LoadedProject, level: Level, name: str, loc: tuple[Any, ...], message: str, hint: str) -> Problem:
    return Problem(level, format_path(loc), message, hint, loaded.file, loaded.line(loc), name)


def _active(loaded: LoadedProject) -> bool:
    return loaded.project.orchestrator.type == "parallelcluster"


def _explicit(loaded: LoadedProject) -> bool:
    return getattr(loaded.project.orchestrator, "parallelcluster", None) is not None


def instance_types(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    if not _active(loaded):
        return
    for i, group in enumerate(loaded.project.compute_groups):
        if not support.supports_instance_type(group.instance_type):
            yield _problem(
                loaded, "error", "parallelcluster-instance-type", ("compute_groups", i, "instance_type"),
                f"ParallelCluster {support.PCLUSTER_VERSION} does not run {group.instance_type}",
                "use orchestrator.type: hyperpod or none for this group, or a supported type "
                f"({', '.join(support.SUPPORTED_INSTANCE_PREFIXES)})",
            )


def operating_system(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    if not _active(loaded):
        return
    project = loaded.project
    settings = settings_of(project)
    wanted = support.OS_NAMES.get(project.os)
    if settings.os is not None and settings.os != wanted:
        yield _problem(
            loaded, "error", "parallelcluster-os", PC + ("os",),
            f"ParallelCluster os {settings.os} differs from the project's os {project.os}; the node bootstrap is "
            f"built for {project.os}",
            f"remove orchestrator.parallelcluster.os (it follows `os`), or set os to match",
        )
        return
    pc_os = settings.os or wanted
    if pc_os is None or pc_os not in support.SUPPORTED_OSES:
        yield _problem(
            loaded, "error", "parallelcluster-os", ("os",),
            f"ParallelCluster {support.PCLUSTER_VERSION} has no image for {project.os}",
            f"use one of: {', '.join(k for k, v in support.OS_NAMES.items() if v in support.SUPPORTED_OSES)}",
        )
        return
    for i, group in enumerate(project.compute_groups):
        allowed = support.supported_oses(group.instance_type)
        if pc_os not in allowed:
            yield _problem(
                loaded, "error", "parallelcluster-os", ("compute_groups", i, "instance_type"),
                f"ParallelCluster does not run {group.instance_type} on {pc_os}",
                f"set os to one ParallelCluster supports for it ({', '.join(sorted(allowed))})",
            )


def names(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    """Queue and compute-resource names Slurm/ParallelCluster accept; the cluster name."""
    if not _active(loaded):
        return
    project = loaded.project
    settings = settings_of(project)
    for i, group in enumerate(project.compute_groups):
        problem = support.name_problem(group.name)
        if problem:
            what = "queue and compute resource" if settings.queues is None else "compute resource"
            yield _problem(loaded, "error", "parallelcluster-names", ("compute_groups", i, "name"),
                           f"as a ParallelCluster {what} name, {problem}", "rename the compute group")
    for queue in settings.queues or {}:
        problem = support.name_problem(queue)
        if problem:
            yield _problem(loaded, "error", "parallelcluster-names", PC + ("queues", queue),
                           f"queue name {problem}",
                           f"lowercase letters, digits and '-', starting with a letter, at most "
                           f"{support.NAME_MAX_LENGTH} characters, not 'default'")
    from fmcluster.parallelcluster.generate import cluster_name

    name = cluster_name(project)
    stacks = {f"{project.name}-{s}" for s in ("network", "storage", "cluster", "observability")}
    loc = PC + ("cluster_name",) if settings.cluster_name else ("name",)
    problem = support.cluster_name_problem(name)
    if problem or name in stacks:
        yield _problem(loaded, "error", "parallelcluster-names", loc,
                       problem or f"cluster name {name!r} is also a stack name; ParallelCluster makes a stack "
                                  "named after the cluster",
                       "choose another orchestrator.parallelcluster.cluster_name")


def queues(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    """The queue mapping: known groups, every group in exactly one queue, one capacity type per queue."""
    if not _active(loaded):
        return
    project = loaded.project
    settings = settings_of(project)
    groups = {g.name: g for g in project.compute_groups}
    mapping = settings.queues or {g: [g] for g in groups}
    if len(mapping) > support.MAX_QUEUES:
        yield _problem(loaded, "error", "parallelcluster-queues", PC + ("queues",),
                       f"{len(mapping)} queues; ParallelCluster allows {support.MAX_QUEUES}",
                       "put several compute groups in one queue")
    seen: dict[str, str] = {}
    for queue, members in mapping.items():
        loc = PC + ("queues", queue) if settings.queues else ("compute_groups",)
        if len(members) > support.MAX_COMPUTE_RESOURCES_PER_QUEUE:
            yield _problem(loaded, "error", "parallelcluster-queues", loc,
                           f"queue {queue!r} has {len(members)} compute groups; ParallelCluster allows "
                           f"{support.MAX_COMPUTE_RESOURCES_PER_QUEUE}", "split it into more queues")
        for member in members:
            if member not in groups:
                yield _problem(loaded, "error", "parallelcluster-queues", loc,
                               f"queue {queue!r} lists {member!r}, which is not a compute group",
                               f"compute groups: {', '.join(groups)}")
            elif member in seen:
                yield _problem(loaded, "error", "parallelcluster-queues", loc,
                               f"compute group {member!r} is in queues {seen[member]!r} and {queue!r}",
                               "each compute group goes in exactly one queue")
            else:
                seen[member] = queue
        kinds = {groups[m].capacity.type == "capacity-block" for m in members if m in groups}
        if len(kinds) > 1:
            yield _problem(loaded, "error", "parallelcluster-queues", loc,
                           f"queue {queue!r} mixes capacity blocks with other capacity; a ParallelCluster queue "
                           "has one CapacityType (CAPACITY_BLOCK or ONDEMAND)",
                           "put the capacity-block groups in a queue of their own")
    if settings.queues is not None:
        for i, name in enumerate(groups):
            if name not in seen:
                yield _problem(loaded, "error", "parallelcluster-queues", ("compute_groups", i, "name"),
                               f"compute group {name!r} is in no queue, so its nodes would never start",
                               "add it to one of orchestrator.parallelcluster.queues")


def capacity(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    """MinCount/MaxCount: capacity blocks need every node static; UltraServer block sizes."""
    if not _active(loaded):
        return
    project = loaded.project
    settings = settings_of(project)
    groups = {g.name: (i, g) for i, g in enumerate(project.compute_groups)}
    for name, static in settings.static_nodes.items():
        loc = PC + ("static_nodes", name)
        if name not in groups:
            yield _problem(loaded, "error", "parallelcluster-capacity", loc,
                           f"{name!r} is not a compute group", f"compute groups: {', '.join(groups)}")
            continue
        _, group = groups[name]
        if group.capacity.type == "capacity-block" and static != group.count:
            yield _problem(loaded, "error", "parallelcluster-capacity", loc,
                           f"a capacity block needs MinCount = MaxCount: {static} static nodes of {group.count}",
                           f"remove it (capacity blocks always run all {group.count} nodes) or set {group.count}")
        elif static > group.count:
            yield _problem(loaded, "error", "parallelcluster-capacity", loc,
                           f"{static} static nodes but the group has {group.count}",
                           f"use at most {group.count}, or raise compute_groups count")
    for name, (i, group) in groups.items():
        sizes = support.ULTRASERVER_BLOCK_SIZES.get(support.instance_prefix(group.instance_type))
        if sizes and group.capacity.type == "capacity-block" and group.count not in sizes:
            yield _problem(loaded, "error", "parallelcluster-capacity", ("compute_groups", i, "count"),
                           f"ParallelCluster takes {group.instance_type} capacity blocks of "
                           f"{' or '.join(map(str, sizes))} instances (whole UltraServers), not {group.count}",
                           "one group per capacity block, sized as the block")


def architecture(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    if not _active(loaded):
        return
    first = plan.groups[0]
    for i, group in enumerate(plan.groups):
        if group.architecture != first.architecture:
            yield _problem(loaded, "error", "parallelcluster-architecture", ("compute_groups", i, "instance_type"),
                           f"{group.instance_type} is {group.architecture} but {first.instance_type} is "
                           f"{first.architecture}; a ParallelCluster cluster (head node included) has one architecture",
                           "put the other architecture in a project of its own")


def tag_values(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    if not _active(loaded):
        return
    for key, value in loaded.project.tags.items():
        if key.lower().startswith("parallelcluster:"):
            yield _problem(loaded, "error", "parallelcluster-tags", ("tags", key),
                           f"tag key {key!r}: the parallelcluster: prefix is ParallelCluster's own",
                           "use another prefix")
        if not re.match(TAG_VALUE, value):
            yield _problem(loaded, "error", "parallelcluster-tags", ("tags", key),
                           f"ParallelCluster refuses the tag value {value!r}",
                           "letters, digits and + - = . _ : @ / only (no spaces)")


def settings_unused(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    if _explicit(loaded) and not _active(loaded):
        yield _problem(loaded, "warning", "parallelcluster-settings-unused", PC,
                       f"orchestrator.parallelcluster is ignored with orchestrator.type: {loaded.project.orchestrator.type}",
                       "set orchestrator.type: parallelcluster, or remove the section")


PARALLELCLUSTER_CHECKS: dict[str, tuple[Level, Callable[[LoadedProject, Plan], Iterator[Problem]]]] = {
    "parallelcluster-instance-type": ("error", instance_types),
    "parallelcluster-os": ("error", operating_system),
    "parallelcluster-names": ("error", names),
    "parallelcluster-queues": ("error", queues),
    "parallelcluster-capacity": ("error", capacity),
    "parallelcluster-architecture": ("error", architecture),
    "parallelcluster-tags": ("error", tag_values),
    "parallelcluster-settings-unused": ("warning", settings_unused),
}
