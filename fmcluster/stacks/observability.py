"""``NAME-observability``: Amazon Managed Prometheus with our alert rules, SNS for alerts, Grafana.

Long-lived like the network: the metrics workspace is retained when the stack is deleted.
"""

from __future__ import annotations

from aws_cdk import (
    Acknowledgment,
    Aws,
    CfnOutput,
    RemovalPolicy,
    Stack,
    Validations,
    aws_aps as aps,
    aws_grafana as grafana,
    aws_iam as iam,
    aws_kms as kms,
    aws_logs as logs,
    aws_sns as sns,
    aws_sns_subscriptions as subscriptions,
)
from constructs import Construct

from fmcluster.config import Project
from fmcluster.contracts import MetricsContract
from fmcluster.observability import rules
from fmcluster.observability import WORKSPACE_OUTPUT

# Read-only Prometheus query actions a Grafana data source needs on one workspace.
APS_QUERY_ACTIONS = ["aps:QueryMetrics", "aps:GetSeries", "aps:GetLabels", "aps:GetMetricMetadata", "aps:DescribeWorkspace"]
# CloudWatch reads (FSx metrics); CloudWatch has no resource-level permissions for these.
CLOUDWATCH_READ_ACTIONS = ["cloudwatch:GetMetricData", "cloudwatch:ListMetrics", "cloudwatch:DescribeAlarmsForMetric",
                           "cloudwatch:GetMetricStatistics"]


class ObservabilityStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, project: Project, rules_data: str, **kwargs) -> None:
        super().__init__(scope, construct_id, description=f"fmcluster {project.name}: metrics, alerts, dashboards",
                         **kwargs)
        self.project = project
        obs = project.observability
        topic_arn = self._add_topic()
        self.workspace = self._add_workspace(topic_arn, rules_data)
        self.contract = MetricsContract(
            workspace_arn=self.workspace.attr_arn,
            workspace_id=self.workspace.attr_workspace_id,
            remote_write_url=f"{self.workspace.attr_prometheus_endpoint}api/v1/remote_write",
        )
        CfnOutput(self, "PrometheusWorkspaceId", value=self.workspace.attr_workspace_id,
                  export_name=f"{project.name}-PrometheusWorkspaceId")
        CfnOutput(self, "PrometheusRemoteWriteUrl", value=self.contract.remote_write_url,
                  export_name=f"{project.name}-PrometheusRemoteWriteUrl")
        if obs.grafana.enabled:
            self._add_grafana()

    def _add_topic(self) -> str:
        obs = self.project.observability
        if obs.alerts.sns_topic_arn:
            return obs.alerts.sns_topic_arn
        key = kms.Key(self, "AlertsKey", enable_key_rotation=True, removal_policy=RemovalPolicy.RETAIN,
                      description=f"fmcluster {self.project.name}: encrypts the alert topic")
        topic = sns.Topic(self, "AlertsTopic", master_key=key, enforce_ssl=True,
                          display_name=f"fmcluster {self.project.name} alerts")
        aps_principal = iam.ServicePrincipal("aps.amazonaws.com")
        topic.add_to_resource_policy(iam.PolicyStatement(
            principals=[aps_principal], actions=["sns:Publish", "sns:GetTopicAttributes"],
            resources=[topic.topic_arn], conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
        ))
        # Prometheus alert manager publishes encrypted messages, so it needs the key too.
        key.add_to_resource_policy(iam.PolicyStatement(
            principals=[aps_principal], actions=["kms:GenerateDataKey*", "kms:Decrypt"], resources=["*"],
            conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
        ))
        for email in obs.alerts.emails:
            topic.add_subscription(subscriptions.EmailSubscription(email))
        CfnOutput(self, "AlertsTopicArn", value=topic.topic_arn)
        return topic.topic_arn

    def _add_workspace(self, topic_arn: str, rules_data: str) -> aps.CfnWorkspace:
        obs = self.project.observability
        log_group = logs.CfnLogGroup(self, "PrometheusLogs", retention_in_days=obs.log_retention_days)
        log_group.apply_removal_policy(RemovalPolicy.RETAIN)
        workspace = aps.CfnWorkspace(
            self, "PrometheusWorkspace", alias=self.project.name,
            alert_manager_definition=rules.alertmanager_definition(topic_arn, Aws.REGION),
            kms_key_arn=obs.kms_key_arn,
            logging_configuration=aps.CfnWorkspace.LoggingConfigurationProperty(log_group_arn=log_group.attr_arn),
        )
        workspace.apply_removal_policy(RemovalPolicy.RETAIN)
        aps.CfnRuleGroupsNamespace(self, "AlertRules", workspace=workspace.attr_arn,
                                   name=f"{self.project.name}-gpu-health", data=rules_data)
        return workspace

    def _add_grafana(self) -> None:
        role = iam.Role(
            self, "GrafanaRole",
            assumed_by=iam.ServicePrincipal("grafana.amazonaws.com", conditions={
                "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}),
            description=f"fmcluster {self.project.name}: Grafana reads this project's Prometheus workspace and CloudWatch",
        )
        role.add_to_policy(iam.PolicyStatement(actions=APS_QUERY_ACTIONS, resources=[self.workspace.attr_arn]))
        role.add_to_policy(iam.PolicyStatement(actions=["aps:ListWorkspaces", *CLOUDWATCH_READ_ACTIONS], resources=["*"]))
        Validations.of(role).acknowledge(Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            reason="aps:ListWorkspaces and the CloudWatch metric reads have no resource-level permissions; "
                   "queries themselves are limited to this project's workspace.",
        ))
        workspace = grafana.CfnWorkspace(
            self, "GrafanaWorkspace", name=self.project.name, account_access_type="CURRENT_ACCOUNT",
            authentication_providers=[self.project.observability.grafana.authentication],
            permission_type="SERVICE_MANAGED", role_arn=role.role_arn, data_sources=["PROMETHEUS", "CLOUDWATCH"],
            description=f"fmcluster {self.project.name}: GPU health, utilisation, EFA, FSx, Slurm",
        )
        CfnOutput(self, WORKSPACE_OUTPUT, value=workspace.attr_id)
        CfnOutput(self, "GrafanaUrl", value=f"https://{workspace.attr_endpoint}")
