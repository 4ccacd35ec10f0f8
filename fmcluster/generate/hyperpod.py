"""The instance groups of a SageMaker HyperPod cluster, from the plan: pure data the stack
(:mod:`fmcluster.stacks.hyperpod`) turns into ``AWS::SageMaker::Cluster`` and ``fmcluster plan`` prints.

API-driven Slurm (FACTS.md section 5): each group's ``SlurmConfig`` names its node type
(Controller, Login, Compute) and its one partition; FSx for Lustre comes through
``FsxLustreConfig``. No ``provisioning_parameters.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fmcluster import catalog
from fmcluster.config.hyperpod import (
    BUCKET_PREFIX,
    CONTROLLER,
    DEEP_HEALTH_CHECKS,
    LOGIN,
)
from fmcluster.contracts import AccountingContract
from fmcluster.orchestrators import DiagramPart, SlurmTarget
from fmcluster.plan import ClusterPlan, GroupPlan, Plan

LIFECYCLE_PREFIX = "lifecycle"
"""Key prefix of the lifecycle bundles in the lifecycle bucket: ``lifecycle/<instance group>/``."""

__all__ = ["BUCKET_PREFIX", "CONTROLLER", "LIFECYCLE_PREFIX", "LOGIN", "InstanceGroup", "UltraServerMembership",
           "instance_groups", "ultraserver"]

NodeType = Literal["Controller", "Login", "Compute"]


@dataclass(frozen=True)
class UltraServerMembership:
    """How a GB200 group's instances fill UltraServers (NVLink domains)."""

    type: str
    instances_per_server: int
    servers: int


@dataclass(frozen=True)
class InstanceGroup:
    """One HyperPod instance group."""

    name: str
    node_type: NodeType
    instance_type: str
    """The SageMaker (``ml.``) type."""
    count: int
    partition: str | None
    training_plan_arn: str | None
    deep_health_checks: tuple[str, ...]
    threads_per_core: int
    ebs_volume_gib: int | None
    interface_type: str | None
    """``efa`` | ``efa-only`` for GPU groups; None (no EFA) for controller and login."""
    ultraserver: UltraServerMembership | None
    compute_group: str | None
    """The compute group this instance group is (None for controller and login)."""

    @property
    def role(self) -> Literal["head", "login", "compute"]:
        """The bootstrap role of the group's nodes."""
        return {"Controller": "head", "Login": "login", "Compute": "compute"}[self.node_type]  # type: ignore[return-value]

    @property
    def lifecycle_prefix(self) -> str:
        return f"{LIFECYCLE_PREFIX}/{self.name}/"


