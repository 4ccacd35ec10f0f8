"""ParallelCluster's bundles: one archive holding a bundle per instance type and the head node's, a dispatcher per
node role that picks and checks its own, and the launcher, their custom action. The bootstrap stage's own module
for ParallelCluster (:data:`fmcluster.bootstrap.bundles.RENDERERS`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from fmcluster.bootstrap.bundling import fresh, qos_partitions, slurm_teams
from fmcluster.bootstrap.context import BootstrapContext, context_for
from fmcluster.bootstrap.render import (
    HEAD_NODE_BUNDLE,
    LAUNCHER_NAME,
    dispatcher_script,
    launcher_script,
    render_bundle,
)
from fmcluster.contracts import COMPUTE_POINTER_ROLE, HEAD_POINTER_ROLE
from fmcluster.plan import ClusterPlan


@dataclass(frozen=True)
class DispatchedBundles:
    """ParallelCluster: one bundle per instance type (and the head node's) in ``bundles``; per node role
    (``fmcluster.contracts.HEAD_POINTER_ROLE``, ``COMPUTE_POINTER_ROLE``) a dispatcher that knows only that role's
    bundles, and its sha256 (what the role's bootstrap pointer names); the launcher, every node's custom action."""

    bundles: Path
    dispatchers: dict[str, Path]
    digests: dict[str, str]
    launcher: Path


def dispatched_contexts(cluster: ClusterPlan) -> dict[str, BootstrapContext]:
    """ParallelCluster: the head node's bundle (pyxis in the shared plugstack.conf, the per-job IMEX prolog where a
    queue has IMEX instances, the QoS per partition; its exporters) and one per instance type. ParallelCluster
    mounts FSx itself, so none mounts it."""
    out = {HEAD_NODE_BUNDLE: context_for(cluster, cluster.groups[0].name, "head", "parallelcluster", fsx=None,
                                         imex_prolog=cluster.needs_imex,
                                         qos_partitions=qos_partitions(cluster), slurm_teams=slurm_teams(cluster))}
    for group in cluster.groups:
        if group.instance_type not in out:
            out[group.instance_type] = context_for(cluster, group.name, "compute", "parallelcluster", fsx=None)
    return out


def render_dispatched_bundles(cluster: ClusterPlan, out_dir: Path, metrics: bool = False) -> DispatchedBundles:
    """One bundle per instance type (ParallelCluster mounts FSx itself, so the bundles do not), the head node's
    (pyxis in the shared plugstack.conf; its exporters, the Slurm exporter among them), a dispatcher per node role
    (``metrics``: the project's metrics workspace is on, so the dispatchers need its URL), and the launcher."""
    root = fresh(out_dir)
    sums = {name: render_bundle(ctx, root / "bundles" / name).sums_sha256
            for name, ctx in dispatched_contexts(cluster).items()}
    (root / "dispatch").mkdir(parents=True)
    by_role = {HEAD_POINTER_ROLE: {HEAD_NODE_BUNDLE: sums[HEAD_NODE_BUNDLE]},
               COMPUTE_POINTER_ROLE: {k: v for k, v in sums.items() if k != HEAD_NODE_BUNDLE}}
    dispatchers, digests = {}, {}
    for role, role_sums in by_role.items():
        text = dispatcher_script(cluster.project, role_sums, metrics=metrics).encode()
        dispatchers[role] = root / "dispatch" / f"{role}.sh"
        dispatchers[role].write_bytes(text)
        digests[role] = hashlib.sha256(text).hexdigest()
    launcher = root / "launch" / LAUNCHER_NAME
    launcher.parent.mkdir(parents=True)
    launcher.write_text(launcher_script())
    return DispatchedBundles(bundles=root / "bundles", dispatchers=dispatchers, digests=digests, launcher=launcher)
