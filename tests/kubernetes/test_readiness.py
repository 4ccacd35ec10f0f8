"""Both HyperPod EKS examples' templates, created in CloudFormation's order against the readiness model
(:mod:`support.readiness`): nothing waits for a node before the HyperPod cluster brings one, the chart installs
without waiting, the add-ons that need nodes come after the HyperPod cluster side by side (issue 41)."""

from __future__ import annotations

import copy

import pytest
from support import Synthesized
from support.readiness import (
    ADDON,
    CLUSTER,
    HELM,
    ancestors,
    create_order,
    node_addon_chains,
    replay,
)

EXAMPLES = ("p5en-hyperpod-eks", "p5-hyperpod-eks-teams")


def _template(synthesized: Synthesized, example: str) -> dict:
    return synthesized.template(f"{example}-cluster")


def _ids(template: dict, kind: str) -> list[str]:
    return [k for k, r in template["Resources"].items() if r["Type"] == kind]


def _addon(template: dict, name: str) -> str:
    [found] = [k for k in _ids(template, ADDON) if template["Resources"][k]["Properties"]["AddonName"] == name]
    return found


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_create_order_never_waits_for_a_node_that_cannot_exist(synthesized: Synthesized, example: str) -> None:
    outcome = replay(_template(synthesized, example))
    assert outcome.failures == []


@pytest.mark.parametrize("example", EXAMPLES)
def test_addons_that_need_nodes_come_after_the_hyperpod_cluster_side_by_side(synthesized: Synthesized,
                                                                           example: str) -> None:
    template = _template(synthesized, example)
    assert node_addon_chains(template) == []
    waves = create_order(template)
    [cluster] = _ids(template, CLUSTER)
    wave = {k: i for i, ids in enumerate(waves) for k in ids}
    coredns, csi = _addon(template, "coredns"), _addon(template, "aws-fsx-csi-driver")
    assert wave[coredns] == wave[csi] == wave[cluster] + 1  # started together, as soon as the nodes are there


def test_the_model_sees_a_chart_that_waits_and_an_addon_before_the_nodes(synthesized: Synthesized) -> None:
    """The replay is not vacuous: a chart that waits, CoreDNS before the nodes and a chain of add-ons are each
    reported, on a copy of the teams example's template."""
    template = copy.deepcopy(_template(synthesized, "p5-hyperpod-eks-teams"))
    resources = template["Resources"]
    [chart] = _ids(template, HELM)
    resources[chart]["Properties"]["Wait"] = True
    [failure] = replay(template).failures
    assert failure.startswith(chart) and "HyperPod cluster" in failure and "never comes" in failure

    template = copy.deepcopy(_template(synthesized, "p5-hyperpod-eks-teams"))
    [cluster] = _ids(template, CLUSTER)
    coredns = _addon(template, "coredns")
    template["Resources"][coredns]["DependsOn"] = [d for d in template["Resources"][coredns].get("DependsOn", [])
                                                   if d != cluster]
    [failure] = replay(template).failures
    assert failure.startswith(coredns) and "before any node exists" in failure

    template = copy.deepcopy(_template(synthesized, "p5-hyperpod-eks-teams"))
    csi = _addon(template, "aws-fsx-csi-driver")
    template["Resources"][csi].setdefault("DependsOn", []).append(coredns)
    assert node_addon_chains(template) == ["aws-fsx-csi-driver waits for coredns"]


def test_the_model_sees_nodes_that_tolerate_nothing_and_a_cluster_before_its_chart(synthesized: Synthesized) -> None:
    template = copy.deepcopy(_template(synthesized, "p5en-hyperpod-eks"))
    [cluster] = _ids(template, CLUSTER)
    for group in template["Resources"][cluster]["Properties"]["InstanceGroups"]:
        group["KubernetesConfig"] = {"Taints": [{"Key": "nvidia.com/gpu", "Value": "true", "Effect": "NoSchedule"}]}
    failures = replay(template).failures
    assert failures and all("taint it does not tolerate" in f for f in failures)

    template = copy.deepcopy(_template(synthesized, "p5en-hyperpod-eks"))
    [chart] = _ids(template, HELM)
    template["Resources"][cluster]["DependsOn"] = [d for d in template["Resources"][cluster]["DependsOn"]
                                                   if d != chart]
    assert chart not in ancestors(template)[cluster]
    assert any("needs the HyperPod chart" in f for f in replay(template).failures)


def test_sub_references_order_resources_too() -> None:
    template = {"Resources": {
        "A": {"Type": "AWS::S3::Bucket"},
        "B": {"Type": "AWS::SSM::Parameter", "Properties": {"Value": {"Fn::Sub": "${A.Arn}/${AWS::Region}"}}},
        "C": {"Type": "AWS::SSM::Parameter", "Properties": {"Value": {"Fn::Sub": ["${X}", {"X": {"Ref": "B"}}]}}},
        "D": {"Type": "AWS::SSM::Parameter", "Properties": {"Value": {"Fn::Sub": ["${A}", {"A": "literal"}]}}}}}
    assert create_order(template) == [["A", "D"], ["B"], ["C"]]
