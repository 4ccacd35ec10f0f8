"""What a HyperPod cluster on EKS keeps running besides its jobs: the EKS control plane (an hourly fee, AWS's list
price ``eks.cluster``, or ``eks.cluster.extended`` while the project's Kubernetes version is past its end of standard
support today: :mod:`fmcluster.eks_versions`), the system group, every GPU instance group at its count (HyperPod
keeps each group's instances up, jobs or not, as under Slurm), and the lifecycle-script bucket (retained)."""

from __future__ import annotations

from datetime import date

from fmcluster import eks_versions
from fmcluster.catalog import HYPERPOD_PREFIX
from fmcluster.plan.cluster import ClusterPlan
from fmcluster.plan.costparts import FixedNode, OrchestratorCost

EKS_FEE = "eks.cluster"
EKS_EXTENDED_FEE = "eks.cluster.extended"


def control_plane_fee(cluster: ClusterPlan, on: date | None = None) -> tuple[str, str]:
    """(what, price key) of the control plane's hourly fee on ``on`` (default today): the extended-support rate once
    the version left standard support (EKS bills it from that day, whatever the upgrade policy, until the cluster is
    on a version in standard support)."""
    version = cluster.hyperpod_eks.kubernetes_version
    if eks_versions.support(version, on) in ("extended", "ended"):
        return f"EKS control plane (Kubernetes {version}, extended support)", EKS_EXTENDED_FEE
    return f"EKS control plane (Kubernetes {version}, standard support)", EKS_FEE


def cost_parts(cluster: ClusterPlan) -> OrchestratorCost:
    system = cluster.hyperpod_eks.system_group
    nodes = (FixedNode("system group", f"sagemaker.{system.instance_type}", system.count, system.ebs_volume_gib),)
    return OrchestratorCost(nodes=nodes, fees=(control_plane_fee(cluster),),
                            static={g.name: g.count for g in cluster.groups},
                            instance_prefix=f"sagemaker.{HYPERPOD_PREFIX}", buckets=("HyperPod lifecycle scripts",))
