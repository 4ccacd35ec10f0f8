"""FSx for Lustre in a HyperPod-on-EKS cluster: the project's file system as a static PersistentVolume and a claim
``fsx`` in each namespace whose jobs use it (:mod:`fmcluster.kubernetes.volumes` says why one PV per namespace on one
volume handle is safe), applied at deploy time through CDK's kubectl provider as one ``KubernetesManifest``.

The file system's ID, DNS name and mount name are the storage stack's (tokens of its exports, or an existing file
system's literals); the volumes' reclaim policy is Retain and no StorageClass is involved, so nothing on the
Kubernetes side can create or delete the file system. Team namespaces (``hyperpod-ns-<team>``) exist once task
governance has the team's ComputeQuota: pass the quotas in ``after``.
"""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import aws_eks_v2 as eks2
from constructs import Construct

from fmcluster.contracts import MountContract
from fmcluster.kubernetes.volumes import fsx_volumes, namespaces
from fmcluster.plan import ClusterPlan


def add_fsx_volumes(scope: Construct, cluster: eks2.ICluster, plan: ClusterPlan, fsx: MountContract | None,
                    capacity_gib: int, after: Iterable[Construct] = ()) -> eks2.KubernetesManifest | None:
    """The manifest of the PVs and claims (None without FSx); it depends on everything in ``after`` (the FSx CSI
    add-on, and with task governance the teams' quotas)."""
    if fsx is None:
        return None
    teams = [t.name for t in plan.teams] if plan.hyperpod_eks.task_governance else []
    objects = fsx_volumes(plan.project, namespaces(teams, plan.hyperpod_eks.task_governance), fsx.file_system_id,
                          fsx.dns_name, fsx.mount_name, capacity_gib)
    manifest = eks2.KubernetesManifest(scope, "FsxVolumes", cluster=cluster, manifest=objects, overwrite=True)
    for dependency in after:
        manifest.node.add_dependency(dependency)
    return manifest
