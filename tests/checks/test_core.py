"""Every check of the core domains, triggered by a small project and reported with its name, level,
field and line; the plain project triggers none of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import BASE

from fmcluster import catalog, checks, config, pcluster_facts
from fmcluster.errors import ConfigError
from fmcluster.plan import make_plan

BLOCK = "    capacity: {type: capacity-block, reservation_id: cr-0123456789abcdef0}\n"
HP = "orchestrator: {type: hyperpod}\n"
EXISTING = "network:\n  existing: {vpc_id: vpc-0123456789abcdef0, compute_subnet_id: subnet-0123456789abcdef0}\n"

CASES = [
    # check, level, project text, field path
    ("compute-subnet-fits-vpc", "error", BASE + "network: {vpc_cidr: 10.0.0.0/24, compute_subnet_prefix: 24}\n",
     "network.compute_subnet_prefix"),
    ("compute-subnet-size", "error", BASE.replace("count: 2", "count: 300") + "network:\n  compute_subnet_prefix: 24\n",
     "network.compute_subnet_prefix"),
    ("existing-subnet-size-unknown", "warning", BASE + EXISTING, "network.existing"),
    ("training-plan-needs-hyperpod", "error",
     BASE + "    capacity: {type: training-plan, arn: 'arn:aws:sagemaker:us-east-1:111122223333:training-plan/tp1'}\n",
     "compute_groups[0].capacity"),
    ("placement-group-with-capacity-block", "warning", BASE + "    placement_group: true\n" + BLOCK,
     "compute_groups[0].placement_group"),
    ("capacity-block-size", "error", BASE.replace("count: 2", "count: 65") + BLOCK, "compute_groups[0].count"),
    ("capacity-block-count", "warning", BASE.replace("count: 2", "count: 12") + BLOCK, "compute_groups[0].count"),
    ("training-plan-region", "error",
     BASE + "    capacity: {type: training-plan, arn: 'arn:aws:sagemaker:us-west-2:111122223333:training-plan/tp1'}\n"
     + HP, "compute_groups[0].capacity.arn"),
    ("pcs-os", "error", BASE + "orchestrator: {type: pcs, pcs: {ami_id: ami-0123456789abcdef0}}\n", "orchestrator.type"),
    ("ultraserver-multiple", "warning", BASE.replace("p5.48xlarge", "p6e-gb200.36xlarge").replace("count: 2", "count: 5"),
     "compute_groups[0].count"),
    ("accounting-supported", "error", BASE + "orchestrator: {accounting: {enabled: true}}\n",
     "orchestrator.accounting.enabled"),
    ("accounting-defaults", "error", BASE + "orchestrator: {type: hyperpod, accounting: {enabled: true, tres: [gres/gpu]}}\n",
     "orchestrator.accounting.tres"),
    ("accounting-database-subnets", "error",
     BASE + "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n" + EXISTING,
     "network.existing.database_subnet_ids"),
    ("accounting-settings-unused", "warning", BASE + "orchestrator: {accounting: {fair_share: false}}\n",
     "orchestrator.accounting.enabled"),
    ("extra-rule-files", "error", BASE + "observability: {extra_rule_files: [missing-rules.yaml]}\n",
     "observability.extra_rule_files[0]"),
    ("association-paths", "error",
     BASE + "storage:\n  fsx:\n    associations:\n      - file_system_path: /data\n      - file_system_path: /data/raw\n",
     "storage.fsx.associations[1].file_system_path"),
    ("association-bucket", "error",
     BASE + "storage:\n  fsx:\n    associations:\n      - {file_system_path: /data, data_repository_path: 's3://someone-else/x/'}\n",
     "storage.fsx.associations[0].data_repository_path"),
    ("checkpoint-target-reachable", "error",
     BASE + "storage:\n  checkpoint: {parameters: 1.0e+13, target_write_seconds: 1}\n",
     "storage.checkpoint.target_write_seconds"),
    ("checkpoint-target-missed", "warning",
     BASE + "storage:\n  checkpoint: {parameters: 70.0e+9}\n  fsx: {storage_capacity_gib: 1200}\n", "storage.fsx"),
    ("checkpoint-time-share", "warning",
     BASE + "storage:\n  checkpoint: {parameters: 70.0e+9, interval_minutes: 10}\n", "storage.checkpoint.interval_minutes"),
    ("checkpoint-interval-needs-fsx", "error",
     BASE + "storage:\n  fsx: {enabled: false}\n  checkpoint: {parameters: 70.0e+9, interval_minutes: 30}\n",
     "storage.checkpoint.interval_minutes"),
    ("availability-zone-id-known", "error", BASE.replace("use1-az6", "xyz9-az9"), "availability_zone_id"),
    ("availability-zone-in-region", "error", BASE + "region: eu-west-1\n", "region"),
    ("mount-paths", "error", BASE + "storage:\n  scratch: {mount_path: /etc/scratch}\n", "storage.scratch.mount_path"),
    ("fsx-associations-need-created-file-system", "error",
     BASE + "storage:\n  fsx:\n    existing: {file_system_id: fs-0123456789abcdef0, dns_name: fs.example.com, "
            "mount_name: abcdefgh}\n    associations: [{file_system_path: /data}]\n", "storage.fsx.associations"),
    ("stack-limits", "error", BASE.replace("  - name: train", "".join(
        f"  - {{name: g{i}, instance_type: p5.48xlarge, count: 1}}\n" for i in range(101)) + "  - name: train"),
     "compute_groups"),
    ("suppressed-warning-exists", "warning", BASE + "suppress_warnings: [no-such-check]\n", "suppress_warnings[0]"),
    ("placement-group-with-reservation", "error",
     BASE + "    placement_group: true\n    capacity: {type: reservation, reservation_id: cr-0123456789abcdef0}\n",
     "compute_groups[0].placement_group"),
    ("hyperpod-capacity", "error", BASE + BLOCK + HP, "compute_groups[0].capacity"),
    ("hyperpod-head-capacity", "error",
     BASE + "orchestrator:\n  type: hyperpod\n  hyperpod:\n    controller:\n      capacity: {type: training-plan, "
            "arn: 'arn:aws:sagemaker:us-east-1:111122223333:training-plan/tp1'}\n",
     "orchestrator.hyperpod.controller.capacity"),
    ("hyperpod-ultraserver", "error",
     BASE.replace("p5.48xlarge", "p6e-gb200.36xlarge").replace("count: 2", "count: 12") + HP, "compute_groups[0].count"),
    ("hyperpod-groups", "error", BASE + "orchestrator:\n  type: hyperpod\n  hyperpod:\n    groups: {trian: {}}\n",
     "orchestrator.hyperpod.groups.trian"),
    ("hyperpod-lifecycle-bucket", "error",
     BASE + "orchestrator:\n  type: hyperpod\n  hyperpod: {lifecycle_bucket_name: my-lifecycle-scripts}\n",
     "orchestrator.hyperpod.lifecycle_bucket_name"),
    ("fsx-efa-orchestrator", "error",
     BASE + HP + "storage: {fsx: {efa_enabled: true, metadata: {mode: AUTOMATIC}}}\n", "storage.fsx.efa_enabled"),
    ("hyperpod-settings-unused", "warning", BASE + "orchestrator: {hyperpod: {node_recovery: None}}\n",
     "orchestrator.hyperpod"),
    ("local-zone-known", "error", BASE.replace("use1-az6", "use1-mia1-az1"), "availability_zone_id"),
    ("local-zone-network", "error",
     BASE.replace("use1-az6", "use1-dfw2-az1") + "storage: {fsx: {efa_enabled: true, metadata: {mode: AUTOMATIC}}}\n",
     "storage.fsx.efa_enabled"),
    ("ultraserver-zone", "warning",
     BASE.replace("p5.48xlarge", "p6e-gb200.36xlarge").replace("count: 2", "count: 18") + BLOCK, "availability_zone_id"),
    ("parallelcluster-retained-cluster-network", "error",
     BASE + "orchestrator: {type: parallelcluster, parallelcluster: {deletion_policy: Retain}}\n",
     "orchestrator.parallelcluster.deletion_policy"),
    ("fsx-efa-orchestrator", "error",
     BASE + "orchestrator: {type: parallelcluster}\nstorage: {fsx: {efa_enabled: true}}\n", "storage.fsx.efa_enabled"),
    ("fsx-efa-metadata", "error", BASE + "storage: {fsx: {efa_enabled: true}}\n", "storage.fsx.efa_enabled"),
    ("fsx-throughput-low", "warning", BASE, "storage.fsx"),
    # 129 p5 nodes x the FSx guide's 8 EFA interfaces = 1,032 connections, over the 1,024 a file system takes.
    ("fsx-efa-connections", "warning",
     BASE.replace("count: 2", "count: 129") + "storage: {fsx: {efa_enabled: true, metadata: {mode: AUTOMATIC}}}\n",
     "storage.fsx.efa_enabled"),
]


def test_efa_connections_at_the_limit_are_fine(tmp_path: Path) -> None:
    text = BASE.replace("count: 2", "count: 128") + "storage: {fsx: {efa_enabled: true, metadata: {mode: AUTOMATIC}}}\n"
    assert "fsx-efa-connections" not in [p.check for p in _problems(text, tmp_path)]


def _only_error(text: str, tmp_path: Path, path: str):
    path_ = tmp_path / "demo.yaml"
    path_.write_text(text)
    with pytest.raises(ConfigError) as refused:
        checks.validate(config.parse(text, path_))
    return next(p for p in refused.value.problems if p.path == path)


def _problems(text: str, tmp_path: Path) -> list:
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    loaded = config.parse(text, path)
    return checks.run_checks(loaded, make_plan(loaded.project))


@pytest.mark.parametrize("name, level, text, field", CASES, ids=[c[0] for c in CASES])
def test_each_check_names_itself_its_level_field_and_line(tmp_path: Path, name: str, level: str, text: str,
                                                          field: str) -> None:
    found = [p for p in _problems(text, tmp_path) if p.check == name]
    assert found, f"{name} did not fire"
    problem = found[0]
    assert (problem.level, problem.path) == (level, field)
    assert problem.line is not None and problem.file == tmp_path / "demo.yaml"
    assert problem.message and problem.hint


def _besides_unpinned(problems: list) -> list[str]:
    """Check names, less ``bootstrap-unpinned`` (it fires while bootstrap/versions.yaml has placeholders)."""
    return [p.check for p in problems if p.check != "bootstrap-unpinned"]


def test_the_plain_project_triggers_nothing_but_the_unpinned_and_throughput_warnings(tmp_path: Path) -> None:
    assert _besides_unpinned(_problems(BASE, tmp_path)) == ["fsx-throughput-low"]
    # a described checkpoint is sized by the planner: no bound, no throughput warning
    described = BASE + "storage:\n  checkpoint: {parameters: 7.0e+9}\n"
    assert _besides_unpinned(_problems(described, tmp_path)) == []


def test_every_check_is_exercised_here_or_in_its_domain_test() -> None:
    here = {c[0] for c in CASES}
    named = "".join(Path(__file__).with_name(f).read_text()
                    for f in ("test_core.py", "test_parallelcluster.py", "test_pcs.py", "test_teams.py",
                                  "test_hyperpod_eks.py", "test_teams_slurm.py"))
    untested = [name for name in checks.CHECKS if name not in here and f'"{name}"' not in named]
    assert not untested, f"checks no test triggers: {untested}"


def test_errors_stop_validation_warnings_do_not(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        checks.validate(config.parse(CASES[0][2]))
    assert [p.check for p in refused.value.problems] == ["compute-subnet-fits-vpc"]
    _, warnings = checks.validate(config.parse(BASE + EXISTING))
    assert set(_besides_unpinned(warnings)) == {"existing-subnet-size-unknown", "fsx-throughput-low"}


def test_a_warning_is_silenced_by_name_an_error_is_not(tmp_path: Path) -> None:
    text = BASE + EXISTING + "suppress_warnings: [existing-subnet-size-unknown, capacity-block-size]\n"
    found = {(p.check, p.path) for p in _problems(text, tmp_path)}
    assert ("existing-subnet-size-unknown", "network.existing") not in found
    assert ("suppressed-warning-exists", "suppress_warnings[1]") in found  # an error check named there


def test_parallelcluster_refuses_an_instance_type_it_does_not_run(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    monkeypatch.setattr(pcluster_facts, "SUPPORTED_INSTANCE_PREFIXES", ("p5en",))
    found = _problems(BASE + "orchestrator: {type: parallelcluster}\n", tmp_path)
    assert ("parallelcluster-instance-type", "compute_groups[0].instance_type") in {(p.check, p.path) for p in found}


def test_subnet_too_small_says_which_size_fits(tmp_path: Path) -> None:
    text = BASE.replace("count: 2", "count: 300") + "network:\n  compute_subnet_prefix: 24\n"
    p = _only_error(text, tmp_path, "network.compute_subnet_prefix")
    assert p.check == "compute-subnet-size" and p.line == 8
    assert "/23 would fit" in p.hint and "compute_subnet_prefix: 23" in p.hint
    assert "407" in p.message  # 300 + 75 headroom + 32 reserved


def test_training_plan_needs_hyperpod(tmp_path: Path) -> None:
    text = BASE + "    capacity: {type: training-plan, arn: 'arn:aws:sagemaker:us-east-1:111122223333:training-plan/tp1'}\n"
    p = _only_error(text, tmp_path, "compute_groups[0].capacity")
    assert p.check == "training-plan-needs-hyperpod"
    # with HyperPod the training plan is what the group runs on
    _, warnings = checks.validate(config.parse(text + HP))
    assert "training-plan-needs-hyperpod" not in {p.check for p in warnings}


def test_hyperpod_refuses_a_type_it_does_not_offer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every catalog type is offered today; a catalog that grows past HyperPod's list is refused per group."""
    monkeypatch.setattr(catalog, "HYPERPOD_TYPES", frozenset({"p5en.48xlarge"}))
    [p] = [p for p in _problems(BASE + HP, tmp_path) if p.check == "hyperpod-instance-type"]
    assert "ml.p5.48xlarge" in p.message and "p5en.48xlarge" in p.hint


