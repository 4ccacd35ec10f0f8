"""HyperPod's accounting properties: the external database with continuous provisioning, or the controller's own;
checked against cfn-lint's AWS::SageMaker::Cluster schema."""

from __future__ import annotations

import json

import pytest
from cfnlint.api import ManualArgs, lint
from support import load

from fmcluster.generate import hyperpod, placeholders
from fmcluster.plan import make_plan


def _cluster(accounting: dict):
    return make_plan(load({"name": "hp", "availability_zone_id": "use1-az6",
                           "compute_groups": [{"name": "train", "instance_type": "p5.48xlarge", "count": 2}],
                           "orchestrator": {"type": "hyperpod", "accounting": accounting}}).project).cluster


def _lint(properties: dict) -> list[str]:
    """cfn-lint over a minimal cluster carrying ``properties``."""
    resource = {"Type": "AWS::SageMaker::Cluster", "Properties": {
        "InstanceGroups": [{"InstanceGroupName": "controller", "InstanceType": "ml.m5.xlarge", "InstanceCount": 1,
                            "ExecutionRole": "arn:aws:iam::000000000000:role/hp",
                            "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-hp/lifecycle/",
                                                "OnCreate": "on_create.sh"},
                            "SlurmConfig": {"NodeType": "Controller"}}],
        "VpcConfig": {"SecurityGroupIds": ["sg-00000000000000001"], "Subnets": ["subnet-00000000000000000"]},
        **properties}}
    template = {"AWSTemplateFormatVersion": "2010-09-09", "Resources": {"Cluster": resource}}
    matches = lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"]))
    return [f"{m.rule.id} {m.message[:160]}" for m in matches]


def test_database_accounting_sets_the_database_and_continuous_provisioning():
    contract = placeholders.accounting("hp")
    props = hyperpod.cluster_accounting(_cluster({"enabled": True}), contract)
    assert props["NodeProvisioningMode"] == "Continuous"
    assert props["Orchestrator"]["Slurm"]["AccountingDatabase"] == {
        "Endpoint": contract.endpoint, "Port": 3306, "SecretArn": contract.secret_arn}
    assert _lint(props) == []
    # the schema does judge these properties: a port out of range is refused
    bad = json.loads(json.dumps(props))
    bad["Orchestrator"]["Slurm"]["AccountingDatabase"]["Port"] = 70000
    assert _lint(bad)


@pytest.mark.parametrize("accounting", [{"enabled": True, "store": "controller"}, {}])
def test_controller_accounting_or_none_leaves_provisioning_alone(accounting: dict):
    props = hyperpod.cluster_accounting(_cluster(accounting), None)
    assert props == {"Orchestrator": {"Slurm": {"SlurmConfigStrategy": "Managed"}}}
    assert _lint(props) == []


def test_database_accounting_without_the_database_is_a_programming_error():
    with pytest.raises(ValueError, match="contract"):
        hyperpod.cluster_accounting(_cluster({"enabled": True}), None)
