"""The checkpoint planner: how big and how fast FSx for Lustre must be. Pure arithmetic.

Units, stated once and used everywhere: MB = 10^6 bytes, GB = 10^9 bytes, TB = 10^12 bytes;
GiB = 2^30 bytes, TiB = 2^40 bytes. FSx throughput is MB/s per TiB of storage, so a file
system of C GiB at T MB/s/TiB delivers T x C / 1024 MB/s in aggregate.
"""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.config.storage import PERSISTENT_2_THROUGHPUT, Checkpoint, FileSystem, Storage
from fmcluster.contracts import MountContract, StorageContract
from fmcluster.facts import FSX_EFA_STEP_GIB, fsx_capacities, fsx_efa_capacities

MB = 10**6
GB = 10**9
TB = 10**12
GiB = 2**30
TiB = 2**40

SCRATCH_2_THROUGHPUT = 200
"""SCRATCH_2 delivers a fixed 200 MB/s per TiB."""

DEFAULT_THROUGHPUT = 250
"""PERSISTENT_2 tier used when nothing asks for more."""


def aggregate_mb_s(capacity_gib: int, per_tib: int) -> float:
    """Aggregate FSx throughput in MB/s."""
    return per_tib * capacity_gib / 1024


@dataclass(frozen=True)
class StoragePlan:
    fsx: bool
    created: bool
    """False when the file system exists already (its size is not ours to plan)."""
    deployment_type: str | None
    capacity_gib: int | None
    throughput_per_tib: int | None
    aggregate_mb_s: float | None
    checkpoint_bytes: int | None
    target_write_seconds: float | None
    write_seconds: float | None
    restore_seconds: float | None
    per_gpu_mb_s: float | None
    """Each GPU's share of FSx throughput when all stream a dataset at once."""
    sized_by_planner: bool
    meets_target: bool | None
    unreachable: str | None
    """Why no valid file system meets the target, or None."""
    # What NAME-storage builds besides the numbers (not in `plan -o json`).
    project: str
    spec: Storage
    """The ``storage:`` section as validated."""

    @property
    def efa_field(self) -> tuple[str, ...] | None:
        """The project-file field that makes the project's file system EFA-enabled, or None when it is not."""
        fsx = self.spec.fsx
        if not fsx.enabled:
            return None
        if fsx.existing is not None:
            return ("storage", "fsx", "existing", "efa_enabled") if fsx.existing.efa_enabled else None
        return ("storage", "fsx", "efa_enabled") if fsx.efa_enabled else None

    @property
    def stack_needed(self) -> bool:
        """Whether the project needs a storage stack at all (not when bucket and file system both exist)."""
        spec = self.spec
        return spec.bucket.existing_name is None or (spec.fsx.enabled and spec.fsx.existing is None)

    def imported_contract(self) -> StorageContract:
        """The contract of storage that exists already: read from the project file, nothing to create."""
        spec = self.spec
        assert spec.bucket.existing_name is not None
        existing = spec.fsx.existing
        mount = None
        if spec.fsx.enabled and existing is not None:
            mount = MountContract(existing.file_system_id, existing.dns_name, existing.mount_name, spec.fsx.mount_path,
                                  existing.efa_enabled)
        return StorageContract(
            bucket_name=spec.bucket.existing_name,
            bucket_arn=f"arn:aws:s3:::{spec.bucket.existing_name}",
            fsx=mount,
            scratch_path=spec.scratch.mount_path if spec.scratch.enabled else None,
        )


def _tiers(fsx: FileSystem) -> tuple[int, ...]:
    if fsx.deployment_type == "SCRATCH_2":
        return (SCRATCH_2_THROUGHPUT,)
    return (fsx.throughput_per_tib,) if fsx.throughput_per_tib else PERSISTENT_2_THROUGHPUT


def _candidates(fsx: FileSystem, checkpoint: bool) -> list[tuple[int, tuple[int, ...]]]:
    """(capacity, tiers valid at that capacity), smallest capacity first.

    SSD sizes go 1200, 2400, then 2400 GiB steps at any tier; an EFA-enabled file system
    comes in multiples of its tier's own step (4800 GiB at 1000 MB/s/TiB ... 38400 at 125).
    Without a checkpoint to size for, a plain file system takes the default tier.
    """
    tiers = _tiers(fsx)
    if fsx.efa_enabled:
        by_size: dict[int, list[int]] = {}
        for tier in tiers:
            for size in fsx_efa_capacities(fsx.max_capacity_gib, tier):
                by_size.setdefault(size, []).append(tier)
        return [(size, tuple(sorted(found))) for size, found in sorted(by_size.items())]
    if not checkpoint and fsx.deployment_type == "PERSISTENT_2" and fsx.throughput_per_tib is None:
        tiers = (DEFAULT_THROUGHPUT,)
    return [(size, tiers) for size in fsx_capacities(fsx.max_capacity_gib)]


