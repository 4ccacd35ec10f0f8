"""The instance groups of a SageMaker HyperPod cluster orchestrated by EKS, from the plan: pure data the stack
(:mod:`fmcluster.stacks.hyperpod_eks`) turns into ``AWS::SageMaker::Cluster`` and ``fmcluster plan`` prints.

One untainted system group (CoreDNS, Kueue, the operators; FACTS.md section 5b: CoreDNS stays DEGRADED until a node
it tolerates exists), then one instance group per compute group with its Kubernetes labels and taints
(``KubernetesConfig``). The UltraServer arithmetic and the ``ml.`` names are HyperPod Slurm's
(:mod:`fmcluster.generate.hyperpod`).
"""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster import catalog
from fmcluster.config.hyperpod import DEEP_HEALTH_CHECKS
from fmcluster.config.hyperpod_eks import SYSTEM, Taint
from fmcluster.generate.hyperpod import LIFECYCLE_PREFIX, UltraServerMembership, ultraserver
from fmcluster.orchestrators import DiagramPart, SlurmTarget
from fmcluster.plan import ClusterPlan, Plan

__all__ = ["ADDONS", "INSTANCE_GROUP_LABEL", "SYSTEM", "EksInstanceGroup", "addons", "instance_groups",
           "scheduler_data", "diagram_part", "slurm_targets"]

INSTANCE_GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
"""The label HyperPod puts on every node with its instance group's name (SageMaker developer guide, "Kubernetes
labels HyperPod adds"; AWS's HyperPod EKS samples select a group's nodes by it)."""
HEALTH_TAINT = "sagemaker.amazonaws.com/node-health-status"
"""The taint HyperPod puts on a node while its health is checked or after it failed (FACTS.md section 5b)."""


@dataclass(frozen=True)
class EksInstanceGroup:
    """One HyperPod instance group on EKS."""

    name: str
    instance_type: str
    """The SageMaker (``ml.``) type."""
    count: int
    training_plan_arn: str | None
    deep_health_checks: tuple[str, ...]
    threads_per_core: int
    ebs_volume_gib: int | None
    interface_type: str | None
    """``efa`` | ``efa-only`` for GPU groups; None (no EFA) for the system group."""
    ultraserver: UltraServerMembership | None
    compute_group: str | None
    """The compute group this instance group is (None for the system group)."""
    labels: dict[str, str]
    taints: tuple[Taint, ...]

    @property
    def role(self) -> str:
        return "compute" if self.compute_group else "login"

    @property
    def lifecycle_prefix(self) -> str:
        return f"{LIFECYCLE_PREFIX}/{self.name}/"


def instance_groups(cluster: ClusterPlan) -> list[EksInstanceGroup]:
    """The system group, then one group per compute group, in file order."""
    eks = cluster.hyperpod_eks
    system = eks.system_group
    out = [EksInstanceGroup(SYSTEM, system.instance_type, system.count, None, (), 2, system.ebs_volume_gib, None,
                            None, None, {}, ())]
    for group in cluster.groups:
        settings = eks.group(group.name)
        checks = DEEP_HEALTH_CHECKS if settings.deep_health_checks is None else tuple(settings.deep_health_checks)
        out.append(EksInstanceGroup(
            name=group.name, instance_type=catalog.hyperpod_type(group.instance_type), count=group.count,
            training_plan_arn=group.training_plan_arn, deep_health_checks=checks,
            threads_per_core=settings.threads_per_core, ebs_volume_gib=settings.ebs_volume_gib,
            interface_type=settings.interface_type,
            ultraserver=ultraserver(cluster, group, settings.ultraserver), compute_group=group.name,
            labels=dict(settings.labels), taints=settings.node_taints))
    return out


def taints(cluster: ClusterPlan) -> list[Taint]:
    """Every taint the project's groups carry, and HyperPod's health taint: what the chart's pods must tolerate."""
    seen: dict[tuple, Taint] = {}
    for group in instance_groups(cluster):
        for t in group.taints:
            seen.setdefault((t.key, t.value, t.effect), t)
    for effect in ("NoSchedule", "NoExecute"):
        seen.setdefault((HEALTH_TAINT, None, effect), Taint(key=HEALTH_TAINT, effect=effect))
    return list(seen.values())


# -- managed add-ons ---------------------------------------------------------------------------------------------

