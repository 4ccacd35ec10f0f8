"""Bootstrap checks: components a node may need at boot whose download is not pinned yet."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.bootstrap.context import FsxMount, bundle_mounts_fsx, context_for, needed_placeholders
from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.plan import Plan


@check("bootstrap-unpinned", "warning")
def _unpinned(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """versions.yaml keys without a checksum that these nodes may need at boot (they stop there)."""
    cluster = plan.cluster
    needed: dict[str, None] = {}
    # Where the orchestrator mounts FSx itself (ParallelCluster, HyperPod), the bundle's Lustre step does not run.
    mounts = cluster.fsx_mount_path is not None and bundle_mounts_fsx(cluster.driver.flavour)
    fsx = FsxMount(mount_path=cluster.fsx_mount_path) if mounts else None
    for group in cluster.groups:
        ctx = context_for(cluster, group.name, "compute", fsx=fsx)
        needed |= dict.fromkeys(needed_placeholders(ctx))
    if needed:
        yield Finding(
            ("compute_groups",),
            f"bootstrap/versions.yaml has no checksum yet for {', '.join(needed)}; nodes whose image lacks "
            "those components stop at that bootstrap step (they never install unverified downloads)",
            "pin them in versions.yaml (`fmcluster bootstrap versions` lists them), or use an image that has them",
        )
