"""NAME-observability: the Prometheus workspace (retained), our rules, encrypted alerts, Grafana."""

from __future__ import annotations

import yaml
from aws_cdk.assertions import Match, Template
from fmcluster.stacks.app import synthesize
from support import Synthesized

from fmcluster.generate import rules


def _t(synthesized: Synthesized, project: str) -> Template:
    return Template.from_json(synthesized.template(f"{project}-observability"))


def test_workspace_is_retained_and_logs(synthesized: Synthesized) -> None:
    t = _t(synthesized, "default")
    t.has_resource("AWS::APS::Workspace", {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
                                           "Properties": Match.object_like({"Alias": "default",
                                                                            "LoggingConfiguration": Match.any_value()})})
    t.has_resource("AWS::Logs::LogGroup", {"DeletionPolicy": "Retain", "Properties": {"RetentionInDays": 90}})


def test_rule_namespace_carries_every_alert(synthesized: Synthesized) -> None:
    def shipped(project: str) -> set[str]:
        namespaces = _t(synthesized, project).find_resources("AWS::APS::RuleGroupsNamespace")
        data = yaml.safe_load(next(iter(namespaces.values()))["Properties"]["Data"])
        return {r["alert"] for g in data["groups"] for r in g["rules"] if "alert" in r}

    fsx = {r["alert"] for g in rules.rule_groups() if g["name"] == rules.FSX_GROUP for r in g["rules"] if "alert" in r}
    assert fsx
    slurm = {r["alert"] for g in rules.rule_groups() if g["name"] == rules.SLURM_GROUP for r in g["rules"]
             if "alert" in r}
    assert slurm
    # a project with FSx whose head node runs slurmctld (ParallelCluster) ships every alert; one without a scheduler
    # every alert but Slurm's (no node exports Slurm metrics)
    assert shipped("default") == set(rules.alert_names())
    assert shipped("p5-odcr") == set(rules.alert_names()) - slurm


def test_alerts_go_to_an_encrypted_tls_only_topic(synthesized: Synthesized) -> None:
    t = _t(synthesized, "p5-odcr")
    t.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})
    t.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})
    t.has_resource_properties("AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "gpu-oncall@example.com"})
    policy = next(iter(t.find_resources("AWS::SNS::TopicPolicy").values()))["Properties"]["PolicyDocument"]
    effects = {(s["Effect"], str(s.get("Condition", {}).get("Bool", {}))) for s in policy["Statement"]}
    assert ("Deny", "{'aws:SecureTransport': 'false'}") in effects
    workspace = next(iter(t.find_resources("AWS::APS::Workspace").values()))["Properties"]
    assert "sns" in str(workspace["AlertManagerDefinition"])


def test_grafana_reads_only_this_workspace(synthesized: Synthesized) -> None:
    t = _t(synthesized, "p5-odcr")
    t.has_resource_properties("AWS::Grafana::Workspace", {
        "AuthenticationProviders": ["SAML"], "PermissionType": "CUSTOMER_MANAGED",
        "DataSources": Match.absent(), "AccountAccessType": "CURRENT_ACCOUNT"})
    policy = next(iter(t.find_resources("AWS::IAM::Policy").values()))["Properties"]["PolicyDocument"]
    query = next(s for s in policy["Statement"] if "aps:QueryMetrics" in s["Action"])
    assert query["Resource"] == {"Fn::GetAtt": ["PrometheusWorkspace", "Arn"]}
    # what the Prometheus data source `dashboards push` creates queries with (SigV4, the workspace's role): the
    # AMP user guide's "aps:QueryMetrics, aps:GetMetricMetadata, aps:GetSeries, and aps:GetLabels"
    assert {"aps:QueryMetrics", "aps:GetMetricMetadata", "aps:GetSeries", "aps:GetLabels"} <= set(query["Action"])
    t.has_output("GrafanaWorkspaceId", {})
    t.has_output("PrometheusWorkspaceId", {})


def test_grafana_can_be_left_out(synthesized: Synthesized) -> None:
    t = _t(synthesized, "p4d-on-demand")
    t.resource_count_is("AWS::Grafana::Workspace", 0)
    t.resource_count_is("AWS::APS::Workspace", 1)


def test_no_stack_when_prometheus_is_off(tmp_path) -> None:
    from support import BASE

    (tmp_path / "demo.yaml").write_text(BASE + "observability:\n  prometheus: false\n  grafana: {enabled: false}\n")
    stacks = synthesize(tmp_path / "demo.yaml", tmp_path / "out")
    assert sorted(stacks) == ["demo-cluster", "demo-network", "demo-storage"]


def test_only_this_projects_workspace_may_publish_alerts(synthesized: Synthesized) -> None:
    t = _t(synthesized, "p5-odcr")
    policy = next(iter(t.find_resources("AWS::SNS::TopicPolicy").values()))["Properties"]["PolicyDocument"]
    [statement] = [s for s in policy["Statement"] if s.get("Principal") == {"Service": "aps.amazonaws.com"}]
    workspace = next(iter(t.find_resources("AWS::APS::Workspace")))
    assert statement["Condition"]["ArnEquals"]["aws:SourceArn"] == {"Fn::GetAtt": [workspace, "Arn"]}
