"""HyperPod on EKS projects: the settings Kubernetes has no use for, teams without task governance, and what
CreateCluster or EKS would refuse, each reported with the file and line of the field to change; the two examples
pass."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from support import ROOT

from fmcluster import catalog, checks, config, eks_versions
from fmcluster.config.hyperpod_eks import DEFAULT_KUBERNETES_VERSION, KUBERNETES_VERSIONS
from fmcluster.errors import ConfigError

EXAMPLES = [ROOT / "examples" / "p5en-hyperpod-eks.yaml", ROOT / "examples" / "p5-hyperpod-eks-teams.yaml"]


ADMIN = "admins: [arn:aws:iam::111122223333:role/admin]"


def project(eks: str = "", *, extra: str = "", instance_type: str = "p5.48xlarge", count: int = 2,
            capacity: str = "", name: str = "train", network: str = "", admin: bool = True,
            os: str | None = "al2023") -> str:
    lines = ["name: eksdemo", "availability_zone_id: use1-az6", network or "network: {vpc_cidr: 10.30.0.0/16}",
             *([f"os: {os}"] if os else []),
             "compute_groups:", f"  - name: {name}", f"    instance_type: {instance_type}", f"    count: {count}"]
    if capacity:
        lines.append(f"    capacity: {capacity}")
    lines += ["orchestrator:", "  type: hyperpod-eks"]
    eks = "\n".join(x for x in (ADMIN if admin and "admins:" not in eks else "", eks) if x)
    if eks:
        lines += ["  hyperpod_eks:", *("    " + line for line in eks.splitlines())]
    return "\n".join(lines) + "\n" + extra


def problems(text: str) -> list:
    """What loading (structure) or validating (checks) the file reports."""
    with pytest.raises(ConfigError) as raised:
        checks.validate(config.parse(text, Path("eks.yaml")))
    return raised.value.problems


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_examples_pass(example: Path) -> None:
    plan, warnings = checks.validate(config.load(example))
    assert plan.cluster.orchestrator == "hyperpod-eks" and not warnings


def test_defaults_newest_supported_kubernetes_and_a_private_endpoint() -> None:
    plan, _ = checks.validate(config.parse(project(), Path("eks.yaml")))
    eks = plan.cluster.hyperpod_eks
    assert eks.kubernetes_version == DEFAULT_KUBERNETES_VERSION == max(KUBERNETES_VERSIONS, key=lambda v: int(
        v.split(".")[1]))
    assert eks.public_endpoint is False and eks.task_governance is False
    assert [t.key for t in eks.group("train").node_taints] == ["nvidia.com/gpu"]


@pytest.mark.parametrize("version", ["1.27", "1.36", "1.35.1"])
def test_a_kubernetes_version_hyperpod_does_not_support_is_refused(version: str) -> None:
    text = project(f'kubernetes_version: "{version}"')
    [problem] = problems(text)
    assert problem.path == "orchestrator.hyperpod_eks.kubernetes_version"
    assert problem.line == line_of(text, "kubernetes_version")


@pytest.mark.parametrize("key, value, words", [
    ("partition", "dev", "Slurm partitions do not exist on Kubernetes"),
    ("slurm_config_strategy", "Managed", "no slurm.conf"),
])
def test_slurm_only_settings_are_refused_with_why(key: str, value: str, words: str) -> None:
    where = f"groups:\n  train:\n    {key}: {value}" if key == "partition" else f"{key}: {value}"
    text = project(where)
    [problem] = problems(text)
    assert words in problem.message and problem.line == line_of(text, f"{key}:")


def test_hyperpod_slurm_section_is_refused_not_ignored() -> None:
    text = project() + "  hyperpod:\n    login: {count: 1}\n"
    found = [p for p in problems(text) if p.level == "error"]
    assert [p.check for p in found] == ["hyperpod-eks-slurm-settings"]
    assert found[0].line == line_of(text, "hyperpod:")


def test_accounting_is_refused() -> None:
    text = project() + "  accounting: {enabled: true}\n"
    assert [p.check for p in problems(text)] == ["accounting-supported"]


def test_teams_need_task_governance() -> None:
    teams = "teams:\n  - name: research\n    instances:\n      train: {guaranteed: 1}\n"
    assert [p.check for p in problems(project(extra=teams))] == ["hyperpod-eks-teams"]
    plan, _ = checks.validate(config.parse(project("task_governance: true", extra=teams), Path("eks.yaml")))
    assert [t.name for t in plan.cluster.teams] == ["research"]


def test_team_members_are_not_enforced() -> None:
    teams = "teams:\n  - name: research\n    members: [alice]\n"
    [problem] = problems(project("task_governance: true", extra=teams))
    assert problem.check == "teams-supported" and "members" in problem.message


@pytest.mark.parametrize("eks, check", [
    ("groups:\n  nosuch: {}", "hyperpod-eks-groups"),
    ("lifecycle_bucket_name: my-scripts", "hyperpod-eks-lifecycle-bucket"),
])
def test_settings_that_name_nothing_or_miss_the_managed_policy(eks: str, check: str) -> None:
    assert [p.check for p in problems(project(eks))] == [check]


def test_a_compute_group_named_like_the_system_group() -> None:
    assert [p.check for p in problems(project(name="system"))] == ["hyperpod-eks-groups"]


def test_instance_types_and_capacity_hyperpod_cannot_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every catalog type is offered today; a catalog that grows past HyperPod's list is refused per group."""
    monkeypatch.setattr(catalog, "HYPERPOD_TYPES", frozenset({"p5en.48xlarge"}))
    assert "hyperpod-eks-instance-type" in [p.check for p in problems(project())]
    monkeypatch.undo()
    block = "{type: capacity-block, reservation_id: cr-0123456789abcdef0}"
    assert "hyperpod-eks-capacity" in [p.check for p in problems(project(capacity=block))]


