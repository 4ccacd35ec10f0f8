"""Checks for ``orchestrator.type: pcs``: what AWS PCS would refuse (its quotas, names, Slurm versions, sizes) or
could not run, reported with the file and line of the field to change, before anything is synthesized.

Sources: FACTS.md section 5 (PCS quotas: 10 compute node groups and 10 queues per cluster; sizes; Slurm versions);
botocore's ``pcs`` model (names); PCS user guide "Configure UltraServer instances"
(https://docs.aws.amazon.com/pcs/latest/userguide/capacity-blocks-nvidia-imex.html: UltraServer instances need
Slurm 25.05 or later and a capacity block).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from fmcluster import catalog
from fmcluster.checks import orchestrated
from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.config.pcs import LOGIN, NODE_GROUP_NAME, SIZE_NODES, SLURM_VERSIONS
from fmcluster.plan import pcs as generate
from fmcluster.plan import Plan

PCS = ("orchestrator", "pcs")
ULTRASERVER_SLURM = "25.05"
"""The oldest Slurm version PCS runs UltraServer instances with (PCS user guide "Configure UltraServer
instances", prerequisites)."""


PCS_OPERATING_SYSTEMS = ("al2023", "ubuntu-24.04")
"""The systems AWS's image recipe for PCS nodes builds from (aws-samples/aws-hpc-recipes
recipes/pcs/dlami_for_pcs_imagebuilder: the DLAMI Base GPU on Amazon Linux 2023 and Ubuntu 24.04; FACTS.md section
5), and so the systems fmcluster's PCS images are profiled on (bootstrap profiles pcs-al2023, pcs-ubuntu-24.04)."""


def _active(loaded: LoadedProject) -> bool:
    return loaded.project.orchestrator.type == "pcs"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


@check("pcs-node-groups", "error")
def node_group_count(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """PCS takes at most 10 compute node groups and 10 queues per cluster. fmcluster makes one queue per compute
    group and one node group per compute group plus the login group, so the queue limit is never passed alone:
    one finding says both."""
    if not _active(loaded):
        return
    groups = generate.node_groups(plan.cluster)
    if len(groups) > generate.MAX_NODE_GROUPS:
        compute = len(plan.cluster.groups)
        login = len(groups) - compute
        yield Finding(("compute_groups",),
                      f"{compute} compute groups{' and the login group' if login else ''} make {len(groups)} PCS "
                      f"compute node groups and {compute} queues; AWS PCS allows {generate.MAX_NODE_GROUPS} node "
                      f"groups and {generate.MAX_QUEUES} queues per cluster (quotas that cannot be raised)",
                      "merge compute groups" + (", or set orchestrator.pcs.login: null" if login else "")
                      + ", or split the project into several clusters")


@check("pcs-names", "error")
def names(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Each compute group names a node group and a queue: 3 to 25 letters, digits and hyphens, a letter first."""
    if not _active(loaded):
        return
    for i, group in enumerate(loaded.project.compute_groups):
        if group.name == LOGIN and loaded.project.orchestrator.pcs_settings.login is not None:
            yield Finding(("compute_groups", i, "name"),
                          f"compute group name {LOGIN!r} is the name of the PCS login node group",
                          "rename the compute group")
        elif not re.fullmatch(NODE_GROUP_NAME, group.name):
            yield Finding(("compute_groups", i, "name"),
                          f"{group.name!r} cannot name a PCS compute node group and queue: 3 to 25 letters, digits "
                          "and hyphens, starting with a letter", "rename the compute group")
    yield from orchestrated.unknown_groups(PCS + ("groups",), loaded.project.orchestrator.pcs_settings.groups, loaded)


@check("pcs-slurm-version", "error")
def slurm_version(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if not _active(loaded):
        return
    version = loaded.project.orchestrator.pcs_settings.slurm_version
    if version not in SLURM_VERSIONS:
        yield Finding(PCS + ("slurm_version",), f"AWS PCS does not offer Slurm {version!r}",
                      f"supported versions: {', '.join(SLURM_VERSIONS)}")


@check("pcs-size", "error")
def size(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """The cluster's Size must manage every node: compute groups at full size and login nodes."""
    if not _active(loaded):
        return
    nodes = generate.node_count(plan.cluster)
    chosen = loaded.project.orchestrator.pcs_settings.size
    largest = max(SIZE_NODES.values())
    if chosen is not None and nodes > SIZE_NODES[chosen]:
        fits = generate.smallest_size(nodes)
        yield Finding(PCS + ("size",),
                      f"size {chosen} manages up to {SIZE_NODES[chosen]} nodes; the project has {nodes} "
                      "(compute groups and login nodes)",
                      f"use size {fits}, or leave size out" if fits else f"PCS manages at most {largest} nodes")
    elif nodes > largest:
        yield Finding(("compute_groups",),
                      f"{nodes} nodes (compute groups and login nodes): an AWS PCS cluster manages at most {largest} "
                      "(size LARGE)", "split the project into several clusters")


@check("pcs-ami", "error")
def images(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Every node group needs an image with the PCS agent and Slurm: none can be looked up at deploy time."""
    if not _active(loaded):
        return
    hint = ("set orchestrator.pcs.ami_id to an image with the PCS agent and Slurm "
            f"{loaded.project.orchestrator.pcs_settings.slurm_version}: build one with AWS's EC2 Image Builder recipe "
            "(aws-samples/aws-hpc-recipes recipes/pcs/dlami_for_pcs_imagebuilder, from the Deep Learning AMI); "
            "AWS's aws-pcs-sample_ami-* images are for demonstrations only")
    for i, group in enumerate(plan.cluster.groups):
        if generate.image(plan.cluster, group) is None:
            yield Finding(("compute_groups", i, "instance_type"),
                          f"no image for {group.name}: PCS nodes boot an image that carries the PCS agent and Slurm, "
                          "which the Deep Learning AMI fmcluster uses elsewhere lacks", hint)
    if plan.cluster.pcs.login is not None and generate.image(plan.cluster, None) is None:
        yield Finding(PCS + ("login",), "no image for the login nodes", hint + " (or login_ami_id)")


@check("pcs-os", "error")
def operating_system(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    project = loaded.project
    if _active(loaded) and project.os not in PCS_OPERATING_SYSTEMS:
        written = "os" in project.model_fields_set
        yield Finding(("os",) if written else ("orchestrator", "type"),
                      f"no PCS node image is built for {project.os}" + ("" if written else " (the default os)"),
                      f"set os: {' or os: '.join(PCS_OPERATING_SYSTEMS)} (the systems AWS's PCS image recipe builds "
                      "from)")


@check("pcs-capacity", "error")
def capacity(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Static nodes within the group; UltraServer instances with what PCS runs them on."""
    if not _active(loaded):
        return
    settings = loaded.project.orchestrator.pcs_settings
    for i, group in enumerate(loaded.project.compute_groups):
        wanted = settings.group(group.name).min_count
        if wanted is not None and wanted > group.count:
            yield Finding(PCS + ("groups", group.name, "min_count"),
                          f"min_count {wanted} is more than the group's {group.count} nodes", f"use 0 to {group.count}")
        if catalog.get(group.instance_type).ultraservers:
            if group.capacity.type != "capacity-block":
                yield Finding(("compute_groups", i, "capacity"),
                              f"AWS PCS runs {group.instance_type} (UltraServer instances) from a capacity block only",
                              "write capacity: {type: capacity-block, reservation_id: cr-...}")
            known = settings.slurm_version in SLURM_VERSIONS  # an unknown one is pcs-slurm-version's
            if known and _version(settings.slurm_version) < _version(ULTRASERVER_SLURM):
                yield Finding(PCS + ("slurm_version",),
                              f"UltraServer instances ({group.instance_type}) need Slurm {ULTRASERVER_SLURM} or later "
                              "under AWS PCS (its topology plugin and the IMEX prolog)",
                              f"use slurm_version {ULTRASERVER_SLURM} or later")


settings_unused = orchestrated.settings_unused("pcs")