def ultraserver(cluster: ClusterPlan, group: GroupPlan, wanted: str | None = "") -> UltraServerMembership | None:
    """The UltraServers a group's instances fill: the configured type, else the largest whose usable instances
    (a training plan's spares held back: 17 of an x72 with AWS's default of 1) divide the count.
    None for a type without UltraServers, or a count that fills none whole (a check refuses that). ``wanted``: the
    UltraServer type asked for (None: any), where another section than ``orchestrator.hyperpod`` holds it."""
    if wanted == "":
        wanted = cluster.hyperpod.group(group.name).ultraserver
    fits = group.whole_ultraservers(wanted)
    if not fits:
        return None
    offer, usable = fits[0]
    return UltraServerMembership(offer.name, usable, group.count // usable)


def instance_groups(cluster: ClusterPlan) -> list[InstanceGroup]:
    """Controller, optional login, then one group per compute group, in file order."""
    hp = cluster.hyperpod
    out = [InstanceGroup(CONTROLLER, "Controller", hp.controller.instance_type, 1, None, None, (), 2,
                         hp.controller.ebs_volume_gib, None, None, None)]
    if hp.login is not None:
        out.append(InstanceGroup(LOGIN, "Login", hp.login.instance_type, hp.login.count, None, None, (), 2,
                                 hp.login.ebs_volume_gib, None, None, None))
    for group in cluster.groups:
        settings = hp.group(group.name)
        checks = DEEP_HEALTH_CHECKS if settings.deep_health_checks is None else tuple(settings.deep_health_checks)
        out.append(InstanceGroup(
            name=group.name, node_type="Compute", instance_type=catalog.hyperpod_type(group.instance_type),
            count=group.count, partition=settings.partition or group.name, training_plan_arn=group.training_plan_arn,
            deep_health_checks=checks, threads_per_core=settings.threads_per_core,
            ebs_volume_gib=settings.ebs_volume_gib, interface_type=settings.interface_type,
            ultraserver=ultraserver(cluster, group), compute_group=group.name,
        ))
    return out


# -- the scheduler's plan section, diagram and acceptance targets (fmcluster.generate.schedulers) --------------------

def scheduler_data(plan: Plan) -> dict:
    """The plan's scheduler section (``plan -o json``): the instance groups, their partitions and UltraServers."""
    cluster = plan.cluster
    hp = cluster.hyperpod
    groups = []
    for g in instance_groups(cluster):
        u = g.ultraserver
        groups.append({
            "name": g.name, "node_type": g.node_type, "instance_type": g.instance_type, "count": g.count,
            "partition": g.partition, "deep_health_checks": list(g.deep_health_checks),
            "training_plan_arn": g.training_plan_arn,
            "ultraservers": None if u is None else {
                "type": u.type, "servers": u.servers, "instances_per_server": u.instances_per_server,
                "nvlink_domains": u.servers},
        })
    return {"type": "hyperpod", "cluster_name": f"{cluster.hyperpod_name_prefix}-<subnet ID>",
            "created_by_cdk_deploy": True, "node_recovery": hp.node_recovery,
            "slurm_config_strategy": hp.slurm_config_strategy, "instance_groups": groups}


CONTINUOUS = "Continuous"
"""``NodeProvisioningMode`` an external accounting database needs: "This field is only supported for clusters using
Continuous as the NodeProvisioningMode" (botocore sagemaker, ``ClusterOrchestratorSlurmConfig.AccountingDatabase``;
cfn-lint 1.58's schema: "Supported only with Continuous node provisioning"; SageMaker developer guide, "Using an
external accounting database with SageMaker HyperPod Slurm clusters": it also needs AMIs released after 2026-08-30,
and cannot be removed once attached). botocore's ``NodeProvisioningMode`` text still says "only supported for EKS
orchestrated clusters", which the guide's "Continuous provisioning ... with Slurm" page contradicts. Not
create-only in cfn-lint's schema."""


def cluster_accounting(cluster: ClusterPlan, database: AccountingContract | None) -> dict:
    """The ``AWS::SageMaker::Cluster`` properties accounting sets, as CloudFormation writes them: with the
    database, ``Orchestrator.Slurm.AccountingDatabase`` (``Endpoint``, ``Port``, ``SecretArn``; ``Name`` left to
    HyperPod: ``slurm_acct_db_<cluster id>``) and ``NodeProvisioningMode: Continuous``; with the controller's own
    database (or accounting off), just the Slurm strategy. ``database`` is required for ``store: database``."""
    slurm: dict = {"SlurmConfigStrategy": cluster.hyperpod.slurm_config_strategy}
    if cluster.accounting_store != "database":
        return {"Orchestrator": {"Slurm": slurm}}
    if database is None:
        raise ValueError("accounting keeps its records in a database: pass the accounting database's contract")
    slurm["AccountingDatabase"] = {"Endpoint": database.endpoint, "Port": database.port,
                                   "SecretArn": database.secret_arn}
    return {"Orchestrator": {"Slurm": slurm}, "NodeProvisioningMode": CONTINUOUS}


def diagram_part(plan: Plan) -> DiagramPart:
    nodes, services = [], []
    for ig in instance_groups(plan.cluster):
        if ig.node_type == "Controller":
            nodes.append(("head", "head-node", f"HyperPod controller ({ig.name})\n{ig.count} x "
                                               f"{ig.instance_type}\n{plan.cluster.hyperpod_name_prefix}-<subnet ID>"))
            services.append("head")
        elif ig.node_type == "Login":
            nodes.append(("login", "login", f"login group ({ig.name})\n{ig.count} x {ig.instance_type}"))
            services.append("login")
    edges = [("head", f"group:{g.name}", "slurm", "partition") for g in plan.groups]
    if "login" in services:
        edges.append(("login", "head", "slurm", "sbatch"))
    return DiagramPart(nodes, edges, services)


def slurm_targets(cluster: ClusterPlan) -> dict[str, SlurmTarget]:
    """The instance group's partition; whole nodes (``--exclusive``), no GRES (see
    :mod:`fmcluster.bootstrap.acceptance`)."""
    return {ig.compute_group: SlurmTarget(ig.partition, None, False)
            for ig in instance_groups(cluster) if ig.compute_group and ig.partition}
