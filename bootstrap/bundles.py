"""A project's bootstrap bundles, rendered once, before its stacks are built.

Self-managed nodes (``orchestrator.type: none``) get one bundle per compute group, run by
the launch template's user data. ParallelCluster nodes get one archive holding a bundle per
instance type, a dispatcher per node role that picks and checks its own, and the launcher, their
custom action, which runs the dispatcher their role's bootstrap pointer names.
HyperPod instance groups get one lifecycle bundle each, uploaded under the group's prefix.
Bundles go to a folder of the cloud assembly (``cdk.out/fmcluster-bundles/PROJECT/``), from
which CDK publishes them as assets.

This module holds the stage's tables (:data:`CONTEXTS`, :data:`RENDERERS`); each orchestrator's renderer lives in
its own module (:mod:`fmcluster.bootstrap.selfmanaged`, also PCS's; ``parallelcluster``; ``hyperpod``;
``hyperpod_eks``), what they share in :mod:`fmcluster.bootstrap.bundling`. The names are kept here for the stacks
and the CLI.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fmcluster.bootstrap.bundling import fsx_mount, qos_partitions, slurm_teams
from fmcluster.bootstrap.context import BootstrapContext, FsxMount
from fmcluster.bootstrap.hyperpod import LifecycleBundles, lifecycle_contexts, render_lifecycle_bundles
from fmcluster.bootstrap.hyperpod_eks import eks_lifecycle_contexts, render_eks_lifecycle_bundles
from fmcluster.bootstrap.parallelcluster import DispatchedBundles, dispatched_contexts, render_dispatched_bundles
from fmcluster.bootstrap.render import HEAD_NODE_BUNDLE
from fmcluster.bootstrap.selfmanaged import LOGIN_BUNDLE, GroupBundle, group_contexts, render_group_bundles
from fmcluster.contracts import MountContract
from fmcluster.plan import ClusterPlan

__all__ = ["BUNDLES_DIR", "CONTEXTS", "HEAD_NODE_BUNDLE", "LOGIN_BUNDLE", "RENDERERS", "DispatchedBundles",
           "GroupBundle", "LifecycleBundles", "deployed_contexts", "dispatched_contexts", "fsx_mount",
           "group_contexts", "lifecycle_contexts", "qos_partitions", "render_bundles", "render_dispatched_bundles",
           "render_group_bundles", "render_lifecycle_bundles", "slurm_teams"]

BUNDLES_DIR = "fmcluster-bundles"
"""The folder of the cloud assembly that holds the rendered bundles."""


CONTEXTS: dict[str, Callable[[ClusterPlan, "FsxMount | None"], dict[str, BootstrapContext]]] = {
    "none": lambda cluster, mount: group_contexts(cluster, mount),
    "parallelcluster": lambda cluster, mount: dispatched_contexts(cluster),
    "hyperpod": lambda cluster, mount: lifecycle_contexts(cluster),
    "pcs": lambda cluster, mount: group_contexts(cluster, mount, login=cluster.pcs.login is not None),
    "hyperpod-eks": lambda cluster, mount: eks_lifecycle_contexts(cluster),
}
"""The bootstrap stage's table of what each orchestrator's nodes run: bundle name -> context, from the cluster and the
FSx mount (ignored where the orchestrator mounts FSx itself). The renderers and ``fmcluster bootstrap render``
both take their contexts from here, so what is rendered for inspection is what deploys."""


def deployed_contexts(cluster: ClusterPlan, mount: FsxMount | None) -> dict[str, BootstrapContext]:
    """The contexts of every bundle the project's orchestrator deploys (:data:`CONTEXTS`), by bundle name."""
    return CONTEXTS[cluster.orchestrator](cluster, mount)


Renderer = Callable[[ClusterPlan, Path, "MountContract | None", bool, "str | None"], object]

RENDERERS: dict[str, Renderer] = {
    "none": lambda cluster, out, fsx, at_boot, url: render_group_bundles(cluster, fsx, at_boot, out, url),
    "parallelcluster": lambda cluster, out, fsx, at_boot, url: render_dispatched_bundles(cluster, out, url is not None),
    "hyperpod": lambda cluster, out, fsx, at_boot, url: render_lifecycle_bundles(cluster, out),
    # PCS runs each group's bundle from the node group's launch template, as self-managed nodes do, and one on its
    # login nodes
    "pcs": lambda cluster, out, fsx, at_boot, url: render_group_bundles(cluster, fsx, at_boot, out, url,
                                                                        login=cluster.pcs.login is not None),
    "hyperpod-eks": lambda cluster, out, fsx, at_boot, url: render_eks_lifecycle_bundles(cluster, out),
}
"""The bootstrap stage's table of orchestrators (:mod:`fmcluster.orchestrators`): how each renders its nodes'
bundles, from the cluster, the folder, the FSx mount contract (its identity known only at boot when ``at_boot``)
and the metrics workspace's remote-write URL (ParallelCluster's: only whether there is one). Where the orchestrator
mounts FSx or configures the agents itself, its renderer ignores them."""


def render_bundles(cluster: ClusterPlan, out_dir: Path, fsx: MountContract | None, fsx_at_boot: bool,
                   remote_write_url: str | None) -> object:
    """The project's orchestrator's bundles (:data:`RENDERERS`), as the cluster stack takes them."""
    return RENDERERS[cluster.orchestrator](cluster, out_dir, fsx, fsx_at_boot, remote_write_url)
