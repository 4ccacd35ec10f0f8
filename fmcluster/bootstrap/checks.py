"""Checks that need the bootstrap renderer (registered in :data:`fmcluster.checks.CHECKS` on import)."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.checks import _problem, check
from fmcluster.config import LoadedProject
from fmcluster.errors import Problem
from fmcluster.plan import Plan


@check("bootstrap-unpinned", "warning")
def _unpinned(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    """versions.yaml keys without a checksum that these nodes may need at boot (they stop there)."""
    from fmcluster.bootstrap import render

    needed: dict[str, None] = {}
    # ParallelCluster mounts FSx itself; the bundle's Lustre step runs only for the other orchestrators.
    mounts = plan.storage.fsx and loaded.project.orchestrator.type != "parallelcluster"
    fsx = render.FsxMount(mount_path=loaded.project.storage.fsx.mount_path) if mounts else None
    for group in loaded.project.compute_groups:
        ctx = render.context_for(loaded.project, group.name, "compute", fsx=fsx)
        needed |= dict.fromkeys(render.needed_placeholders(ctx))
    if needed:
        yield _problem(
            loaded, "warning", "bootstrap-unpinned", ("compute_groups",),
            f"fmcluster/bootstrap/versions.yaml has no checksum yet for {', '.join(needed)}; nodes whose image lacks "
            "those components stop at that bootstrap step (they never install unverified downloads)",
            "pin them in versions.yaml (`fmcluster bootstrap versions` lists them), or use an image that has them",
        )
