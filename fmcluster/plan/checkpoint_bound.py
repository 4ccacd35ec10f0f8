"""Storage sense without a ``checkpoint:`` section: how long the largest checkpoint could take.

A full-state checkpoint (weights, optimizer state) of a job that keeps its state in GPU memory
cannot be larger than that memory, so the cluster's HBM is an upper bound on one checkpoint
(not when a job offloads optimizer state to host memory or NVMe). Writing that bound at the
planned FSx throughput gives an upper bound on the write time; each GPU's share of the
throughput says what a restore or a dataset read gets when every GPU reads at once.

The two limits below are judgement, not AWS facts; ``fsx-throughput-low`` warns past them and
names the smallest file system that meets both.
"""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.config.storage import Checkpoint
from fmcluster.plan.storage import GB, MB, StoragePlan, smallest_meeting

BOUND_WRITE_LIMIT_SECONDS = 3600.0
"""Longest acceptable write time of the bound: a checkpoint of the whole HBM in an hour or less."""

PER_GPU_FLOOR_MB_S = 10.0
"""Least FSx throughput per GPU when all GPUs read at once (MB/s)."""


@dataclass(frozen=True)
class CheckpointBound:
    bytes: int
    """The cluster's GPU memory: no full-state checkpoint is larger (an upper bound, not an estimate)."""
    write_seconds: float
    """Time to write ``bytes`` at the planned aggregate FSx throughput: an upper bound."""
    per_gpu_mb_s: float
    limit_seconds: float
    per_gpu_floor_mb_s: float
    suggested_capacity_gib: int | None
    """The smallest FSx size that holds the bound and meets both limits (None when none does)."""
    suggested_throughput_per_tib: int | None
    """Its PERSISTENT_2 tier (None for SCRATCH_2, or when no size meets the limits)."""
    suggestion_unreachable: str | None

    @property
    def too_slow(self) -> bool:
        return self.write_seconds > self.limit_seconds

    @property
    def per_gpu_low(self) -> bool:
        return self.per_gpu_mb_s < self.per_gpu_floor_mb_s


def plan_checkpoint_bound(storage: StoragePlan, hbm_gb: float | None, gpus: int) -> CheckpointBound | None:
    """The bound, for a file system the project creates and whose checkpoint it does not describe."""
    spec = storage.spec
    if not storage.created or spec.checkpoint is not None or hbm_gb is None or not gpus or not storage.aggregate_mb_s:
        return None
    size = int(hbm_gb * GB)
    aggregate = storage.aggregate_mb_s
    suggestion = _smallest_meeting(storage, size, gpus)
    return CheckpointBound(
        bytes=size,
        write_seconds=size / MB / aggregate,
        per_gpu_mb_s=aggregate / gpus,
        limit_seconds=BOUND_WRITE_LIMIT_SECONDS,
        per_gpu_floor_mb_s=PER_GPU_FLOOR_MB_S,
        suggested_capacity_gib=None if suggestion.unreachable else suggestion.capacity_gib,
        suggested_throughput_per_tib=None if suggestion.unreachable else suggestion.throughput_per_tib,
        suggestion_unreachable=suggestion.unreachable,
    )


def _smallest_meeting(storage: StoragePlan, size: int, gpus: int) -> StoragePlan:
    """Ask the checkpoint planner itself: one checkpoint of the bound, written fast enough for both limits."""
    needed_mb_s = max(size / MB / BOUND_WRITE_LIMIT_SECONDS, PER_GPU_FLOOR_MB_S * gpus)
    return smallest_meeting(storage, Checkpoint(bytes=size, target_write_seconds=size / MB / needed_mb_s, keep=1), gpus)