def test_throughput_warning_names_the_bound_and_the_smallest_fsx_that_meets_it(tmp_path: Path) -> None:
    gb200 = (BASE.replace("p5.48xlarge", "p6e-gb200.36xlarge").replace("count: 2", "count: 36")
             + "suppress_warnings: [ultraserver-multiple]\n")
    [p] = [p for p in _problems(gb200, tmp_path) if p.check == "fsx-throughput-low"]
    assert "144 GPUs' memory (26.64 TB, an upper bound)" in p.message and "25.3 h" in p.message
    assert "2.0 MB/s" in p.message and "under 10 MB/s" in p.message
    assert "storage_capacity_gib: 26400 and throughput_per_tib: 500" in p.hint and "storage.checkpoint" in p.hint
    # following the hint silences it
    fixed = gb200 + "storage:\n  fsx: {storage_capacity_gib: 26400, throughput_per_tib: 500}\n"
    assert "fsx-throughput-low" not in _besides_unpinned(_problems(fixed, tmp_path))


def test_throughput_warning_is_silenced_by_name(tmp_path: Path) -> None:
    text = BASE + "suppress_warnings: [fsx-throughput-low]\n"
    assert _besides_unpinned(_problems(text, tmp_path)) == []


def test_more_than_100_hyperpod_instance_groups_are_refused(tmp_path: Path) -> None:
    """The controller and 99 compute groups make 100 instance groups (SageMaker's most); one more is refused,
    naming the limit. (Without HyperPod, 100 groups stay within the cluster stack's limits.)"""
    group = "  - {{name: g{i}, instance_type: p5.48xlarge, count: 1}}\n"
    head = BASE[:BASE.index("compute_groups:")] + "compute_groups:\n"

    def project(n: int) -> str:
        return head + "".join(group.format(i=i) for i in range(n)) + HP

    assert "hyperpod-instance-groups" not in {p.check for p in _problems(project(99), tmp_path)}
    [p] = [p for p in _problems(project(100), tmp_path) if p.check == "hyperpod-instance-groups"]
    assert p.level == "error" and "101 HyperPod instance groups" in p.message and "at most 100" in p.message


