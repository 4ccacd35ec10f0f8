"""Checks for ``orchestrator.type: hyperpod``: what SageMaker's CreateCluster would refuse, or what would
build a different cluster than meant, reported with the file and line of the field to change."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster import catalog
from fmcluster.checks import orchestrated
from fmcluster.checks.registry import Finding, check
from fmcluster.config.hyperpod import BUCKET_PREFIX, CONTROLLER, LOGIN
from fmcluster.config.loader import LoadedProject
from fmcluster.plan import Plan

HP = ("orchestrator", "hyperpod")


def _active(loaded: LoadedProject) -> bool:
    return loaded.project.orchestrator.type == "hyperpod"


@check("hyperpod-instance-type", "error")
def instance_types(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if _active(loaded):
        yield from instance_type_findings(loaded)


def instance_type_findings(loaded: LoadedProject) -> Iterator[Finding]:
    """Compute groups of a type HyperPod does not offer (HyperPod Slurm and HyperPod on EKS alike)."""
    for i, group in enumerate(loaded.project.compute_groups):
        if group.instance_type not in catalog.HYPERPOD_TYPES:
            offered = ", ".join(sorted(catalog.HYPERPOD_TYPES))
            yield Finding(("compute_groups", i, "instance_type"),
                          f"SageMaker HyperPod does not offer {catalog.hyperpod_type(group.instance_type)}",
                          f"use a type HyperPod offers ({offered}), or orchestrator.type parallelcluster or none")


@check("hyperpod-capacity", "error")
def capacity(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """HyperPod takes on-demand capacity or a SageMaker training plan; EC2 reservations and blocks it cannot use."""
    if _active(loaded):
        yield from capacity_findings(loaded)


def capacity_findings(loaded: LoadedProject) -> Iterator[Finding]:
    for i, group in enumerate(loaded.project.compute_groups):
        if group.capacity.type in ("capacity-block", "reservation"):
            yield Finding(("compute_groups", i, "capacity"),
                          f"a HyperPod instance group cannot use an EC2 {group.capacity.type}: CreateCluster takes "
                          "reserved capacity only as a SageMaker training plan (TrainingPlanArn)",
                          "buy a training plan (aws sagemaker search-training-plan-offerings, create-training-plan) "
                          "and write capacity: {type: training-plan, arn: ...}, or use orchestrator parallelcluster")


@check("hyperpod-head-capacity", "error")
def head_capacity(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if not _active(loaded):
        return
    hp = loaded.project.orchestrator.hp
    for name, group in ((CONTROLLER, hp.controller), (LOGIN, hp.login)):
        if group is not None and group.capacity.type != "on-demand":
            what = "a training plan" if group.capacity.type == "training-plan" else f"a {group.capacity.type}"
            yield Finding(HP + (name, "capacity"),
                          f"the {name} group cannot run on {what}: training plans and reserved capacity cover the "
                          "accelerated compute groups; the controller and login nodes are on-demand",
                          f"remove orchestrator.hyperpod.{name}.capacity")


@check("hyperpod-ultraserver", "error")
def ultraservers(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """GB200 instances come in whole UltraServers through a training plan (x36 = 9, x72 = 18 instances)."""
    if _active(loaded):
        yield from ultraserver_findings(loaded, plan, loaded.project.orchestrator.hp, HP)


def ultraserver_findings(loaded: LoadedProject, plan: Plan, settings, at: tuple) -> Iterator[Finding]:
    """``settings``: the section whose ``group(name).ultraserver`` names the type (at ``at``)."""
    for i, group in enumerate(loaded.project.compute_groups):
        offers = catalog.get(group.instance_type).ultraservers
        wanted = settings.group(group.name).ultraserver
        if wanted and not offers:
            yield Finding(at + ("groups", group.name, "ultraserver"),
                          f"{group.instance_type} does not come in UltraServers", "remove ultraserver")
            continue
        sizes = [u for u in offers if wanted in (None, u.name)]
        planned = plan.group(group.name)
        spares = planned.spare_instances_per_ultraserver
        usable = {u.name: planned.usable_per_ultraserver(u.instances) for u in sizes}
        if sizes and not planned.whole_ultraservers(wanted):
            offered = " or ".join(f"{usable[u.name]} ({u.name}, {u.instances} instances" +
                                  (f" less {spares} spare)" if spares else ")") for u in sizes)
            multiples = sorted(n for n in usable.values() if n > 0)
            kept = (f"; the training plan keeps {spares} spare instance{'s' if spares > 1 else ''} per UltraServer "
                    "(capacity.spare_instances_per_ultraserver, as bought)" if spares else "")
            yield Finding(("compute_groups", i, "count"),
                          f"{group.count} {group.instance_type} instances are not whole UltraServers of usable "
                          f"instances: {offered}{kept}",
                          f"use a multiple of {' or '.join(map(str, multiples))}" if multiples
                          else "lower capacity.spare_instances_per_ultraserver")


@check("hyperpod-groups", "error")
def groups(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Settings for compute groups that exist; instance-group names and partitions that do not collide."""
    if not _active(loaded):
        return
    project = loaded.project
    hp = project.orchestrator.hp
    names = [g.name for g in project.compute_groups]
    yield from orchestrated.unknown_groups(HP + ("groups",), hp.groups, loaded)
    for i, name in enumerate(names):
        if name in (CONTROLLER, LOGIN):
            yield Finding(("compute_groups", i, "name"),
                          f"compute group name {name!r} is the name of HyperPod's {name} instance group",
                          "rename the compute group")


MAX_INSTANCE_GROUPS = 100
"""SageMaker CreateCluster takes 1 to 100 instance groups (botocore's sagemaker model,
``ClusterInstanceGroupSpecifications``: min 1, max 100)."""


@check("hyperpod-instance-groups", "error")
def instance_group_count(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """The controller, the login group and one group per compute group: at most 100 (the cluster stack holds one
    SageMaker cluster, so CloudFormation's stack limits are not what stops a large project)."""
    if not _active(loaded):
        return
    hp = loaded.project.orchestrator.hp
    groups = 1 + (hp.login is not None) + len(plan.groups)
    if groups > MAX_INSTANCE_GROUPS:
        yield Finding(("compute_groups",),
                      f"{groups} HyperPod instance groups (the controller, the login group and one per compute "
                      f"group); SageMaker's CreateCluster takes at most {MAX_INSTANCE_GROUPS}",
                      "use fewer, larger compute groups")


@check("hyperpod-lifecycle-bucket", "error")
def lifecycle_bucket(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    hp = loaded.project.orchestrator.hp
    name = hp.lifecycle_bucket_name
    if _active(loaded) and name is not None and not name.startswith(BUCKET_PREFIX):
        yield Finding(HP + ("lifecycle_bucket_name",),
                      f"lifecycle bucket {name!r} does not start with {BUCKET_PREFIX!r}: the cluster's managed policy "
                      "(AmazonSageMakerClusterInstanceRolePolicy) reaches only sagemaker-* buckets",
                      f"name it {BUCKET_PREFIX}{name}, or leave lifecycle_bucket_name out for the default")


settings_unused = orchestrated.settings_unused("hyperpod")