def test_gb200_counts_are_whole_ultraservers() -> None:
    plan_arn = "{type: training-plan, arn: 'arn:aws:sagemaker:us-east-1:111122223333:training-plan/x'}"
    found = problems(project(instance_type="p6e-gb200.36xlarge", count=10, capacity=plan_arn))
    assert "hyperpod-eks-ultraserver" in [p.check for p in found]


def test_an_existing_network_has_no_control_plane_subnets() -> None:
    existing = ("network:\n  existing: {vpc_id: vpc-0123456789abcdef0, compute_subnet_id: subnet-0123456789abcdef0, "
                "compute_subnet_cidr: 10.0.0.0/22}")
    assert "hyperpod-eks-network" in [p.check for p in problems(project(network=existing))]


def test_a_bad_admin_arn_points_at_its_item() -> None:
    text = project("admins:\n  - arn:aws:iam::111122223333:role/ok\n  - not-an-arn")
    [problem] = problems(text)
    assert problem.path.endswith("admins[1]") and problem.line == line_of(text, "not-an-arn")


def test_section_ignored_under_another_orchestrator_is_a_warning() -> None:
    text = project("task_governance: true").replace("type: hyperpod-eks", "type: none")
    _, warnings = checks.validate(config.parse(text, Path("eks.yaml")))
    assert "hyperpod-eks-settings-unused" in [w.check for w in warnings]


def test_a_version_far_from_the_deploy_time_kubectl_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eks_versions, "today", lambda: date(2026, 1, 1))  # 1.32 and 1.33 still creatable then
    _, warnings = checks.validate(config.parse(project('kubernetes_version: "1.32"'), Path("eks.yaml")))
    assert "hyperpod-eks-kubectl-skew" in [w.check for w in warnings]
    _, warnings = checks.validate(config.parse(project('kubernetes_version: "1.34"'), Path("eks.yaml")))
    assert "hyperpod-eks-kubectl-skew" not in [w.check for w in warnings]


def test_control_plane_zones_are_chosen_by_zone_id_never_one_eks_refuses() -> None:
    """The nodes' zone and the Region's lowest-numbered other zone EKS accepts (issue 41 item 4)."""
    plan, _ = checks.validate(config.parse(project(), Path("eks.yaml")))
    assert plan.cluster.control_plane_zone_ids == ("use1-az6", "use1-az1")
    plan, _ = checks.validate(config.parse(project().replace("use1-az6", "use1-az3"), Path("eks.yaml")))
    assert plan.cluster.control_plane_zone_ids == ("use1-az1", "use1-az2")  # use1-az3: EKS refuses it
    text = project("control_plane_zone_ids: [use1-az4, use1-az3]")
    [problem] = problems(text)
    assert problem.check == "hyperpod-eks-control-plane-zones" and "use1-az3" in problem.message
    assert problem.path.endswith("control_plane_zone_ids[1]") and problem.line == line_of(text, "control_plane")
    [problem] = problems(project("control_plane_zone_ids: [use1-az4, usw2-az1]"))
    assert "not an Availability Zone of the nodes' Region" in problem.message
    [problem] = problems(project("control_plane_zone_ids: [use1-az4, use1-az4]"))
    assert "must differ" in problem.message


def test_at_least_one_admin_is_required_naming_the_key() -> None:
    """With API authentication and no creator admin, nobody could reach the Kubernetes API (issue 41 item 6)."""
    text = project("task_governance: true", admin=False)
    [problem] = problems(text)
    assert problem.check == "hyperpod-eks-admins" and problem.path == "orchestrator.hyperpod_eks.admins"
    assert "names nobody" in problem.message and problem.line == line_of(text, "hyperpod_eks:")
    [problem] = problems(project(admin=False))
    assert problem.check == "hyperpod-eks-admins" and problem.line == line_of(project(admin=False), "orchestrator:")