ADDONS: dict[str, dict[str, str]] = {
    # name -> Kubernetes version ("*": any) -> the add-on version pinned for it. UNCONFIRMED: no offline source lists
    # EKS add-on builds (they come from `aws eks describe-addon-versions`); these are the builds fmcluster was written
    # against, and `fmcluster preflight` checks each pin against DescribeAddonVersions for the project's Kubernetes
    # version before a deploy (a wrong pin fails there, not in CloudFormation).
    "vpc-cni": {"*": "v1.19.5-eksbuild.1"},
    # 1.34 and 1.35: the builds a public Terraform module lists from `aws eks describe-addon-versions` in
    # ap-northeast-2 on 2026-09-04 (UNCONFIRMED for other Regions; preflight checks them)
    "kube-proxy": {"1.28": "v1.28.15-eksbuild.20", "1.29": "v1.29.15-eksbuild.11", "1.30": "v1.30.11-eksbuild.5",
                   "1.31": "v1.31.7-eksbuild.7", "1.32": "v1.32.3-eksbuild.7", "1.33": "v1.33.0-eksbuild.2",
                   "1.34": "v1.34.6-eksbuild.21", "1.35": "v1.35.3-eksbuild.21"},
    "coredns": {"1.28": "v1.10.1-eksbuild.18", "1.29": "v1.11.1-eksbuild.13", "1.30": "v1.11.4-eksbuild.10",
                "1.31": "v1.11.4-eksbuild.10", "1.32": "v1.11.4-eksbuild.10", "1.33": "v1.12.1-eksbuild.2",
                "1.34": "v1.12.4-eksbuild.29", "1.35": "v1.13.2-eksbuild.21"},
    "eks-pod-identity-agent": {"*": "v1.3.7-eksbuild.2"},
    "aws-fsx-csi-driver": {"*": "v1.4.0-eksbuild.1"},
    "cert-manager": {"*": "v1.17.2-eksbuild.1"},
    "amazon-sagemaker-hyperpod-taskgovernance": {"*": "v1.1.3-eksbuild.1"},
    "amazon-sagemaker-hyperpod-training-operator": {"*": "v1.0.1-eksbuild.1"},
    "amazon-sagemaker-hyperpod-observability": {"*": "v1.0.1-eksbuild.1"},
}
"""The pinned add-on versions. VPC CNI must be at least 1.18.3 (SageMaker developer guide, EKS prerequisites)."""
VPC_CNI_MINIMUM = (1, 18, 3)
BASE_ADDONS = ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent", "aws-fsx-csi-driver")
TASK_GOVERNANCE = "amazon-sagemaker-hyperpod-taskgovernance"
TRAINING_OPERATOR = "amazon-sagemaker-hyperpod-training-operator"
OBSERVABILITY = "amazon-sagemaker-hyperpod-observability"
CERT_MANAGER = "cert-manager"
NODE_ADDONS = frozenset({"coredns", "aws-fsx-csi-driver", CERT_MANAGER, TRAINING_OPERATOR, OBSERVABILITY,
                         TASK_GOVERNANCE})
"""Add-ons whose pods are a Deployment's: active only once a node runs them, so the stack creates them after the
HyperPod cluster, which brings the first node (awsome-distributed-training ``7.sagemaker-hyperpod-eks/
terraform-modules``: CoreDNS "will remain degraded until nodes are available", ``features_requiring_nodes``; FACTS.md
5b.x). The others (vpc-cni, kube-proxy, eks-pod-identity-agent) are DaemonSets, active with no node, and come before
the HyperPod cluster: its nodes join with the VPC CNI."""
ADDON_NEEDS = {TRAINING_OPERATOR: (CERT_MANAGER,)}
"""An add-on created only after another (the training operator's webhooks need cert-manager; FACTS.md 5b). Nothing
else orders the add-ons: they install side by side."""


def addon_version(name: str, kubernetes_version: str) -> str:
    pins = ADDONS[name]
    return pins.get(kubernetes_version) or pins["*"]


def addons(cluster: ClusterPlan) -> dict[str, str]:
    """The project's add-ons (name -> pinned version), in install order: the base ones, then the options."""
    eks = cluster.hyperpod_eks
    names = list(BASE_ADDONS)
    if eks.training_operator:
        names += [CERT_MANAGER, TRAINING_OPERATOR]  # the training operator needs cert-manager (FACTS.md 5b)
    if eks.observability_addon:
        names.append(OBSERVABILITY)
    if eks.task_governance:
        names.append(TASK_GOVERNANCE)
    return {n: addon_version(n, eks.kubernetes_version) for n in names}


# -- the scheduler's plan section, diagram and acceptance targets (fmcluster.generate.schedulers) --------------------

def scheduler_data(plan: Plan) -> dict:
    """The plan's scheduler section (``plan -o json``): Kubernetes, add-ons, the instance groups."""
    cluster = plan.cluster
    eks = cluster.hyperpod_eks
    groups = []
    for g in instance_groups(cluster):
        u = g.ultraserver
        groups.append({
            "name": g.name, "instance_type": g.instance_type, "count": g.count,
            "system": g.compute_group is None, "labels": g.labels,
            "taints": [f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in g.taints],
            "deep_health_checks": list(g.deep_health_checks), "training_plan_arn": g.training_plan_arn,
            "ultraservers": None if u is None else {
                "type": u.type, "servers": u.servers, "instances_per_server": u.instances_per_server,
                "nvlink_domains": u.servers},
        })
    return {"type": "hyperpod-eks", "cluster_name": f"{cluster.eks_name_prefix}-<subnet ID>",
            "created_by_cdk_deploy": True, "kubernetes_version": eks.kubernetes_version,
            "endpoint": "public and private" if eks.public_endpoint else "private",
            "admins": list(eks.admins), "addons": addons(cluster), "node_recovery": eks.node_recovery,
            "task_governance": eks.task_governance, "training_operator": eks.training_operator,
            "observability_addon": eks.observability_addon, "instance_groups": groups,
            "teams": [{"name": t.name, "fair_share": t.fair_share, "lend": t.lend, "preempt": t.preempt,
                       "instances": {g: {"guaranteed": s.guaranteed, "borrow": s.borrow}
                                     for g, s in t.instances.items()}} for t in cluster.teams]}


def diagram_part(plan: Plan) -> DiagramPart:
    cluster = plan.cluster
    eks = cluster.hyperpod_eks
    system = eks.system_group
    nodes = [("head", "head-node", f"EKS control plane (managed), Kubernetes {eks.kubernetes_version}\n"
                                   f"system group: {system.count} x {system.instance_type}\n"
                                   f"{cluster.eks_name_prefix}-<subnet ID>")]
    # the scheduler's edge kind ("slurm" styles every scheduler's edge alike): the control plane schedules pods
    edges = [("head", f"group:{g.name}", "slurm", "pods") for g in plan.groups]
    return DiagramPart(nodes, edges, ["head"])


def slurm_targets(cluster: ClusterPlan) -> dict[str, SlurmTarget]:
    """No Slurm: acceptance runs as Kubernetes jobs."""
    return {}
