"""Checks for ``orchestrator.type: parallelcluster``: what ParallelCluster would refuse at create
time, reported before any synthesis with the file and line of the field to change.

The generator (:mod:`fmcluster.generate.parallelcluster`) trusts what these checks passed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from fmcluster import pcluster_facts as support
from fmcluster.checks import orchestrated
from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.contracts import STACKS, stack_name
from fmcluster.facts import OPERATING_SYSTEMS
from fmcluster.plan import Plan
from fmcluster.plan import slurm_teams as slurmteams

PC = ("orchestrator", "parallelcluster")

TAG_VALUE = r"^([\w\+\-\=\.\_\:\@/]{0,256})$"
"""``pcluster.constants.PCLUSTER_TAG_VALUE_REGEX``."""


def _active(loaded: LoadedProject) -> bool:
    return loaded.project.orchestrator.type == "parallelcluster"


@check("parallelcluster-instance-type", "error")
def instance_types(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if not _active(loaded):
        return
    for i, group in enumerate(loaded.project.compute_groups):
        if not support.supports_instance_type(group.instance_type):
            yield Finding(("compute_groups", i, "instance_type"),
                f"ParallelCluster {support.PCLUSTER_VERSION} does not run {group.instance_type}",
                "use orchestrator.type: hyperpod or none for this group, or a supported type "
                f"({', '.join(support.SUPPORTED_INSTANCE_PREFIXES)})",
            )


@check("parallelcluster-os", "error")
def operating_system(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if not _active(loaded):
        return
    project = loaded.project
    settings = project.orchestrator.pcluster
    wanted = OPERATING_SYSTEMS[project.os].parallelcluster
    if settings.os is not None and settings.os != wanted:
        yield Finding(PC + ("os",),
            f"ParallelCluster os {settings.os} differs from the project's os {project.os}; the node bootstrap is "
            f"built for {project.os}",
            "remove orchestrator.parallelcluster.os (it follows `os`), or set os to match",
        )
        return
    pc_os = settings.os or wanted
    if pc_os is None or pc_os not in support.SUPPORTED_OSES:
        yield Finding(("os",),
            f"ParallelCluster {support.PCLUSTER_VERSION} has no image for {project.os}",
            f"use one of: {', '.join(k for k, v in OPERATING_SYSTEMS.items() if v.parallelcluster in support.SUPPORTED_OSES)}",
        )
        return
    for i, group in enumerate(project.compute_groups):
        allowed = support.supported_oses(group.instance_type)
        if pc_os not in allowed:
            yield Finding(("compute_groups", i, "instance_type"),
                f"ParallelCluster does not run {group.instance_type} on {pc_os}",
                f"set os to one ParallelCluster supports for it ({', '.join(sorted(allowed))})",
            )


@check("parallelcluster-names", "error")
def names(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Queue and compute-resource names Slurm/ParallelCluster accept; the cluster name."""
    if not _active(loaded):
        return
    project = loaded.project
    settings = project.orchestrator.pcluster
    for i, group in enumerate(project.compute_groups):
        problem = support.name_problem(group.name)
        if problem:
            what = "queue and compute resource" if settings.queues is None else "compute resource"
            yield Finding(("compute_groups", i, "name"),
                           f"as a ParallelCluster {what} name, {problem}", "rename the compute group")
    for queue in settings.queues or {}:
        problem = support.name_problem(queue)
        if problem:
            yield Finding(PC + ("queues", queue),
                           f"queue name {problem}",
                           f"lowercase letters, digits and '-', starting with a letter, at most "
                           f"{support.NAME_MAX_LENGTH} characters, not 'default'")
    name = plan.cluster.pcluster_name
    stacks = {stack_name(project.name, s) for s in STACKS}
    loc = PC + ("cluster_name",) if settings.cluster_name else ("name",)
    problem = support.cluster_name_problem(name)
    if problem or name in stacks:
        yield Finding(loc,
                       problem or f"cluster name {name!r} is also a stack name; ParallelCluster makes a stack "
                                  "named after the cluster",
                       "choose another orchestrator.parallelcluster.cluster_name")
    elif project.orchestrator.accounting.enabled and len(name) > support.ACCOUNTING_CLUSTER_NAME_MAX:
        yield Finding(loc,
                       f"cluster name {name!r} has {len(name)} characters; with Slurm accounting ParallelCluster "
                       f"takes at most {support.ACCOUNTING_CLUSTER_NAME_MAX}",
                       "choose a shorter orchestrator.parallelcluster.cluster_name")