def plan_storage(project: str, storage: Storage, gpus: int) -> StoragePlan:
    fsx = storage.fsx
    if not fsx.enabled or fsx.existing is not None:
        # No file system, or one that exists already: its size is not ours to plan.
        return StoragePlan(
            fsx=fsx.enabled, created=False, deployment_type=None, capacity_gib=None, throughput_per_tib=None,
            aggregate_mb_s=None, checkpoint_bytes=storage.checkpoint.size_bytes if storage.checkpoint else None,
            target_write_seconds=None, write_seconds=None, restore_seconds=None, per_gpu_mb_s=None,
            sized_by_planner=False, meets_target=None, unreachable=None, project=project, spec=storage,
        )

    ckpt = storage.checkpoint
    size = ckpt.size_bytes if ckpt else None
    target = ckpt.target_write_seconds if ckpt else None
    needed_mb_s = size / MB / target if ckpt else 0.0
    min_bytes = size * ckpt.keep if ckpt else 0
    unreachable = None

    if fsx.storage_capacity_gib is not None:
        capacity = fsx.storage_capacity_gib
        tiers = _tiers(fsx)
        if fsx.efa_enabled:  # only the tiers whose EFA size step divides this capacity (the config checked one does)
            tiers = tuple(t for t in tiers if capacity % FSX_EFA_STEP_GIB[t] == 0)
        # The lowest tier that meets the target at this size, else the highest there is.
        tier = next((t for t in tiers if aggregate_mb_s(capacity, t) >= needed_mb_s), tiers[-1])
        if fsx.deployment_type == "PERSISTENT_2" and fsx.throughput_per_tib is None and not ckpt and not fsx.efa_enabled:
            tier = DEFAULT_THROUGHPUT
        sized = False
    else:
        capacity, tier = None, None
        for candidate, tiers in _candidates(fsx, bool(ckpt)):
            if candidate * GiB < min_bytes:
                continue
            fit = next((t for t in tiers if aggregate_mb_s(candidate, t) >= needed_mb_s), None)
            if fit is not None:
                capacity, tier = candidate, fit
                break
        sized = True
        if capacity is None:
            best = _tiers(fsx)[-1]
            unreachable = (
                f"writing {size / TB:,.2f} TB in {target:g} s needs {needed_mb_s / 1000:,.1f} GB/s; the largest allowed "
                f"file system ({fsx.max_capacity_gib:,} GiB at {best} MB/s per TiB) gives "
                f"{aggregate_mb_s(fsx.max_capacity_gib, best) / 1000:,.1f} GB/s"
            )
            capacity = max(c for c, tiers in _candidates(fsx, True) if best in tiers)
            tier = best

    aggregate = aggregate_mb_s(capacity, tier)
    write = size / MB / aggregate if ckpt else None
    return StoragePlan(
        fsx=True,
        created=True,
        deployment_type=fsx.deployment_type,
        capacity_gib=capacity,
        throughput_per_tib=tier if fsx.deployment_type == "PERSISTENT_2" else None,
        aggregate_mb_s=aggregate,
        checkpoint_bytes=size,
        target_write_seconds=target,
        write_seconds=write,
        restore_seconds=write,  # FSx reads and writes at the same baseline throughput
        per_gpu_mb_s=aggregate / gpus if gpus else None,
        sized_by_planner=sized,
        meets_target=None if write is None else write <= target + 1e-9,
        unreachable=unreachable,
        project=project,
        spec=storage,
    )


def smallest_meeting(storage: StoragePlan, checkpoint: Checkpoint, gpus: int) -> StoragePlan:
    """The smallest file system of the project's deployment type (and its PERSISTENT_2 tier) that writes
    ``checkpoint`` within its ``target_write_seconds``: the planner's own search with size and tier set free.

    The one search behind every "the smallest file system that would do" (goodput's time share, the HBM bound).
    """
    spec = storage.spec
    free: dict[str, object] = {"storage_capacity_gib": None}
    if spec.fsx.deployment_type == "PERSISTENT_2":
        free["throughput_per_tib"] = None
    sized: Storage = spec.model_copy(update={"fsx": spec.fsx.model_copy(update=free), "checkpoint": checkpoint})
    return plan_storage(storage.project, sized, gpus)


def duration_text(seconds: float) -> str:
    """A write or restore time as people read it: seconds under 2 minutes, minutes under 2 hours, else hours."""
    if seconds < 120:
        return f"{seconds:,.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:,.0f} min"
    return f"{seconds / 3600:,.1f} h"


def pin_advice(capacity_gib: int) -> str:
    """What to do about a planner-sized file system once it is deployed (FSx for Lustre only grows)."""
    return (f"auto-sized: once deployed, write `storage_capacity_gib: {capacity_gib}` under storage.fsx, so that a "
            "smaller model or a longer target can never shrink it (FSx only grows; a smaller size means a new, "
            "empty file system, which `fmcluster deploy` refuses)")
