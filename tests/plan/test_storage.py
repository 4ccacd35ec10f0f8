"""The checkpoint planner against hand-computed cases. MB = 10^6 B, GiB = 2^30 B, TiB = 2^40 B."""

from __future__ import annotations

import pytest

from fmcluster.config.storage import Storage
from fmcluster.facts import FSX_EFA_STEP_GIB
from fmcluster.facts import fsx_capacities as capacities
from fmcluster.facts import fsx_nearest_capacities as nearest_capacities
from fmcluster.facts import fsx_valid_capacity as valid_capacity
from fmcluster.plan.storage import aggregate_mb_s, plan_storage


def _plan(storage: dict, gpus: int = 64):
    return plan_storage("demo", Storage.model_validate(storage), gpus)


def test_70b_on_24000_gib_at_1000_writes_in_about_48_s() -> None:
    plan = _plan({"fsx": {"storage_capacity_gib": 24000, "throughput_per_tib": 1000},
                  "checkpoint": {"parameters": 70e9, "bytes_per_parameter": 16, "target_write_seconds": 60}})
    assert plan.checkpoint_bytes == 1_120_000_000_000  # 1.12 TB
    # 24,000 GiB = 23.4375 TiB; x 1000 MB/s per TiB = 23,437.5 MB/s
    assert plan.aggregate_mb_s == pytest.approx(23_437.5)
    assert plan.write_seconds == pytest.approx(1.12e12 / 23_437.5e6)  # 47.79 s
    assert round(plan.write_seconds) == 48
    assert plan.meets_target is True and plan.sized_by_planner is False


def test_planner_picks_the_smallest_capacity_that_meets_the_target() -> None:
    # 1.12 TB in 60 s needs 18,666.7 MB/s. At 1000 MB/s/TiB: 16,800 GiB gives 16,406 MB/s (too slow),
    # 19,200 GiB gives 18,750 MB/s (enough).
    plan = _plan({"checkpoint": {"parameters": 70e9, "target_write_seconds": 60}})
    assert (plan.capacity_gib, plan.throughput_per_tib) == (19200, 1000)
    assert plan.write_seconds == pytest.approx(59.73, abs=0.01)
    assert plan.per_gpu_mb_s == pytest.approx(18_750 / 64)


def test_planner_prefers_the_lowest_tier_at_the_smallest_size() -> None:
    # 100 GB in 600 s needs 166.7 MB/s: 1200 GiB at 250 MB/s/TiB gives 293 MB/s, at 125 only 146.
    plan = _plan({"checkpoint": {"bytes": 100 * 10**9, "target_write_seconds": 600}})
    assert (plan.capacity_gib, plan.throughput_per_tib) == (1200, 250)


def test_capacity_holds_the_kept_checkpoints() -> None:
    # 3 x 4 TB = 12 TB = 11,176 GiB: the first valid size above is 12,000 GiB (at 125 MB/s/TiB that is
    # 1,465 MB/s, enough for 4 TB in an hour).
    plan = _plan({"checkpoint": {"bytes": 4 * 10**12, "target_write_seconds": 3600, "keep": 3}})
    assert plan.capacity_gib == 12000 and plan.throughput_per_tib == 125


def test_fixed_size_that_misses_the_target_is_reported() -> None:
    plan = _plan({"fsx": {"storage_capacity_gib": 2400, "throughput_per_tib": 125},
                  "checkpoint": {"parameters": 7e9, "target_write_seconds": 30}})
    # 112 GB at 2400/1024 x 125 = 292.97 MB/s takes 382 s
    assert plan.write_seconds == pytest.approx(112e9 / (2400 / 1024 * 125 * 1e6))
    assert plan.meets_target is False


def test_unreachable_target() -> None:
    plan = _plan({"checkpoint": {"parameters": 1e12, "target_write_seconds": 10}})
    assert plan.unreachable and "GB/s" in plan.unreachable


def test_scratch_is_200_mb_s_per_tib() -> None:
    plan = _plan({"fsx": {"deployment_type": "SCRATCH_2", "storage_capacity_gib": 2400}})
    assert plan.aggregate_mb_s == pytest.approx(2400 / 1024 * 200)
    assert plan.throughput_per_tib is None


def test_no_checkpoint_gives_the_smallest_default_file_system() -> None:
    plan = _plan({})
    assert (plan.capacity_gib, plan.throughput_per_tib) == (1200, 250)
    assert plan.write_seconds is None


def test_valid_sizes() -> None:
    assert list(capacities(12000)) == [1200, 2400, 4800, 7200, 9600, 12000]
    assert [valid_capacity(x) for x in (1200, 2400, 3600, 4800, 1000)] == [True, True, False, True, False]
    assert nearest_capacities(3600) == (2400, 4800)
    assert nearest_capacities(1000) == (None, 1200)
    assert aggregate_mb_s(1024, 500) == 500


EFA = {"fsx": {"efa_enabled": True, "metadata": {"mode": "AUTOMATIC"}}}


@pytest.mark.parametrize("tier, step", [(1000, 4800), (500, 9600), (250, 19200), (125, 38400)])
def test_efa_file_systems_come_in_their_tiers_steps(tier: int, step: int) -> None:
    storage = {"fsx": {**EFA["fsx"], "throughput_per_tib": tier}, "checkpoint": {"bytes": 10**12, "target_write_seconds": 600}}
    p = _plan(storage)
    assert p.throughput_per_tib == tier and p.capacity_gib % step == 0


def test_efa_planner_never_proposes_a_size_fsx_refuses() -> None:
    """70B-style state written in 60 s: plain SSD steps would give 36,000 GiB at 1000 MB/s/TiB, which FSx refuses."""
    p = _plan({**EFA, "checkpoint": {"parameters": 1.5e11, "target_write_seconds": 60}})
    assert p.capacity_gib % FSX_EFA_STEP_GIB[p.throughput_per_tib] == 0 and p.meets_target
    assert p.capacity_gib != 36000


def test_efa_without_a_checkpoint_gets_the_smallest_efa_size() -> None:
    p = _plan(EFA)
    assert (p.capacity_gib, p.throughput_per_tib) == (4800, 1000)


def test_an_efa_size_off_the_steps_is_refused_naming_the_steps() -> None:
    with pytest.raises(ValueError, match="not a size FSx accepts for an EFA-enabled file system"):
        Storage.model_validate({"fsx": {**EFA["fsx"], "storage_capacity_gib": 36000, "throughput_per_tib": 1000}})
    Storage.model_validate({"fsx": {**EFA["fsx"], "storage_capacity_gib": 38400, "throughput_per_tib": 1000}})