@pytest.mark.parametrize("eks, words, key, check", [
    ("public_endpoint: true", "needs public_access_cidrs", "public_endpoint", "hyperpod-eks-endpoint"),
    ("public_access_cidrs: [203.0.113.0/24]", "the endpoint is private", "public_access_cidrs",
     "hyperpod-eks-endpoint"),
    ("public_endpoint: true\npublic_access_cidrs: [0.0.0.0/0]", "whole internet", "0.0.0.0/0", None),
    ("public_endpoint: true\npublic_access_cidrs: [203.0.113.0/33]", "not an IPv4 CIDR", "/33", None),
])
def test_a_public_endpoint_is_open_only_to_the_cidrs_named(eks: str, words: str, key: str, check: str | None) -> None:
    """The check, or the model itself (no check name) for a CIDR that is not one or opens everything."""
    text = project(eks)
    [problem] = problems(text)
    assert words in problem.message and problem.line == line_of(text, key)
    assert check is None or problem.check == check


def test_a_public_endpoint_with_cidrs_passes() -> None:
    plan, _ = checks.validate(config.parse(project("public_endpoint: true\npublic_access_cidrs: [203.0.113.0/24]"),
                                           Path("eks.yaml")))
    assert plan.cluster.hyperpod_eks.public_access_cidrs == ["203.0.113.0/24"]


def test_the_default_kubernetes_is_in_eks_standard_support_today() -> None:
    """Issue 41 item 9: 1.33 left standard support on 2026-07-29, 1.34 on 2026-12-02 (EKS's calendar)."""
    assert eks_versions.support(DEFAULT_KUBERNETES_VERSION) == "standard"
    assert eks_versions.support("1.33", date(2026, 12, 2)) == "extended"
    assert eks_versions.support("1.34", date(2026, 12, 1)) == "standard"
    assert eks_versions.support("1.34", date(2026, 12, 2)) == "extended"  # billed from the first day
    assert eks_versions.support("1.31", date(2026, 12, 2)) == "ended"
    assert eks_versions.support("1.36") == "unknown"
    assert set(KUBERNETES_VERSIONS) <= set(eks_versions.CALENDAR)


def test_a_pinned_version_in_or_near_extended_support_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eks_versions, "today", lambda: date(2026, 12, 2))
    text = project('kubernetes_version: "1.33"')
    _, warnings = checks.validate(config.parse(text, Path("eks.yaml")))
    [warning] = [w for w in warnings if w.check == "hyperpod-eks-kubernetes-support"]
    assert "left EKS standard support on 2026-07-29" in warning.message and "upgrades the control plane" in \
        warning.message and warning.line == line_of(text, "kubernetes_version")
    monkeypatch.setattr(eks_versions, "today", lambda: date(2027, 2, 1))  # 54 days before 1.35 leaves it
    _, warnings = checks.validate(config.parse(project(), Path("eks.yaml")))
    [warning] = [w for w in warnings if w.check == "hyperpod-eks-kubernetes-support"]
    assert "leaves EKS standard support on 2027-03-27, in 54 days" in warning.message
    monkeypatch.setattr(eks_versions, "today", lambda: date(2026, 12, 2))
    _, warnings = checks.validate(config.parse(project(), Path("eks.yaml")))
    assert "hyperpod-eks-kubernetes-support" not in [w.check for w in warnings]


def test_a_version_past_extended_support_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eks_versions, "today", lambda: date(2026, 12, 2))
    text = project('kubernetes_version: "1.31"')
    [problem] = problems(text)
    assert problem.check == "hyperpod-eks-kubernetes-ended" and "ended on 2026-11-26" in problem.message
    assert problem.line == line_of(text, "kubernetes_version")


@pytest.mark.parametrize("os_name", ["ubuntu-22.04", "ubuntu-24.04"])
def test_an_os_hyperpods_eks_image_is_not_built_for_is_refused_at_its_line(os_name: str) -> None:
    text = project(os=os_name)
    [problem] = problems(text)
    assert problem.check == "hyperpod-eks-os"
    assert problem.path == "os" and problem.line == line_of(text, f"os: {os_name}")
    assert "Amazon Linux 2023" in problem.message and os_name in problem.message
    assert problem.hint == "set os: al2023"


def test_the_default_os_is_refused_at_the_orchestrator_type() -> None:
    """No `os` written: the default (ubuntu-22.04) is no HyperPod EKS image's; the line to change is the type's."""
    text = project(os=None)
    [problem] = problems(text)
    assert problem.path == "orchestrator.type" and problem.line == line_of(text, "type: hyperpod-eks")
    assert "(the default os)" in problem.message and problem.hint == "set os: al2023"


def test_pods_a_type_s_unknown_addresses_cannot_count_are_a_warning() -> None:
    """tests/plan/test_hyperpod_eks_addresses.py holds the count itself to EC2's data."""
    text = project("system_group: {instance_type: ml.c5.2xlarge}")
    _, warnings = checks.validate(config.parse(text, Path("eks.yaml")))
    [warning] = [w for w in warnings if w.check == "hyperpod-eks-addresses"]
    assert warning.line == line_of(text, "ml.c5.2xlarge")
