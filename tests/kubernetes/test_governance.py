"""Task governance's CloudFormation properties, built from the project's teams and checked the way the other
orchestrators' resources are: cfn-lint's resource schemas for the two types, botocore's sagemaker
CreateClusterSchedulerConfig/CreateComputeQuota (patterns, enums and ranges per literal; ParamValidator on the whole
request). A wrong field fails each."""

from __future__ import annotations

import copy
import json

import pytest
from cfnlint.api import ManualArgs, lint
from support import api_rules

from fmcluster.config.teams import GroupShare, Team
from fmcluster.kubernetes import governance as gov

ARN = {"Fn::GetAtt": ["HyperPodCluster", "ClusterArn"]}
LITERAL_ARN = "arn:aws:sagemaker:us-east-1:000000000000:cluster/abcdef012345"
TYPES = {"train": "p5.48xlarge", "infer": "p5en.48xlarge"}


def _team(**kw) -> Team:
    base = {"name": "research", "fair_share": 30,
            "instances": {"train": GroupShare(guaranteed=8, borrow=4), "infer": GroupShare(guaranteed=2)}}
    return Team(**(base | kw))


def _lint_many(resources: dict[str, tuple[str, dict]]) -> dict[str, list[str]]:
    """cfn-lint once over a template with every resource (logical ID -> (type, properties)); its messages by ID."""
    template = {"AWSTemplateFormatVersion": "2010-09-09", "Resources": {
        "HyperPodCluster": {"Type": "AWS::SageMaker::Cluster", "Properties": {
            "InstanceGroups": [{"InstanceGroupName": "system", "InstanceType": "ml.m5.xlarge", "InstanceCount": 1,
                                "ExecutionRole": "arn:aws:iam::000000000000:role/hp",
                                "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-hp/lc/",
                                                    "OnCreate": "on_create.sh"}}],
            "Orchestrator": {"Eks": {"ClusterArn": "arn:aws:eks:us-east-1:000000000000:cluster/hp"}}}},
        **{key: {"Type": kind, "Properties": props} for key, (kind, props) in resources.items()}}}
    out: dict[str, list[str]] = {key: [] for key in ["HyperPodCluster", *resources]}
    for m in lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"])):
        where = m.path[1] if len(m.path) > 1 and m.path[0] == "Resources" else "HyperPodCluster"
        out.setdefault(where, []).append(f"{m.rule.id} {m.message[:200]}")
    return out


def _api(resource_type: str, props: dict) -> list[str]:
    report = api_rules.check_resource("stack", "Governed", {"Type": resource_type, "Properties": props})
    return [f"{f.prop} {f.message}" for f in report.findings + report.unmapped]


def test_a_team_becomes_its_quota():
    props = gov.compute_quota_properties(_team(), TYPES, "proj-research", ARN)
    config = props["ComputeQuotaConfig"]
    assert config["ComputeQuotaResources"] == [{"InstanceType": "ml.p5en.48xlarge", "Count": 2},
                                               {"InstanceType": "ml.p5.48xlarge", "Count": 8}]
    assert config["ResourceSharingConfig"] == {
        "Strategy": "LendAndBorrow", "AbsoluteBorrowLimits": [{"InstanceType": "ml.p5.48xlarge", "Count": 4}]}
    assert config["PreemptTeamTasks"] == "Never"
    assert props["ComputeQuotaTarget"] == {"TeamName": "research", "FairShareWeight": 30}
    assert gov.team_namespace("research") == "hyperpod-ns-research"


@pytest.mark.parametrize("lend, borrow, preempt, strategy, preempts", [
    (True, 0, "never", "Lend", "Never"),
    (True, 2, "lower-priority", "LendAndBorrow", "LowerPriority"),
    (False, 0, "lower-priority", "DontLend", "LowerPriority"),
])
def test_lend_borrow_and_preempt_map_to_the_api(lend, borrow, preempt, strategy, preempts):
    team = _team(lend=lend, preempt=preempt, instances={"train": GroupShare(guaranteed=4, borrow=borrow)})
    props = gov.compute_quota_properties(team, TYPES, "proj-research", ARN)
    assert props["ComputeQuotaConfig"]["ResourceSharingConfig"]["Strategy"] == strategy
    assert ("AbsoluteBorrowLimits" in props["ComputeQuotaConfig"]["ResourceSharingConfig"]) == bool(borrow)
    assert props["ComputeQuotaConfig"]["PreemptTeamTasks"] == preempts
    assert _api("AWS::SageMaker::ComputeQuota", props | {"ClusterArn": LITERAL_ARN}) == []


def test_borrowing_without_lending_is_refused_with_what_to_change():
    team = _team(lend=False)
    with pytest.raises(gov.GovernanceError, match="research: borrow without lend.*lend: true or borrow: 0"):
        gov.compute_quota_properties(team, TYPES, "proj-research", ARN)


