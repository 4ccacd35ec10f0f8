"""AWS PCS projects: its quotas, sizes, Slurm versions, names and images are refused before synthesis, each with
the file and line of the field to change; the two PCS examples pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import ROOT

from fmcluster import checks, config
from fmcluster.config.pcs import SLURM_VERSIONS
from fmcluster.errors import ConfigError
from fmcluster.plan import make_plan

EXAMPLES = [ROOT / "examples" / "p5-pcs.yaml", ROOT / "examples" / "p5en-pcs-capacity-block.yaml"]


def project(groups: int = 1, *, pcs: str = "    ami_id: ami-0123456789abcdef0\n", count: int = 2,
            instance_type: str = "p5.48xlarge", capacity: str = "") -> str:
    lines = ["name: pcsdemo", "availability_zone_id: use1-az6", "os: ubuntu-24.04", "compute_groups:"]
    for i in range(groups):
        lines += [f"  - name: gpu{i:02d}", f"    instance_type: {instance_type}", f"    count: {count}"]
        if capacity:
            lines.append(f"    capacity: {capacity}")
    lines += ["orchestrator:", "  type: pcs", "  pcs:"]
    return "\n".join(lines) + "\n" + pcs


def problems(text: str, name: str = "pcs.yaml") -> list:
    loaded = config.parse(text, Path(name))
    with pytest.raises(ConfigError) as raised:
        checks.validate(loaded)
    return raised.value.problems


def only(found: list, check: str):
    [problem] = [p for p in found if p.check == check]
    return problem


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_examples_pass(example: Path) -> None:
    plan, warnings = checks.validate(config.load(example))
    assert plan.cluster.orchestrator == "pcs" and not [w for w in warnings if w.check and w.check.startswith("pcs")]


def test_eleven_compute_groups_are_refused_naming_the_limit() -> None:
    text = project(11, pcs="    ami_id: ami-0123456789abcdef0\n    login: null\n")
    problem = only(problems(text), "pcs-node-groups")
    assert "11 compute groups make 11 PCS compute node groups and 11 queues" in problem.message
    assert "AWS PCS allows 10 node groups and 10 queues per cluster" in problem.message
    assert problem.file == Path("pcs.yaml") and problem.line == line_of(text, "compute_groups:")
    assert [p.check for p in problems(text) if p.level == "error"] == ["pcs-node-groups"]  # one cause, one message


def test_ten_compute_groups_and_the_login_group_are_refused() -> None:
    text = project(10)
    problem = only(problems(text), "pcs-node-groups")
    assert "10 compute groups and the login group make 11" in problem.message
    assert "orchestrator.pcs.login: null" in problem.hint
    # the same ten without a login group fit
    loaded = config.parse(project(10, pcs="    ami_id: ami-0123456789abcdef0\n    login: null\n"))
    plan, _ = checks.validate(loaded)
    assert len(plan.cluster.groups) == 10


def test_a_size_smaller_than_the_nodes_is_refused() -> None:
    text = project(1, count=32, pcs="    ami_id: ami-0123456789abcdef0\n    size: SMALL\n")
    problem = only(problems(text), "pcs-size")
    assert "size SMALL manages up to 32 nodes; the project has 33" in problem.message
    assert "use size MEDIUM" in problem.hint
    assert problem.path == "orchestrator.pcs.size" and problem.line == line_of(text, "size: SMALL")


def test_without_size_the_smallest_that_holds_every_node_is_chosen() -> None:
    from fmcluster.generate import pcs

    for count, size in ((31, "SMALL"), (32, "MEDIUM"), (511, "MEDIUM"), (512, "LARGE")):  # + 1 login node
        plan, _ = checks.validate(config.parse(project(1, count=count)))
        assert pcs.size(plan.cluster) == size, count


def test_an_unknown_slurm_version_is_refused_with_the_supported_list() -> None:
    text = project(pcs='    ami_id: ami-0123456789abcdef0\n    slurm_version: "24.02"\n')
    problem = only(problems(text), "pcs-slurm-version")
    assert "'24.02'" in problem.message and ", ".join(SLURM_VERSIONS) in problem.hint
    assert problem.line == line_of(text, "slurm_version")


def test_no_image_is_refused_with_how_to_build_one() -> None:
    text = project(pcs="    scaledown_idle_seconds: 600\n")
    found = [p for p in problems(text) if p.check == "pcs-ami"]
    assert {p.path for p in found} == {"compute_groups[0].instance_type", "orchestrator.pcs.login"}
    assert all("dlami_for_pcs_imagebuilder" in p.hint for p in found)


def test_names_pcs_cannot_take_are_refused() -> None:
    text = project().replace("name: gpu00", "name: login")
    problem = only(problems(text), "pcs-names")
    assert "login node group" in problem.message and problem.line == line_of(text, "name: login")
    text = project().replace("name: gpu00", "name: ab")  # PCS names take 3 to 25 characters
    assert "3 to 25" in only(problems(text), "pcs-names").message


def test_gb200_needs_a_capacity_block_and_slurm_25_05() -> None:
    text = project(1, count=18, instance_type="p6e-gb200.36xlarge",
                   pcs='    ami_id: ami-0123456789abcdef0\n    slurm_version: "24.11"\n')
    found = {p.path: p for p in problems(text) if p.check == "pcs-capacity"}
    assert "from a capacity block only" in found["compute_groups[0].capacity"].message
    assert "Slurm 25.05 or later" in found["orchestrator.pcs.slurm_version"].message
    # on a capacity block with 25.05, PCS runs them (PCS user guide "Configure UltraServer instances")
    ok = project(1, count=18, instance_type="p6e-gb200.36xlarge",
                 capacity="{type: capacity-block, reservation_id: cr-0fedcba9876543210}")
    loaded = config.parse(ok)
    assert not [p for p in checks.run_checks(loaded, make_plan(loaded.project)) if p.check == "pcs-capacity"]


def test_pcs_settings_under_another_orchestrator_are_flagged() -> None:
    text = project().replace("  type: pcs\n", "  type: none\n")
    loaded = config.parse(text, Path("pcs.yaml"))
    [warning] = [p for p in checks.run_checks(loaded, make_plan(loaded.project)) if p.check == "pcs-settings-unused"]
    assert warning.level == "warning" and warning.line == line_of(text, "  pcs:")
    assert not [p for p in checks.run_checks(loaded, make_plan(loaded.project))
                if p.check and p.check.startswith("pcs-") and p.check != "pcs-settings-unused"]


def test_the_slurm_versions_are_the_ones_pcs_takes() -> None:
    """The versions the settings accept are exactly the valid values of botocore's pcs model."""
    from support.api_documented import pcs_slurm_versions

    assert list(SLURM_VERSIONS) == pcs_slurm_versions()


def test_the_systems_pcs_os_allows_are_those_pcs_images_are_profiled_on() -> None:
    """checks may not import bootstrap (stages point down): the check's list and the image profiles are held
    together here instead, so a profile added for another system shows at once."""
    from fmcluster.bootstrap import profiles
    from fmcluster.checks.pcs import PCS_OPERATING_SYSTEMS

    assert set(PCS_OPERATING_SYSTEMS) == {p.os for p in profiles.load_profiles() if p.flavour == "pcs"}
