"""HyperPod's bundles: one lifecycle bundle per instance group, uploaded under the group's prefix. The bootstrap
stage's own module for HyperPod (:data:`fmcluster.bootstrap.bundles.RENDERERS`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fmcluster.bootstrap.bundling import fresh, qos_partitions
from fmcluster.bootstrap.context import BootstrapContext, context_for
from fmcluster.bootstrap.render import ENTRY_NAME, render_bundle
from fmcluster.generate.hyperpod import instance_groups
from fmcluster.plan import ClusterPlan


def lifecycle_contexts(cluster: ClusterPlan) -> dict[str, BootstrapContext]:
    """HyperPod: one bundle per instance group (controller, login, each compute group). HyperPod mounts FSx itself
    (FsxLustreConfig), so none mounts it."""
    qos = qos_partitions(cluster)
    return {group.name: context_for(cluster, group.compute_group, group.role, "hyperpod", fsx=None, qos_partitions=qos)
            for group in instance_groups(cluster)}


@dataclass(frozen=True)
class LifecycleBundles:
    """HyperPod: one bundle per instance group in ``root/<instance group>/``, each run by its own entry script
    (``on_init_complete``: HyperPod's extended mode runs it after HyperPod has set up Slurm and its default software),
    which finds the bundle beside itself once HyperPod has copied the group's S3 prefix."""

    root: Path
    sums: dict[str, str]
    """Instance group -> sha256 of its bundle's SHA256SUMS."""
    on_init_complete: str = ENTRY_NAME


def render_lifecycle_bundles(cluster: ClusterPlan, out_dir: Path) -> LifecycleBundles:
    """The HyperPod flavour for every instance group (:func:`lifecycle_contexts`); its image carries the driver and
    EFA, which the steps find and keep."""
    root = fresh(out_dir)
    sums = {name: render_bundle(ctx, root / name).sums_sha256 for name, ctx in lifecycle_contexts(cluster).items()}
    return LifecycleBundles(root=root, sums=sums)
