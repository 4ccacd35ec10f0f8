"""GB200 training plans keep spare instances per UltraServer (CreateTrainingPlan's SpareInstanceCountPerUltraServer,
1 by default): a group is whole UltraServers of the *usable* instances, checked once, and the GB200 example fits."""

from __future__ import annotations

import re

import pytest
from support import BASE, ROOT

from fmcluster import checks, config
from fmcluster.generate import hyperpod
from fmcluster.plan import make_plan

EXAMPLE = ROOT / "examples" / "p6e-gb200-hyperpod-training-plan.yaml"
ARN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/gb200"


def project(count: int, spares: int | None = None, ultraserver: str | None = None) -> str:
    spare = "" if spares is None else f", spare_instances_per_ultraserver: {spares}"
    text = (BASE.replace("p5.48xlarge", "p6e-gb200.36xlarge").replace("count: 2", f"count: {count}")
            + f"    capacity: {{type: training-plan, arn: {ARN}{spare}}}\n" + "orchestrator:\n  type: hyperpod\n")
    if ultraserver:
        text += f"  hyperpod:\n    groups:\n      train: {{ultraserver: {ultraserver}}}\n"
    return text


def findings(text: str) -> list:
    loaded = config.parse(text)
    return [p for p in checks.run_checks(loaded, make_plan(loaded.project)) if "ultraserver" in p.check]


def test_a_default_x72_plan_gives_17_usable_instances() -> None:
    assert findings(project(17)) == []
    assert findings(project(34)) == []


def test_18_on_a_default_plan_is_refused_once_in_usable_instances() -> None:
    [problem] = findings(project(18))  # one message: hyperpod-ultraserver, not also ultraserver-multiple
    assert problem.check == "hyperpod-ultraserver" and problem.level == "error"
    assert "not whole UltraServers of usable instances" in problem.message
    assert "keeps 1 spare instance per UltraServer" in problem.message
    assert "use a multiple of 8 or 17" in problem.hint  # x36 less 1 = 8, x72 less 1 = 17


def test_a_plan_without_spares_takes_whole_ultraservers() -> None:
    assert findings(project(18, spares=0)) == []
    [problem] = findings(project(17, spares=0))
    assert "spare" not in problem.message and "use a multiple of 9 or 18" in problem.hint


def test_the_nvlink_domains_follow_the_usable_instances() -> None:
    plan = make_plan(config.parse(project(34, ultraserver="u-p6e-gb200x72")).project)
    membership = hyperpod.ultraserver(plan.cluster, plan.group("train"))
    assert (membership.type, membership.instances_per_server, membership.servers) == ("u-p6e-gb200x72", 17, 2)


@pytest.mark.parametrize("spares", [-1, 18])
def test_spares_out_of_range_are_refused_with_the_field(spares: int) -> None:
    from fmcluster.errors import ConfigError

    with pytest.raises(ConfigError) as exc:
        config.parse(project(17, spares=spares))
    assert "spare_instances_per_ultraserver" in exc.value.report()


def test_the_gb200_example_fits_its_plan_and_its_comment_says_how_it_was_bought() -> None:
    loaded = config.load(EXAMPLE)
    [group] = loaded.project.compute_groups
    plan = make_plan(loaded.project)
    assert findings(EXAMPLE.read_text()) == []
    spares = group.capacity.spare_instances_per_ultraserver
    membership = hyperpod.ultraserver(plan.cluster, plan.group(group.name))
    assert group.count == membership.servers * (18 - spares)
    comment = "\n".join(line for line in EXAMPLE.read_text().splitlines() if line.startswith("#"))
    flags = re.findall(r"--[a-z-]+", comment)
    # every flag the comment uses is one the AWS CLI takes (botocore's parameter names, as the CLI spells them)
    import botocore.session
    from botocore import xform_name

    model = botocore.session.get_session().get_service_model("sagemaker")
    known = {f"--{xform_name(m, '-')}" for op in ("SearchTrainingPlanOfferings", "CreateTrainingPlan")
             for m in model.operation_model(op).input_shape.members}
    assert set(flags) <= known, set(flags) - known
    assert f"--spare-instance-count-per-ultra-server {spares}" in comment
