"""ParallelCluster checks: what ParallelCluster would refuse, reported with file and line first."""

from __future__ import annotations

import textwrap

from support import load

from fmcluster.checks import CHECKS
from fmcluster.plan import make_plan


def problems(text: str):
    loaded = load(textwrap.dedent(text))
    plan = make_plan(loaded.project)
    return [p for name, declared in CHECKS.items() if name.startswith("parallelcluster-")
            for p in declared.run(loaded, plan)]


HEAD = """\
name: pc
availability_zone_id: use1-az6
"""


def test_a_valid_project_has_no_problems():
    assert problems(HEAD + """\
compute_groups:
  - {name: train, instance_type: p5.48xlarge, count: 4}
orchestrator: {type: parallelcluster}
""") == []


def test_queue_names_slurm_rejects_point_at_their_line():
    found = problems(HEAD + """\
compute_groups:
  - {name: train, instance_type: p5.48xlarge, count: 4}
orchestrator:
  type: parallelcluster
  parallelcluster:
    queues:
      Train_Q: [train]
""")
    p, = found
    assert (p.check, p.level, p.line, p.path) == ("parallelcluster-names", "error", 9,
                                                  "orchestrator.parallelcluster.queues.Train_Q")
    assert "lowercase" in p.message and str(p.file) == "pc.yaml"
    assert "pc.yaml:9" in p.format()


def test_default_is_reserved_as_a_group_and_queue_name():
    found = problems(HEAD + """\
compute_groups:
  - {name: default, instance_type: p5.48xlarge, count: 4}
orchestrator: {type: parallelcluster}
""")
    assert [(p.check, p.line) for p in found] == [("parallelcluster-names", 4)]
    assert "reserved" in found[0].message


def test_queue_names_longer_than_25_characters_are_refused():
    found = problems(HEAD + """\
compute_groups:
  - {name: train, instance_type: p5.48xlarge, count: 4}
orchestrator:
  type: parallelcluster
  parallelcluster:
    queues: {a-very-long-queue-name-for-slurm: [train]}
""")
    assert [p.check for p in found] == ["parallelcluster-names"] and "at most 25" in found[0].message


def test_capacity_block_static_nodes_must_equal_the_count():
    found = problems(HEAD + """\
compute_groups:
  - name: block
    instance_type: p5en.48xlarge
    count: 16
    capacity: {type: capacity-block, reservation_id: cr-0fedcba9876543210}
orchestrator:
  type: parallelcluster
  parallelcluster:
    static_nodes:
      block: 8
""")
    p, = found
    assert (p.check, p.line) == ("parallelcluster-capacity", 12)
    assert "MinCount = MaxCount" in p.message


def test_static_nodes_beyond_the_group_or_for_unknown_groups():
    found = problems(HEAD + """\
compute_groups:
  - {name: train, instance_type: p5.48xlarge, count: 4}
orchestrator:
  type: parallelcluster
  parallelcluster:
    static_nodes: {train: 5, infer: 1}
""")
    assert sorted(p.message for p in found) == ["'infer' is not a compute group", "5 static nodes but the group has 4"]


def test_ultraserver_capacity_blocks_come_in_9_or_18():
    found = problems(HEAD + """\
os: ubuntu-24.04
compute_groups:
  - name: nvl
    instance_type: p6e-gb200.36xlarge
    count: 12
    capacity: {type: capacity-block, reservation_id: cr-0fedcba9876543210}
orchestrator: {type: parallelcluster}
""")
    p, = found
    assert (p.check, p.line, p.path) == ("parallelcluster-capacity", 7, "compute_groups[0].count")
    assert "9 or 18" in p.message


def test_queue_mixing_capacity_blocks_with_on_demand_is_refused():
    found = problems(HEAD + """\
compute_groups:
  - {name: od, instance_type: p5.48xlarge, count: 2}
  - name: block
    instance_type: p5.48xlarge
    count: 4
    capacity: {type: capacity-block, reservation_id: cr-0fedcba9876543210}
orchestrator:
  type: parallelcluster
  parallelcluster:
    queues: {gpu: [od, block]}
""")
    p, = found
    assert (p.check, p.line) == ("parallelcluster-queues", 12) and "one CapacityType" in p.message


def test_queue_mapping_must_cover_each_group_once_and_only_known_groups():
    found = problems(HEAD + """\
compute_groups:
  - {name: a, instance_type: p5.48xlarge, count: 2}
  - {name: b, instance_type: p5.48xlarge, count: 2}
orchestrator:
  type: parallelcluster
  parallelcluster:
    queues: {q1: [a, ghost], q2: [a]}
""")
    messages = sorted(p.message for p in found)
    assert messages == ["compute group 'a' is in queues 'q1' and 'q2'",
                        "compute group 'b' is in no queue, so its nodes would never start",
                        "queue 'q1' lists 'ghost', which is not a compute group"]


def test_os_override_must_match_the_project_os():
    found = problems(HEAD + """\
os: ubuntu-22.04
compute_groups:
  - {name: train, instance_type: p5.48xlarge, count: 4}
orchestrator:
  type: parallelcluster
  parallelcluster: {os: alinux2023}
""")
    p, = found
    assert (p.check, p.path) == ("parallelcluster-os", "orchestrator.parallelcluster.os")


def test_mixed_architectures_are_refused_at_the_odd_group():
    found = problems(HEAD + """\
compute_groups:
  - {name: x86, instance_type: p5.48xlarge, count: 2}
  - name: nvl
    instance_type: p6e-gb200.36xlarge
    count: 9
    capacity: {type: capacity-block, reservation_id: cr-0fedcba9876543210}
orchestrator: {type: parallelcluster}
""")
    assert [(p.check, p.line) for p in found] == [("parallelcluster-architecture", 6)]


def test_tag_values_parallelcluster_refuses():
    found = problems(HEAD + """\
compute_groups:
  - {name: train, instance_type: p5.48xlarge, count: 4}
orchestrator: {type: parallelcluster}
tags:
  owner: ML Infra team
""")
    assert [(p.check, p.line) for p in found] == [("parallelcluster-tags", 7)]


def test_settings_without_the_orchestrator_warn():
    found = problems(HEAD + """\
compute_groups:
  - {name: train, instance_type: p5.48xlarge, count: 4}
orchestrator:
  type: none
  parallelcluster: {create_cluster: false}
""")
    assert [(p.check, p.level) for p in found] == [("parallelcluster-settings-unused", "warning")]


def test_checks_stay_quiet_for_other_orchestrators():
    assert problems(HEAD + """\
compute_groups:
  - {name: default, instance_type: p5.48xlarge, count: 4}
""") == []
