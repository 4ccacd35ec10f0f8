"""Mount checks: where the nodes mount FSx and the local NVMe, and what an imported file system can take."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.facts import SHARED_PARENTS, SYSTEM_DIRECTORIES
from fmcluster.plan import Plan

FSX = ("storage", "fsx", "mount_path")
SCRATCH = ("storage", "scratch", "mount_path")


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent + "/")


def _mounts(loaded: LoadedProject) -> list[tuple[tuple[str, ...], str]]:
    storage = loaded.project.storage
    found = []
    if storage.fsx.enabled:
        found.append((FSX, storage.fsx.mount_path))
    if storage.scratch.enabled:
        found.append((SCRATCH, storage.scratch.mount_path))
    return found


@check("mount-paths", "error")
def _mount_paths(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """No mount over the OS's own directories, or over a directory that holds other things; no mount in another."""
    mounts = _mounts(loaded)
    for loc, path in mounts:
        system = next((d for d in SYSTEM_DIRECTORIES if _inside(path, d)), None)
        if system is not None:
            yield Finding(loc, f"{path} is inside {system}, which the operating system owns; a mount there hides "
                               "or breaks system files",
                          f"use a top-level directory of its own, like {'/fsx' if loc == FSX else '/scratch'}")
        elif path in SHARED_PARENTS:
            yield Finding(loc, f"a mount on {path} hides what is already there (home directories, /opt/slurm, ...)",
                          f"mount below it ({path}/{loc[1]}) or use a top-level directory of its own")
    if len(mounts) == 2:
        (_, fsx), (_, scratch) = mounts
        if _inside(fsx, scratch) or _inside(scratch, fsx):
            same = "the same directory" if fsx == scratch else "nested"
            yield Finding(SCRATCH, f"the local NVMe ({scratch}) and FSx for Lustre ({fsx}) mount paths are {same}; "
                                   "one mount would hide the other",
                          "give them separate directories, e.g. /fsx and /scratch")


@check("fsx-associations-need-created-file-system", "error")
def _associations_on_existing(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Data repository associations are made with the file system fmcluster creates, never on an imported one."""
    fsx = loaded.project.storage.fsx
    if not fsx.associations:
        return
    if fsx.existing is not None:
        yield Finding(("storage", "fsx", "associations"),
                      f"{len(fsx.associations)} data repository association(s) with an existing file system would be "
                      "ignored: fmcluster never changes a file system it did not create",
                      "create them on that file system yourself (`aws fsx create-data-repository-association`) and "
                      "remove `associations`, or remove `existing` to have fmcluster create the file system")
    elif not fsx.enabled:
        yield Finding(("storage", "fsx", "associations"),
                      "data repository associations need a file system, but fsx.enabled is false",
                      "remove `associations`, or set enabled: true")