@check("parallelcluster-queues", "error")
def queues(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """The queue mapping: known groups, every group in exactly one queue, one capacity type per queue."""
    if not _active(loaded):
        return
    project = loaded.project
    settings = project.orchestrator.pcluster
    groups = {g.name: g for g in project.compute_groups}
    mapping = settings.queue_mapping(list(groups))
    if len(mapping) > support.MAX_QUEUES:
        yield Finding(PC + ("queues",),
                       f"{len(mapping)} queues; ParallelCluster allows {support.MAX_QUEUES}",
                       "put several compute groups in one queue")
    seen: dict[str, str] = {}
    for queue, members in mapping.items():
        loc = PC + ("queues", queue) if settings.queues else ("compute_groups",)
        if len(members) > support.MAX_COMPUTE_RESOURCES_PER_QUEUE:
            yield Finding(loc,
                           f"queue {queue!r} has {len(members)} compute groups; ParallelCluster allows "
                           f"{support.MAX_COMPUTE_RESOURCES_PER_QUEUE}", "split it into more queues")
        for member in members:
            if member not in groups:
                yield Finding(loc,
                               f"queue {queue!r} lists {member!r}, which is not a compute group",
                               f"compute groups: {', '.join(groups)}")
            elif member in seen:
                yield Finding(loc,
                               f"compute group {member!r} is in queues {seen[member]!r} and {queue!r}",
                               "each compute group goes in exactly one queue")
            else:
                seen[member] = queue
        kinds = {groups[m].capacity.type == "capacity-block" for m in members if m in groups}
        if len(kinds) > 1:
            yield Finding(loc,
                           f"queue {queue!r} mixes capacity blocks with other capacity; a ParallelCluster queue "
                           "has one CapacityType (CAPACITY_BLOCK or ONDEMAND)",
                           "put the capacity-block groups in a queue of their own")
    if settings.queues is not None:
        for i, name in enumerate(groups):
            if name not in seen:
                yield Finding(("compute_groups", i, "name"),
                               f"compute group {name!r} is in no queue, so its nodes would never start",
                               "add it to one of orchestrator.parallelcluster.queues")


@check("parallelcluster-capacity", "error")
def capacity(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """MinCount/MaxCount: capacity blocks need every node static; UltraServer block sizes."""
    if not _active(loaded):
        return
    project = loaded.project
    settings = project.orchestrator.pcluster
    groups = {g.name: (i, g) for i, g in enumerate(project.compute_groups)}
    for name, static in settings.static_nodes.items():
        loc = PC + ("static_nodes", name)
        if name not in groups:
            yield orchestrated.not_a_group(loc, name, groups)
            continue
        _, group = groups[name]
        if group.capacity.type == "capacity-block" and static != group.count:
            yield Finding(loc,
                           f"a capacity block needs MinCount = MaxCount: {static} static nodes of {group.count}",
                           f"remove it (capacity blocks always run all {group.count} nodes) or set {group.count}")
        elif static > group.count:
            yield Finding(loc,
                           f"{static} static nodes but the group has {group.count}",
                           f"use at most {group.count}, or raise compute_groups count")
    for name, (i, group) in groups.items():
        sizes = support.ULTRASERVER_BLOCK_SIZES.get(support.instance_prefix(group.instance_type))
        if sizes and group.capacity.type == "capacity-block" and group.count not in sizes:
            yield Finding(("compute_groups", i, "count"),
                           f"ParallelCluster takes {group.instance_type} capacity blocks of "
                           f"{' or '.join(map(str, sizes))} instances (whole UltraServers), not {group.count}",
                           "one group per capacity block, sized as the block")


@check("parallelcluster-architecture", "error")
def architecture(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if not _active(loaded):
        return
    first = plan.groups[0]
    for i, group in enumerate(plan.groups):
        if group.architecture != first.architecture:
            yield Finding(("compute_groups", i, "instance_type"),
                           f"{group.instance_type} is {group.architecture} but {first.instance_type} is "
                           f"{first.architecture}; a ParallelCluster cluster (head node included) has one architecture",
                           "put the other architecture in a project of its own")


@check("parallelcluster-tags", "error")
def tag_values(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if not _active(loaded):
        return
    for key, value in loaded.project.tags.items():
        if key.lower().startswith("parallelcluster:"):
            yield Finding(("tags", key),
                           f"tag key {key!r}: the parallelcluster: prefix is ParallelCluster's own",
                           "use another prefix")
        if not re.match(TAG_VALUE, value):
            yield Finding(("tags", key),
                           f"ParallelCluster refuses the tag value {value!r}",
                           "letters, digits and + - = . _ : @ / only (no spaces)")


settings_unused = orchestrated.settings_unused("parallelcluster")


@check("parallelcluster-retained-cluster-network", "error")
def retained_cluster_network(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """A retained cluster outlives its stack; ParallelCluster needs its network and storage to outlive it too."""
    if not _active(loaded):
        return
    settings = loaded.project.orchestrator.pcluster
    if settings.create_cluster and settings.deletion_policy == "Retain" and loaded.project.network.existing is None:
        yield Finding(PC + ("deletion_policy",),
                      "a retained cluster would keep running in a VPC that `cdk destroy` deletes with NAME-network; "
                      "ParallelCluster requires a retained cluster's network and storage to be kept",
                      "use deletion_policy: Delete (the cluster goes with its stack; data stays in FSx and S3), or "
                      "run the cluster in a network you own (network.existing)")


@check("teams-one-share-per-queue", "error")
def _one_share_per_queue(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Slurm caps a team per partition (its QoS ``GrpTRES=node=`` counts nodes of the whole partition,
    :mod:`fmcluster.generate.slurmteams`), so where several compute groups share a queue the caps add up and a team
    could hold its whole sum on any group of the queue, another team's instance type included. A team's share must
    then be the same in every group of the queue: the cap then means what the file says of each group, held in
    any mix of them."""
    cluster = plan.cluster
    if not _active(loaded) or not slurmteams.applies(cluster):  # the only orchestrator with several groups a queue
        return
    queues = loaded.project.orchestrator.pcluster.queue_mapping([g.name for g in loaded.project.compute_groups])
    for queue, groups in queues.items():
        if len(groups) < 2:
            continue
        for i, team in enumerate(loaded.project.teams):
            shares = {g: (s.guaranteed, s.borrow) if (s := team.instances.get(g)) else (0, 0) for g in groups}
            if len(set(shares.values())) > 1:
                said = ", ".join(f"{g} {gu} + {b}" for g, (gu, b) in shares.items())
                yield Finding(("teams", i, "instances"),
                              f"team {team.name!r} has different shares of the groups in queue {queue!r} ({said}): "
                              "Slurm caps a team per queue, so it could hold the sum on any of them",
                              f"give team {team.name!r} the same guaranteed and borrow in every group of queue "
                              f"{queue!r}, or put the groups in queues of their own")


@check("teams-slurm-settings", "error")
def _slurm_settings(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """``custom_settings`` win over what fmcluster puts in slurm.conf, so one that weakens what teams need
    (:func:`fmcluster.generate.slurmteams.slurm_settings`: ``AccountingStorageEnforce`` with at least
    associations,limits,qos; ``PriorityType=priority/multifactor``) is refused: the caps and memberships would not
    be enforced while the plan says they are."""
    cluster = plan.cluster
    if not _active(loaded) or not slurmteams.applies(cluster):
        return
    custom = loaded.project.orchestrator.pcluster.slurm.custom_settings
    for key, value in custom.items():
        at = ("orchestrator", "parallelcluster", "slurm", "custom_settings", key)
        if key.lower() == "accountingstorageenforce":
            have = {v.strip().lower() for v in str(value).split(",")}
            need = slurmteams.ENFORCE.split(",")
            if missing := [n for n in need if n not in have]:
                yield Finding(at, f"custom_settings {key}={value} drops {','.join(missing)}, which `teams` need "
                                  f"(AccountingStorageEnforce={slurmteams.ENFORCE}: without it Slurm enforces "
                                  "neither a team's members nor its caps)",
                              f"remove {key} from custom_settings, or include {slurmteams.ENFORCE} in it; or "
                              "remove `teams`")
        elif key.lower() == "prioritytype" and str(value) != "priority/multifactor":
            yield Finding(at, f"custom_settings {key}={value} turns off the fair share `teams` weigh "
                              "(teams[].fair_share needs PriorityType=priority/multifactor)",
                          f"remove {key} from custom_settings, or remove `teams`")
