"""HyperPod on EKS's bundles: one lifecycle bundle per instance group (the system group's as a GPU-less node, each
compute group's). The bootstrap stage's own module for hyperpod-eks (:data:`fmcluster.bootstrap.bundles.RENDERERS`)."""

from __future__ import annotations

from pathlib import Path

from fmcluster.bootstrap.bundling import fresh
from fmcluster.bootstrap.context import BootstrapContext, context_for
from fmcluster.bootstrap.hyperpod import LifecycleBundles
from fmcluster.bootstrap.render import render_bundle
from fmcluster.generate import hyperpod_eks
from fmcluster.plan import ClusterPlan


DATA_VOLUME = "/opt/sagemaker"
"""Where HyperPod mounts an instance group's extra EBS volume (botocore sagemaker ``ClusterEbsVolumeConfig.
VolumeSizeInGB``: "mounted to /opt/sagemaker"), to which AWS's EKS lifecycle script moves containerd's and kubelet's
data (awsome-distributed-training@467d93ca6b3cf9c33319dd407b4138b9ba9bfd2a 1.architectures/7.sagemaker-hyperpod-eks/
LifecycleScripts/base-config/on_create_main.sh:8)."""


def eks_lifecycle_contexts(cluster: ClusterPlan) -> dict[str, BootstrapContext]:
    """Pods mount FSx through the CSI driver, so no bundle mounts it. A group with an extra EBS volume moves
    containerd's and kubelet's data there (the kubelet-volume step)."""
    return {group.name: context_for(cluster, group.compute_group, group.role,  # type: ignore[arg-type]
                                    "hyperpod-eks", fsx=None,
                                    data_volume=DATA_VOLUME if group.ebs_volume_gib else None)
            for group in hyperpod_eks.instance_groups(cluster)}


def render_eks_lifecycle_bundles(cluster: ClusterPlan, out_dir: Path) -> LifecycleBundles:
    """As :func:`fmcluster.bootstrap.hyperpod.render_lifecycle_bundles`, for :func:`eks_lifecycle_contexts`.
    HyperPod's EKS mode runs the group's ``OnCreate`` script (AWS's samples: ``on_create.sh``,
    awsome-distributed-training 7.sagemaker-hyperpod-eks/LifecycleScripts/base-config): the same entry script,
    named there."""
    root = fresh(out_dir)
    sums = {name: render_bundle(ctx, root / name).sums_sha256 for name, ctx in eks_lifecycle_contexts(cluster).items()}
    return LifecycleBundles(root=root, sums=sums)