def test_a_vpc_shared_with_another_project_of_the_folder_is_a_warning(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(tmp_path))
    (tmp_path / "other.yaml").write_text(BASE.replace("name: demo", "name: other")
                                         + "network: {vpc_cidr: 10.1.0.0/16}\n")
    (tmp_path / "imported.yaml").write_text(BASE.replace("name: demo", "name: imported") + EXISTING)
    clash = BASE + "network: {vpc_cidr: 10.1.128.0/17}\n"
    found = [p for p in _problems(clash, tmp_path) if p.check == "vpc-cidr-shared"]
    assert [(p.level, p.path, p.line) for p in found] == [("warning", "network.vpc_cidr", 7)]
    assert "other" in found[0].message and "imported" not in found[0].message
    apart = BASE + "network: {vpc_cidr: 10.2.0.0/16}\n"
    assert "vpc-cidr-shared" not in [p.check for p in _problems(apart, tmp_path)]
    # outside the projects folder (an example, a file given by path), neighbours share ranges freely
    elsewhere = tmp_path / "examples"
    elsewhere.mkdir()
    (elsewhere / "twin.yaml").write_text(BASE.replace("name: demo", "name: twin"))
    assert "vpc-cidr-shared" not in [p.check for p in _problems(BASE, elsewhere)]


