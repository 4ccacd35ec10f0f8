"""Checkpoint goodput against hand-computed cases: the share of wall time spent writing (and restoring)
checkpoints, the smallest FSx that keeps it under 5%, and the checks around it.
MB = 10^6 B, GiB = 2^30 B, TiB = 2^40 B."""

from __future__ import annotations

import pytest
from support import BASE, plan_of

from fmcluster import checks, config
from fmcluster.errors import ConfigError
from fmcluster.plan.storage import plan_storage

# 2,400 GiB at 1000 MB/s per TiB = 2,343.75 MB/s: 140.625 GB take exactly 60 s.
SIXTY_SECONDS = """\
storage:
  fsx: {storage_capacity_gib: 2400, throughput_per_tib: 1000}
  checkpoint: {bytes: 140625000000, target_write_seconds: 60, interval_minutes: 30%s}
"""
# 1.12 TB (70e9 x 16 B) on 2,400 GiB at 125 MB/s per TiB = 292.97 MB/s: 3,822.9 s per checkpoint.
SLOW = """\
storage:
  fsx: {storage_capacity_gib: 2400, throughput_per_tib: 125}
  checkpoint: {parameters: 70e9, target_write_seconds: 3600, interval_minutes: 120}
"""


def test_sixty_seconds_every_thirty_minutes_is_a_thirtieth() -> None:
    g = plan_of(BASE + SIXTY_SECONDS % "").goodput
    assert g.write_seconds == pytest.approx(60.0)
    assert g.interval_seconds == 1800
    assert g.write_share == pytest.approx(60 / 1800)  # 3.3%
    assert g.failures_per_day is None and g.restore_share is None and g.redo_share is None
    assert g.share == pytest.approx(60 / 1800) and not g.over_limit


def test_failures_add_restoring_and_redone_work() -> None:
    # 2 nodes at 5 failures per 1,000 node-days = 0.01 a day; each restores 60 s and redoes 15 min on average
    g = plan_of(BASE + SIXTY_SECONDS % ", node_failures_per_1000_node_days: 5").goodput
    assert g.failures_per_day == pytest.approx(0.01)
    assert g.restore_share == pytest.approx(0.01 * 60 / 86400)
    assert g.redo_share == pytest.approx(0.01 * 900 / 86400)
    assert g.share == pytest.approx(60 / 1800 + 0.01 * 60 / 86400)  # redone work is not FSx's to shorten


def test_failures_scale_with_the_node_count() -> None:
    text = (BASE + SIXTY_SECONDS % ", node_failures_per_1000_node_days: 5").replace("count: 2", "count: 200")
    assert plan_of(text).goodput.failures_per_day == pytest.approx(1.0)


def test_the_smallest_file_system_under_five_percent() -> None:
    g = plan_of(BASE + SLOW).goodput
    assert g.write_share == pytest.approx(1.12e12 / (2400 / 1024 * 125e6) / 7200)  # 53.1%
    assert g.over_limit
    # 5% of 2 h = 360 s for 1.12 TB needs 3,111 MB/s: 2,400 GiB gives at most 2,344 (at 1000 MB/s/TiB);
    # 4,800 GiB gives 2,344 at 500 and 4,688 at 1000.
    assert (g.suggested_capacity_gib, g.suggested_throughput_per_tib) == (4800, 1000)
    assert g.suggestion_unreachable is None


@pytest.mark.parametrize(("capacity", "tier", "under"), [(4800, 1000, True), (4800, 500, False), (2400, 1000, False)])
def test_the_suggestion_is_the_edge(capacity: int, tier: int, under: bool) -> None:
    """At the suggested size the share is under 5%; one step smaller (tier or size) it is not."""
    text = BASE + SLOW.replace("storage_capacity_gib: 2400, throughput_per_tib: 125",
                               f"storage_capacity_gib: {capacity}, throughput_per_tib: {tier}")
    assert plan_of(text).goodput.over_limit is not under


def test_an_unreachable_share_says_why() -> None:
    text = BASE + SLOW.replace("parameters: 70e9", "parameters: 1e12").replace("interval_minutes: 120",
                                                                               "interval_minutes: 1")
    g = plan_of(text).goodput
    assert g.suggested_capacity_gib is None and "GB/s" in g.suggestion_unreachable


