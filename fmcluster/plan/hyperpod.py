"""What a HyperPod cluster keeps running besides its jobs: every instance group at its count (HyperPod keeps each
group's instances up, jobs or not: ``InstanceCount``, botocore sagemaker ``ClusterInstanceGroupSpecification``),
the controller and login groups with their extra EBS volumes, and the lifecycle-script bucket (retained)."""

from __future__ import annotations

from fmcluster.catalog import HYPERPOD_PREFIX
from fmcluster.plan.cluster import ClusterPlan
from fmcluster.plan.costparts import FixedNode, OrchestratorCost


def cost_parts(cluster: ClusterPlan) -> OrchestratorCost:
    hp = cluster.hyperpod
    nodes = [FixedNode("controller", f"sagemaker.{hp.controller.instance_type}", hp.controller.count,
                       hp.controller.ebs_volume_gib)]
    if hp.login is not None:
        nodes.append(FixedNode("login nodes", f"sagemaker.{hp.login.instance_type}", hp.login.count,
                               hp.login.ebs_volume_gib))
    return OrchestratorCost(nodes=tuple(nodes), static={g.name: g.count for g in cluster.groups},
                            instance_prefix=f"sagemaker.{HYPERPOD_PREFIX}", buckets=("HyperPod lifecycle scripts",))