@pytest.mark.parametrize("count, fires", [(1, False), (12, True), (16, False), (3, True), (64, False)])
def test_capacity_block_counts_are_the_sizes_blocks_are_sold_in(count: int, fires: bool, tmp_path: Path) -> None:
    found = [p for p in _problems(BASE.replace("count: 2", f"count: {count}") + BLOCK, tmp_path)
             if p.check == "capacity-block-count"]
    assert bool(found) == fires
    if count == 12:
        assert "a block of 16 leaves 4 paid instances idle" in found[0].message


def test_an_ultraserver_block_is_not_held_to_instance_block_sizes(tmp_path: Path) -> None:
    text = BASE.replace("p5.48xlarge", "p6e-gb200.36xlarge").replace("count: 2", "count: 18") + BLOCK
    assert "capacity-block-count" not in [p.check for p in _problems(text, tmp_path)]


def test_pcs_refuses_an_os_written_out_that_no_pcs_image_is_built_for(tmp_path: Path) -> None:
    pcs = "orchestrator: {type: pcs, pcs: {ami_id: ami-0123456789abcdef0}}\n"
    found = [p for p in _problems("os: ubuntu-22.04\n" + BASE + pcs, tmp_path) if p.check == "pcs-os"]
    assert [(p.path, p.line) for p in found] == [("os", 1)] and "(the default os)" not in found[0].message
    for fine in ("al2023", "ubuntu-24.04"):
        assert "pcs-os" not in [p.check for p in _problems(f"os: {fine}\n" + BASE + pcs, tmp_path)]