def test_without_an_interval_there_is_no_goodput() -> None:
    plan = plan_of(BASE + SLOW.replace(", interval_minutes: 120", ""))
    assert plan.goodput is None and plan.as_dict()["storage"]["goodput"] is None


def test_json_carries_the_goodput() -> None:
    data = plan_of(BASE + SIXTY_SECONDS % "").as_dict()["storage"]["goodput"]
    assert data["write_share"] == pytest.approx(1 / 30) and data["share"] == pytest.approx(1 / 30)
    assert data["over_limit"] is False and data["limit"] == 0.05


def _warnings(text: str) -> list[str]:
    _, found = checks.validate(config.parse(text))
    return [w.check for w in found]


def test_over_five_percent_warns_with_the_size_that_fixes_it() -> None:
    _, found = checks.validate(config.parse(BASE + SLOW))
    [warning] = [w for w in found if w.check == "checkpoint-time-share"]
    assert warning.path == "storage.checkpoint.interval_minutes"
    assert "53.1% of the cluster's wall time" in warning.message and "4,800 GiB at 1000 MB/s per TiB" in warning.message


def test_under_five_percent_does_not_warn() -> None:
    assert "checkpoint-time-share" not in _warnings(BASE + SIXTY_SECONDS % "")


def test_the_planner_sized_default_is_judged_too() -> None:
    """Without a size, the planner meets the 60 s target; every 10 min that is 10%: a warning naming a bigger FSx."""
    text = BASE + "storage:\n  checkpoint: {parameters: 70e9, interval_minutes: 10}\n"
    plan = plan_of(text)
    assert plan.goodput.write_share == pytest.approx(plan.storage.write_seconds / 600)
    assert "checkpoint-time-share" in _warnings(text)
    bigger = plan_storage("demo", plan.storage.spec.model_copy(update={"fsx": plan.storage.spec.fsx.model_copy(
        update={"storage_capacity_gib": plan.goodput.suggested_capacity_gib,
                "throughput_per_tib": plan.goodput.suggested_throughput_per_tib})}), plan.gpus)
    assert bigger.write_seconds / 600 <= 0.05


@pytest.mark.parametrize("fsx", ["fsx: {enabled: false}", "fsx: {existing: {file_system_id: fs-0123456789abcdef0, "
                                 "dns_name: fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com, mount_name: abcdefgh}}"])
def test_an_interval_without_a_planned_file_system_is_an_error(fsx: str) -> None:
    text = BASE + f"storage:\n  {fsx}\n  checkpoint: {{parameters: 70e9, interval_minutes: 30}}\n"
    with pytest.raises(ConfigError) as refused:
        checks.validate(config.parse(text))
    [problem] = [p for p in refused.value.problems if p.check == "checkpoint-interval-needs-fsx"]
    assert problem.path == "storage.checkpoint.interval_minutes" and problem.line == 9  # the checkpoint line


def test_a_failure_rate_needs_an_interval() -> None:
    text = BASE + "storage:\n  checkpoint: {parameters: 70e9, node_failures_per_1000_node_days: 5}\n"
    with pytest.raises(ConfigError) as refused:
        config.parse(text)
    assert any("node_failures_per_1000_node_days needs interval_minutes" in p.message for p in refused.value.problems)


@pytest.mark.parametrize("value", ["0", "-5", "20000"])
def test_an_interval_out_of_range_is_refused(value: str) -> None:
    with pytest.raises(ConfigError) as refused:
        config.parse(BASE + f"storage:\n  checkpoint: {{parameters: 70e9, interval_minutes: {value}}}\n")
    assert any("interval_minutes" in p.path for p in refused.value.problems)


def test_an_interval_shorter_than_the_write_says_so() -> None:
    # 3,823 s per checkpoint every 30 min: the next would start before this one is written
    _, found = checks.validate(config.parse(BASE + SLOW.replace("interval_minutes: 120", "interval_minutes: 30")))
    [warning] = [w for w in found if w.check == "checkpoint-time-share"]
    assert "a checkpoint takes 64 min to write, longer than the 30 min between checkpoints" in warning.message
    assert "GiB at 1000 MB/s per TiB would bring it to 5% or under" in warning.message
