"""Storage sense without a checkpoint section: the bound from GPU memory, its write time, each GPU's share,
and the smallest file system that meets both limits, against hand-computed cases.
MB = 10^6 B, GB = 10^9 B, GiB = 2^30 B, TiB = 2^40 B."""

from __future__ import annotations

import json

import pytest
from support import BASE, ROOT, plan_of

from fmcluster import config
from fmcluster.config.storage import Storage
from fmcluster.plan import make_plan
from fmcluster.plan.checkpoint_bound import plan_checkpoint_bound
from fmcluster.plan.storage import plan_storage


def test_default_sized_fsx_for_two_p5_nodes() -> None:
    bound = plan_of(BASE).checkpoint_bound
    # 16 H100 x 80 GB = 1.28 TB; 1,200 GiB at 250 MB/s/TiB = 292.97 MB/s
    assert bound.bytes == 1_280_000_000_000
    assert bound.write_seconds == pytest.approx(1.28e12 / (1200 / 1024 * 250 * 1e6))  # 4,369 s
    assert bound.per_gpu_mb_s == pytest.approx(1200 / 1024 * 250 / 16)  # 18.3 MB/s
    assert bound.too_slow and not bound.per_gpu_low
    # 1.28 TB in an hour needs 355.6 MB/s and 1,192 GiB: 1,200 GiB at 500 gives 586 MB/s (at 250 only 293)
    assert (bound.suggested_capacity_gib, bound.suggested_throughput_per_tib) == (1200, 500)


def test_gb200_ultraservers_get_hours_and_two_mb_s_per_gpu() -> None:
    # The example without its pinned FSx (which meets this bound): the planner's default 1,200 GiB at 250.
    text = (ROOT / "examples" / "p6e-gb200-ultraserver.yaml").read_text().split("\nstorage:\n")[0] + "\n"
    plan = make_plan(config.parse(text).project)
    bound = plan.checkpoint_bound
    assert plan.gpus == 144 and bound.bytes == 36 * 740 * 10**9  # 26.64 TB (catalog: 740 GB per instance)
    assert bound.write_seconds / 3600 == pytest.approx(26.64e12 / 292.96875e6 / 3600)  # 25.3 h
    assert bound.per_gpu_mb_s == pytest.approx(292.96875 / 144)  # 2.03 MB/s
    assert bound.too_slow and bound.per_gpu_low
    # 26.64 TB = 24,810 GiB -> 26,400 GiB; 7,400 MB/s needed: at 250 it gives 6,445, at 500 12,891
    assert (bound.suggested_capacity_gib, bound.suggested_throughput_per_tib) == (26400, 500)


def test_a_described_checkpoint_replaces_the_bound() -> None:
    assert plan_of(BASE + "storage:\n  checkpoint: {parameters: 7.0e+9}\n").checkpoint_bound is None


@pytest.mark.parametrize("storage", [
    "storage:\n  fsx: {enabled: false}\n",
    "storage:\n  fsx:\n    existing: {file_system_id: fs-0123456789abcdef0, dns_name: fs.example.com, mount_name: abcdefgh}\n"
    "  bucket: {existing_name: my-bucket}\n",
])
def test_no_bound_for_a_file_system_not_planned_here(storage: str) -> None:
    assert plan_of(BASE + storage).checkpoint_bound is None


def test_a_fast_file_system_meets_both() -> None:
    bound = plan_of(BASE + "storage:\n  fsx: {storage_capacity_gib: 2400, throughput_per_tib: 500}\n").checkpoint_bound
    assert bound.write_seconds == pytest.approx(1.28e12 / (2400 / 1024 * 500e6))  # 1,092 s
    assert not bound.too_slow and not bound.per_gpu_low


def test_per_gpu_floor_alone() -> None:
    """Little memory per GPU, many GPUs: the bound writes in time but each GPU's share is under the floor."""
    storage = plan_storage("demo", Storage.model_validate({}), 64)
    bound = plan_checkpoint_bound(storage, hbm_gb=64 * 1.0, gpus=64)
    assert not bound.too_slow and bound.per_gpu_low  # 292.97 / 64 = 4.6 MB/s
    # 640 MB/s for 64 GPUs at 10 MB/s each: 1,200 GiB at 1000 MB/s/TiB gives 1,172
    assert (bound.suggested_capacity_gib, bound.suggested_throughput_per_tib) == (1200, 1000)


def test_unknown_memory_gives_no_bound() -> None:
    storage = plan_storage("demo", Storage.model_validate({}), 8)
    assert plan_checkpoint_bound(storage, hbm_gb=None, gpus=8) is None


def test_an_unreachable_suggestion_is_said() -> None:
    storage = plan_storage("demo", Storage.model_validate({"fsx": {"max_capacity_gib": 2400}}), 144)
    bound = plan_checkpoint_bound(storage, hbm_gb=26_640, gpus=144)
    assert bound.suggested_capacity_gib is None and "GB/s" in bound.suggestion_unreachable


def test_plan_json_adds_the_bound_and_keeps_every_old_key() -> None:
    data = json.loads(json.dumps(plan_of(BASE).as_dict()))
    storage = data["storage"]
    assert {"capacity_gib", "throughput_per_tib", "aggregate_mb_s", "checkpoint_bytes", "write_seconds",
            "restore_seconds", "per_gpu_mb_s", "units"} <= set(storage)
    assert storage["write_seconds"] is None  # still the described checkpoint's time: none described
    assert storage["checkpoint_bound"]["bytes"] == 1_280_000_000_000 and storage["checkpoint_bound"]["too_slow"] is True
