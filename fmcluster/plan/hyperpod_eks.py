"""What a HyperPod cluster on EKS keeps running besides its jobs: the EKS control plane (an hourly fee, AWS's list
price ``eks.cluster`` in :mod:`fmcluster.prices`), the system group, every GPU instance group at its count (HyperPod
keeps each group's instances up, jobs or not, as under Slurm), and the lifecycle-script bucket (retained)."""

from __future__ import annotations

from fmcluster.catalog import HYPERPOD_PREFIX
from fmcluster.plan.cluster import ClusterPlan
from fmcluster.plan.costparts import FixedNode, OrchestratorCost

EKS_FEE = "eks.cluster"


def cost_parts(cluster: ClusterPlan) -> OrchestratorCost:
    system = cluster.hyperpod_eks.system_group
    nodes = (FixedNode("system group", f"sagemaker.{system.instance_type}", system.count, system.ebs_volume_gib),)
    return OrchestratorCost(nodes=nodes, fees=(("EKS control plane", EKS_FEE),),
                            static={g.name: g.count for g in cluster.groups},
                            instance_prefix=f"sagemaker.{HYPERPOD_PREFIX}", buckets=("HyperPod lifecycle scripts",))
