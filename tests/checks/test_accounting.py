"""orchestrator.accounting: off by default; what the orchestrator cannot do is an error naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import BASE

from fmcluster import checks, config
from fmcluster.errors import ConfigError


def _validate(extra: str, tmp_path: Path):
    path = tmp_path / "demo.yaml"
    text = BASE + extra
    path.write_text(text)
    return checks.validate(config.parse(text, path))


def _problems(extra: str, tmp_path: Path):
    with pytest.raises(ConfigError) as info:
        _validate(extra, tmp_path)
    return info.value.problems


def test_accounting_is_off_by_default(tmp_path: Path) -> None:
    project = config.parse(BASE + "orchestrator: {type: parallelcluster}\n").project
    accounting = project.orchestrator.accounting
    assert accounting.enabled is False
    # unset: each orchestrator's defaults decide (test_slurm_policy_per_orchestrator)
    assert (accounting.fair_share, accounting.qos_per_partition, accounting.tres) == (None, None, None)


PCS = "os: al2023\norchestrator:\n  type: pcs\n  pcs: {ami_id: ami-0123456789abcdef0}\n  accounting:\n    enabled: true\n"


@pytest.mark.parametrize("orchestrator, expected", [
    ("parallelcluster", (True, True, ("gres/gpu",))),
    ("hyperpod", (False, True, ())),
    ("pcs", (False, False, ())),
])
def test_slurm_policy_per_orchestrator(orchestrator: str, expected: tuple, tmp_path: Path) -> None:
    """Once on, fair share, a QoS per partition and GPUs as TRES where fmcluster can apply them, nothing elsewhere."""
    from fmcluster.plan import make_plan
    extra = (PCS if orchestrator == "pcs"
             else f"orchestrator:\n  type: {orchestrator}\n  accounting:\n    enabled: true\n")
    _validate(extra, tmp_path)
    policy = make_plan(config.parse(BASE + extra).project).cluster.slurm_policy
    assert (policy.fair_share, policy.qos_per_partition, policy.tres) == expected


def test_the_projects_own_policy_wins_where_it_applies(tmp_path: Path) -> None:
    from fmcluster.plan import make_plan
    extra = ("orchestrator:\n  type: parallelcluster\n  accounting:\n    enabled: true\n    fair_share: false\n"
             "    qos_per_partition: false\n    tres: [gres/gpu, license/matlab]\n")
    _validate(extra, tmp_path)
    policy = make_plan(config.parse(BASE + extra).project).cluster.slurm_policy
    assert (policy.fair_share, policy.qos_per_partition, policy.tres) == (False, False, ("gres/gpu", "license/matlab"))


@pytest.mark.parametrize("setting, line", [("fair_share: true", 13), ("qos_per_partition: true", 13),
                                           ("tres: [gres/gpu]", 13)])
def test_a_policy_pcs_cannot_apply_is_refused_naming_it(setting: str, line: int, tmp_path: Path) -> None:
    [p] = _problems(PCS + f"    {setting}\n", tmp_path)
    name = setting.split(":")[0]
    assert p.check == "accounting-defaults" and p.path == f"orchestrator.accounting.{name}" and p.line == line
    assert "pcs" in p.message and "PCS" in p.message and f"remove `{name}`" in p.hint


def test_hyperpod_refuses_fair_share_but_takes_its_qos(tmp_path: Path) -> None:
    extra = "orchestrator:\n  type: hyperpod\n  accounting:\n    enabled: true\n    qos_per_partition: true\n"
    _validate(extra, tmp_path)
    [p] = _problems(extra + "    fair_share: true\n", tmp_path)
    assert p.path == "orchestrator.accounting.fair_share" and "slurm.conf" in p.message


def test_switching_a_policy_off_is_never_refused(tmp_path: Path) -> None:
    _validate(PCS + "    fair_share: false\n    qos_per_partition: false\n    tres: []\n", tmp_path)


@pytest.mark.parametrize("orchestrator", ["parallelcluster", "hyperpod"])
def test_database_accounting_passes_on_slurm_orchestrators(orchestrator: str, tmp_path: Path) -> None:
    _validate(f"orchestrator:\n  type: {orchestrator}\n  accounting: {{enabled: true}}\n", tmp_path)


def test_hyperpod_may_keep_accounting_on_its_controller(tmp_path: Path) -> None:
    _validate("orchestrator:\n  type: hyperpod\n  accounting: {enabled: true, store: controller}\n", tmp_path)


def test_accounting_without_slurm_is_refused_at_enabled(tmp_path: Path) -> None:
    [p] = _problems("orchestrator:\n  accounting:\n    enabled: true\n", tmp_path)
    assert p.check == "accounting-supported" and p.path == "orchestrator.accounting.enabled" and p.line == 9
    assert "none" in p.message


def test_a_store_the_orchestrator_lacks_is_refused_at_store(tmp_path: Path) -> None:
    [p] = _problems("orchestrator:\n  type: parallelcluster\n  accounting:\n    enabled: true\n    store: controller\n",
                    tmp_path)
    assert p.path == "orchestrator.accounting.store" and p.line == 11
    assert "parallelcluster" in p.message and "database" in p.hint


def test_settings_without_enabled_are_a_warning(tmp_path: Path) -> None:
    extra = "orchestrator:\n  type: parallelcluster\n  accounting:\n    tres: [gres/gpu, license/matlab]\n"
    _, warnings = _validate(extra, tmp_path)
    [p] = [w for w in warnings if w.check.startswith("accounting-")]
    assert (p.check, p.level) == ("accounting-settings-unused", "warning")
    assert p.path == "orchestrator.accounting.enabled" and "enabled: true" in p.hint


def test_parallelcluster_cluster_names_past_40_characters_are_refused_with_accounting(tmp_path: Path) -> None:
    name = "a" + "b" * 40  # 41: fine without accounting (ParallelCluster allows 60)
    extra = f"orchestrator:\n  type: parallelcluster\n  parallelcluster: {{cluster_name: {name}}}\n"
    _validate(extra, tmp_path)
    [p] = _problems(extra + "  accounting: {enabled: true}\n", tmp_path)
    assert p.path == "orchestrator.parallelcluster.cluster_name" and "at most 40" in p.message


@pytest.mark.parametrize(("setting", "where", "words"), [
    ("tres: [gpu]", "orchestrator.accounting.tres[0]", "not a trackable resource"),
    ("tres: [gres/gpu, gres/gpu]", "orchestrator.accounting.tres", "more than once"),
    ("database: {min_capacity_acu: 0.75}", "orchestrator.accounting.database.min_capacity_acu", "multiple of 0.5"),
    ("database: {min_capacity_acu: 4, max_capacity_acu: 2}", "orchestrator.accounting.database.min_capacity_acu",
     "above max_capacity_acu"),
    ("store: controller\n    database: {max_capacity_acu: 4}", "orchestrator.accounting.database", "store: controller"),
])
def test_bad_settings_name_their_field(setting: str, where: str, words: str, tmp_path: Path) -> None:
    text = BASE + f"orchestrator:\n  type: hyperpod\n  accounting:\n    enabled: true\n    {setting}\n"
    with pytest.raises(ConfigError) as info:
        config.parse(text, tmp_path / "demo.yaml")
    [p] = info.value.problems
    assert p.path == where and words in p.message, p.format()


def test_database_subnets_that_do_not_fit_the_vpc_are_an_error_naming_vpc_cidr(tmp_path: Path) -> None:
    network = "network: {vpc_cidr: 10.0.0.0/24, compute_subnet_prefix: 25}\n"
    found = [p for p in _problems(network + "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n",
                                  tmp_path) if p.check == "accounting-database-subnets"]
    assert [p.path for p in found] == ["network.vpc_cidr"]
    # the same network without accounting is fine (the two /25s fill the /24)
    _validate(network + "orchestrator: {type: parallelcluster}\n", tmp_path)


def test_an_existing_network_names_its_database_subnets(tmp_path: Path) -> None:
    existing = ("network:\n  existing: {vpc_id: vpc-0123456789abcdef0, compute_subnet_id: subnet-0123456789abcdef0,\n"
                "    compute_subnet_cidr: 10.0.0.0/20, database_subnet_ids: [subnet-0a, subnet-0b]}\n")
    with pytest.raises(ConfigError):  # not subnet IDs
        _validate(existing + "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n", tmp_path)
    existing = existing.replace("subnet-0a, subnet-0b", "subnet-0123456789abcdef1, subnet-0123456789abcdef2")
    _validate(existing + "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n", tmp_path)
