"""The plan: pure numbers and settings derived from a project and the catalog. No CDK, no AWS.

Stacks and the bootstrap take plan sections, never raw YAML, so what ``fmcluster plan``
prints is what ``cdk synth`` builds. One section per stack: :class:`NetworkPlan`,
:class:`StoragePlan`, :class:`ObservabilityPlan`, :class:`ClusterPlan` (with a
:class:`GroupPlan` per compute group).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from fmcluster.config.project import Project
from fmcluster.orchestrators import ORCHESTRATORS
from fmcluster.plan import groups as _groups
from fmcluster.plan.checkpoint_bound import CheckpointBound, plan_checkpoint_bound
from fmcluster.plan.cluster import ClusterPlan
from fmcluster.plan.goodput import CheckpointGoodput, plan_goodput
from fmcluster.plan.groups import GroupPlan, NetworkInterface, efa_layout, plan_group
from fmcluster.plan.hyperpod_eks import SYSTEM, address_notes, node_addresses
from fmcluster.plan.network import NetworkPlan, carve_database_subnets, plan_network
from fmcluster.plan.observability import ObservabilityPlan
from fmcluster.plan.storage import StoragePlan, plan_storage

__all__ = ["CheckpointBound", "CheckpointGoodput", "ClusterPlan", "GroupPlan", "NetworkInterface", "NetworkPlan", "ObservabilityPlan", "Plan",
           "StoragePlan", "efa_layout", "make_plan"]

_JSON_OMITS = {"network": ("project", "availability_zone_id", "spec"), "storage": ("project", "spec")}
"""Plan fields for the stacks that `fmcluster plan -o json` does not show (it shows numbers)."""


@dataclass(frozen=True)
class Plan:
    project: str
    availability_zone_id: str
    groups: tuple[GroupPlan, ...]
    network: NetworkPlan
    storage: StoragePlan
    cluster: ClusterPlan
    observability: ObservabilityPlan
    checkpoint_bound: CheckpointBound | None = None
    """Without a ``checkpoint:`` section: the largest checkpoint the GPUs' memory allows, and its write time."""
    goodput: CheckpointGoodput | None = None
    """With ``storage.checkpoint.interval_minutes``: the share of wall time spent on checkpoints."""

    @property
    def nodes(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def gpus(self) -> int:
        return sum(g.gpus for g in self.groups)

    @property
    def bf16_pflops(self) -> float | None:
        values = [g.bf16_pflops for g in self.groups]
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)

    @property
    def hbm_gb(self) -> float | None:
        values = [g.hbm_gb for g in self.groups]
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)

    def group(self, name: str) -> GroupPlan:
        return next(g for g in self.groups if g.name == name)

    def as_dict(self) -> dict:
        data = {
            "project": self.project,
            "availability_zone_id": self.availability_zone_id,
            "groups": [_without(asdict(g), _groups.JSON_OMITS) for g in self.groups],
            "network": _without(_shallow(self.network), _JSON_OMITS["network"]),
            "storage": _without(_shallow(self.storage), _JSON_OMITS["storage"]),
        }
        for group, plan in zip(data["groups"], self.groups):
            group["efa_fraction"] = plan.efa_fraction
            group["ips"] = plan.ips
        bound = self.checkpoint_bound
        data["storage"]["checkpoint_bound"] = None if bound is None else {
            **asdict(bound), "too_slow": bound.too_slow, "per_gpu_low": bound.per_gpu_low}
        goodput = self.goodput
        data["storage"]["goodput"] = None if goodput is None else {
            **asdict(goodput), "share": goodput.share, "over_limit": goodput.over_limit}
        data["storage"]["units"] = {"MB": "10^6 bytes", "GB": "10^9 bytes", "TB": "10^12 bytes",
                                    "GiB": "2^30 bytes", "TiB": "2^40 bytes"}
        data["totals"] = {"nodes": self.nodes, "gpus": self.gpus, "bf16_pflops": self.bf16_pflops, "hbm_gb": self.hbm_gb}
        return data


def _shallow(section: object) -> dict:
    """A section's fields (the numbers are plain values; the config ``spec`` is dropped after)."""
    return {name: getattr(section, name) for name in section.__dataclass_fields__}  # type: ignore[attr-defined]


def _without(data: dict, names: tuple[str, ...]) -> dict:
    return {k: v for k, v in data.items() if k not in names}


def make_plan(project: Project) -> Plan:
    """Everything the stacks and the bootstrap need to know, computed once."""
    groups = tuple(plan_group(g) for g in project.compute_groups)
    if not ORCHESTRATORS[project.orchestrator.type].placement_groups:  # HyperPod takes none
        groups = tuple(replace(g, placement_group=False, existing_placement_group=None) for g in groups)
    storage = plan_storage(project.name, project.storage, sum(g.gpus for g in groups))
    scratch = project.storage.scratch
    hbm = [g.hbm_gb for g in groups]
    hbm_gb = None if any(h is None for h in hbm) else sum(h for h in hbm if h is not None)
    cluster = ClusterPlan(
        project=project.name,
        region=project.region,
        os=project.os,
        orchestrator=project.orchestrator.type,
        groups=groups,
        scratch=scratch.enabled,
        scratch_path=scratch.mount_path,
        fsx_mount_path=project.storage.fsx.mount_path if storage.fsx else None,
        pcluster=project.orchestrator.pcluster,
        tags=dict(project.tags),
        hyperpod=project.orchestrator.hp,
        account=project.account,
        pcs=project.orchestrator.pcs_settings,
        accounting=project.orchestrator.accounting,
        hyperpod_eks=project.orchestrator.eks,
        teams=tuple(project.teams),
        deep_dcgm_diagnostic=project.health.deep_dcgm_diagnostic,
    )
    other_ips, notes = 0, ()
    if cluster.driver.pod_addresses:  # EKS: EFA interfaces and the VPC CNI's pod addresses, per instance group
        addresses = node_addresses(cluster)
        per_node = {a.group: a.per_node for a in addresses}
        groups = tuple(replace(g, ips_per_node=per_node[g.name]) for g in groups)
        cluster = replace(cluster, groups=groups)
        other_ips = sum(a.nodes * a.per_node for a in addresses if a.group == SYSTEM)
        notes = address_notes(addresses)
    network = plan_network(project.name, project.availability_zone_id, project.network, groups,
                           database=cluster.accounting_store == "database", other_ips=other_ips, address_notes=notes)
    if cluster.driver.control_plane_subnets:  # the VPC's last two /28s, as the accounting database's
        taken = (network.public_subnet_cidr, network.compute_subnet_cidr) + (
            (network.services_subnet_cidr,) if network.services_subnet_cidr else ())
        cluster = replace(cluster, control_plane_subnet_cidrs=None if network.existing or network.vpc_cidr is None
                          else carve_database_subnets(network.vpc_cidr, taken),
                          control_plane_zone_ids=project.orchestrator.eks.control_plane_zones(
                              network.services_zone_id))
    return Plan(
        project=project.name,
        availability_zone_id=project.availability_zone_id,
        groups=groups,
        network=network,
        storage=storage,
        cluster=cluster,
        observability=ObservabilityPlan(
            project=project.name,
            spec=project.observability,
            fsx=storage.fsx,
        ),
        checkpoint_bound=plan_checkpoint_bound(storage, hbm_gb, sum(g.gpus for g in groups)),
        goodput=plan_goodput(storage, sum(g.count for g in groups), sum(g.gpus for g in groups)),
    )