def test_an_unknown_group_is_refused():
    with pytest.raises(gov.GovernanceError, match="no compute group 'train'"):
        gov.compute_quota_properties(_team(), {"infer": "p5en.48xlarge"}, "q", ARN)


def test_the_scheduler_config_passes_both_schemas():
    props = gov.scheduler_config_properties("proj-scheduler", ARN, tags={"fmcluster:project": "proj"})
    assert props["SchedulerConfig"]["FairShare"] == "Enabled"
    assert [c["Name"] for c in props["SchedulerConfig"]["PriorityClasses"]] == ["inference", "training",
                                                                               "experimentation"]
    assert _api("AWS::SageMaker::ClusterSchedulerConfig", props | {"ClusterArn": LITERAL_ARN}) == []


def _quota() -> dict:
    return gov.compute_quota_properties(_team(), TYPES, "proj-research", LITERAL_ARN, tags={"a": "b"})


def _scheduler() -> dict:
    return gov.scheduler_config_properties("proj-scheduler", LITERAL_ARN)


def _set(props: dict, path: str, value) -> dict:
    bad = copy.deepcopy(props)
    *parents, last = path.split(".")
    node = bad
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    node[last] = value
    return bad


def test_everything_built_passes_cfn_lint():
    """Every kind of quota (each strategy and preemption), the scheduler config, with a token ARN: one lint."""
    resources = {"Scheduler": ("AWS::SageMaker::ClusterSchedulerConfig", gov.scheduler_config_properties("s", ARN))}
    for i, (lend, borrow, preempt) in enumerate([(True, 0, "never"), (True, 2, "lower-priority"),
                                                 (False, 0, "lower-priority")]):
        team = _team(lend=lend, preempt=preempt, instances={"train": GroupShare(guaranteed=4, borrow=borrow)})
        resources[f"Quota{i}"] = ("AWS::SageMaker::ComputeQuota",
                                  gov.compute_quota_properties(team, TYPES, f"q{i}", ARN))
    resources["QuotaTagged"] = ("AWS::SageMaker::ComputeQuota", _quota())
    resources["SchedulerLiteral"] = ("AWS::SageMaker::ClusterSchedulerConfig", _scheduler())
    assert {k: v for k, v in _lint_many(resources).items() if v} == {}


@pytest.mark.parametrize("make, resource_type", [(_quota, "AWS::SageMaker::ComputeQuota"),
                                                 (_scheduler, "AWS::SageMaker::ClusterSchedulerConfig")])
def test_the_built_properties_pass_botocore(make, resource_type):
    assert _api(resource_type, make()) == []


WRONG = [
    (_quota, "AWS::SageMaker::ComputeQuota", "ComputeQuotaConfig.ResourceSharingConfig.Strategy", "Borrow"),
    (_quota, "AWS::SageMaker::ComputeQuota", "ComputeQuotaConfig.ComputeQuotaResources.0.InstanceType",
     "p5.48xlarge"),
    (_quota, "AWS::SageMaker::ComputeQuota", "ComputeQuotaTarget.FairShareWeight", 101),
    (_quota, "AWS::SageMaker::ComputeQuota", "ComputeQuotaConfig.Preempt", "Never"),
    (_quota, "AWS::SageMaker::ComputeQuota", "ComputeQuotaTarget.TeamName", "Research_Team"),
    (_scheduler, "AWS::SageMaker::ClusterSchedulerConfig", "SchedulerConfig.FairShare", "On"),
    (_scheduler, "AWS::SageMaker::ClusterSchedulerConfig", "SchedulerConfig.PriorityClasses.0.Weight", 1000),
    (_scheduler, "AWS::SageMaker::ClusterSchedulerConfig", "SchedulerConfig.Priorities", []),
]


@pytest.mark.parametrize("make, resource_type, path, value", WRONG)
def test_a_wrong_field_fails_botocore(make, resource_type, path, value):
    bad = _set(make(), path, value)
    assert _api(resource_type, bad), f"botocore took {path}={value!r}"


def test_a_wrong_field_fails_cfn_lint():
    """The same wrong fields, each in its own resource of one template: cfn-lint flags every one."""
    resources = {f"Bad{i}": (kind, _set(make(), path, value)) for i, (make, kind, path, value) in enumerate(WRONG)}
    found = _lint_many(resources)
    assert [key for key in resources if not found[key]] == []
    assert found["HyperPodCluster"] == []


def test_quota_names_are_bounded():
    assert gov.quota_name("proj", "research") == "proj-research"
    with pytest.raises(gov.GovernanceError, match="63"):
        gov.quota_name("p" * 40, "t" * 30)


def test_the_jobs_priority_class_is_one_the_scheduler_config_defines():
    assert gov.JOB_PRIORITY in {c.name for c in gov.DEFAULT_PRIORITY_CLASSES}
