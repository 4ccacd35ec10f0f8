"""Checkpoint goodput: how much of the cluster's wall time goes to checkpoints. Pure arithmetic.

The model, stated once (MB = 10^6 bytes; times in seconds):

- A checkpoint is written every ``I = interval_minutes x 60`` s of wall time, measured start to start,
  and training waits while it is written (a blocking write). The share of wall time spent writing is
  ``W / I``, with ``W`` the plan's write time at the planned FSx throughput: 60 s every 30 min = 3.3%.
  An asynchronous writer hides part of ``W``; then the share is an upper bound.
- With a node-failure rate ``r`` (failures per 1,000 node-days), the ``N`` GPU nodes fail
  ``f = r x N / 1000`` times a day. Each failure reads the last checkpoint back (``R`` s, FSx reads at the
  write throughput) and redoes, on average, half an interval of lost work. Per second of wall time the
  restore share is ``f x R / 86400`` and the redone-work share ``f x (I / 2) / 86400``. Restarting the job
  (scheduler, node replacement, NCCL set-up) is not counted: it depends on the job, not on FSx.
- The share the plan checks and sizes FSx for is writing + restoring: the time FSx throughput decides.
  Redone work depends on the interval only, so it is shown beside it, not in it.
"""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.config.storage import Checkpoint
from fmcluster.plan.storage import MB, StoragePlan, smallest_meeting

TIME_SHARE_LIMIT = 0.05
"""Judgement, not an AWS fact: more than 5% of the cluster's wall time writing and restoring checkpoints is
worth a bigger file system (or asynchronous writes); ``checkpoint-time-share`` warns past it."""

DAY_SECONDS = 86400.0


@dataclass(frozen=True)
class CheckpointGoodput:
    interval_seconds: float
    write_seconds: float
    restore_seconds: float
    write_share: float
    """Share of wall time spent writing checkpoints (W / I)."""
    failures_per_day: float | None
    """Failures a day over the GPU nodes, from ``node_failures_per_1000_node_days`` (None: not given)."""
    restore_share: float | None
    redo_share: float | None
    """Share of wall time redoing the work lost since the last checkpoint (half an interval per failure)."""
    limit: float
    """The share (writing + restoring) past which ``checkpoint-time-share`` warns."""
    suggested_capacity_gib: int | None
    """The smallest FSx size at which writing + restoring falls to ``limit`` or under (None when none does)."""
    suggested_throughput_per_tib: int | None
    """Its PERSISTENT_2 tier (None for SCRATCH_2, or when no size does)."""
    suggestion_unreachable: str | None

    @property
    def share(self) -> float:
        """Writing + restoring: the share of wall time FSx throughput decides."""
        return self.write_share + (self.restore_share or 0.0)

    @property
    def over_limit(self) -> bool:
        return self.share > self.limit + 1e-12


def plan_goodput(storage: StoragePlan, nodes: int, gpus: int) -> CheckpointGoodput | None:
    """The goodput figures, when the project says how often it checkpoints to a file system it creates."""
    ckpt = storage.spec.checkpoint
    if ckpt is None or ckpt.interval_minutes is None or storage.write_seconds is None:
        return None
    interval = ckpt.interval_minutes * 60
    write = storage.write_seconds
    restore = storage.restore_seconds or write  # set with write_seconds by plan_storage
    rate = ckpt.node_failures_per_1000_node_days
    failures = None if rate is None else rate * nodes / 1000
    restore_share = None if failures is None else failures * restore / DAY_SECONDS
    redo_share = None if failures is None else failures * (interval / 2) / DAY_SECONDS
    suggestion = _smallest_under_limit(storage, ckpt, interval, failures or 0.0, gpus)
    return CheckpointGoodput(
        interval_seconds=interval,
        write_seconds=write,
        restore_seconds=restore,
        write_share=write / interval,
        failures_per_day=failures,
        restore_share=restore_share,
        redo_share=redo_share,
        limit=TIME_SHARE_LIMIT,
        suggested_capacity_gib=None if suggestion.unreachable else suggestion.capacity_gib,
        suggested_throughput_per_tib=None if suggestion.unreachable else suggestion.throughput_per_tib,
        suggestion_unreachable=suggestion.unreachable,
    )


def _smallest_under_limit(storage: StoragePlan, ckpt: Checkpoint, interval: float, failures_per_day: float,
                          gpus: int) -> StoragePlan:
    """Ask the checkpoint planner: the write time that keeps writing + restoring at the limit, as its target.

    share = S/A x (1/I + f/86400) <= L  gives  A >= S x (1/I + f/86400) / L, i.e. a write time of S/A.
    """
    size_mb = ckpt.size_bytes / MB
    needed_mb_s = size_mb * (1 / interval + failures_per_day / DAY_SECONDS) / TIME_SHARE_LIMIT
    return smallest_meeting(storage, ckpt.model_copy(update={"target_write_seconds": size_mb / needed_mb_s}), gpus)
