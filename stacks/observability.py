"""``NAME-observability``: Amazon Managed Prometheus with our alert rules, SNS for alerts, Grafana.

Long-lived like the network: the metrics workspace is retained when the stack is deleted.
"""

from __future__ import annotations

from aws_cdk import (
    Acknowledgment,
    CfnOutput,
    RemovalPolicy,
    Stack,
    Validations,
)
from aws_cdk import (
    aws_aps as aps,
)
from aws_cdk import (
    aws_grafana as grafana,
)
from aws_cdk import (
    aws_iam as iam,
)
from aws_cdk import (
    aws_kms as kms,
)
from aws_cdk import (
    aws_logs as logs,
)
from aws_cdk import (
    aws_sns as sns,
)
from aws_cdk import (
    aws_sns_subscriptions as subscriptions,
)
from constructs import Construct

from fmcluster.stacks.tokens import AWS
from fmcluster.contracts import (
    GRAFANA_WORKSPACE_OUTPUT,
    PROMETHEUS_REMOTE_WRITE_OUTPUT,
    PROMETHEUS_WORKSPACE_OUTPUT,
    MetricsContract,
    export_name,
)
from fmcluster.generate import rules
from fmcluster.plan import ObservabilityPlan

# Read-only Prometheus query actions a Grafana data source needs on one workspace.
APS_QUERY_ACTIONS = ["aps:QueryMetrics", "aps:GetSeries", "aps:GetLabels", "aps:GetMetricMetadata", "aps:DescribeWorkspace"]
# CloudWatch reads (FSx metrics); CloudWatch has no resource-level permissions for these.
CLOUDWATCH_READ_ACTIONS = ["cloudwatch:GetMetricData", "cloudwatch:ListMetrics", "cloudwatch:DescribeAlarmsForMetric",
                           "cloudwatch:GetMetricStatistics"]


class ObservabilityStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, plan: ObservabilityPlan, rules_data: str,
                 **kwargs) -> None:
        super().__init__(scope, construct_id, description=f"fmcluster {plan.project}: metrics, alerts, dashboards",
                         **kwargs)
        self.project_name = plan.project
        self.spec = obs = plan.spec
        # Each attribute read (``topic_arn``, ``attr_arn``...) is a jsii round trip returning the same token: the
        # topic's ARN and the workspace's are read once (``self.topic_arn``, ``self.workspace_arn``).
        topic = self._add_topic()
        self.workspace = self._add_workspace(self.topic_arn if topic else obs.alerts.sns_topic_arn, rules_data)
        if topic is not None:
            self._allow_alerts(topic)
        self.contract = MetricsContract(
            workspace_arn=self.workspace_arn,
            workspace_id=self.workspace.attr_workspace_id,
            remote_write_url=f"{self.workspace.attr_prometheus_endpoint}api/v1/remote_write",
        )
        CfnOutput(self, PROMETHEUS_WORKSPACE_OUTPUT, value=self.contract.workspace_id,
                  export_name=export_name(self.project_name, PROMETHEUS_WORKSPACE_OUTPUT))
        CfnOutput(self, PROMETHEUS_REMOTE_WRITE_OUTPUT, value=self.contract.remote_write_url,
                  export_name=export_name(self.project_name, PROMETHEUS_REMOTE_WRITE_OUTPUT))
        if obs.grafana.enabled:
            self._add_grafana()

    def _add_topic(self) -> sns.Topic | None:
        """The encrypted alert topic and its e-mail subscriptions (None when the project brings its own topic)."""
        obs = self.spec
        if obs.alerts.sns_topic_arn:
            return None
        self.alerts_key = kms.Key(self, "AlertsKey", enable_key_rotation=True, removal_policy=RemovalPolicy.RETAIN,
                                  description=f"fmcluster {self.project_name}: encrypts the alert topic")
        topic = sns.Topic(self, "AlertsTopic", master_key=self.alerts_key, enforce_ssl=True,
                          display_name=f"fmcluster {self.project_name} alerts")
        for email in obs.alerts.emails:
            topic.add_subscription(subscriptions.EmailSubscription(email))
        self.topic_arn = topic.topic_arn
        CfnOutput(self, "AlertsTopicArn", value=self.topic_arn)
        return topic

    def _allow_alerts(self, topic: sns.Topic) -> None:
        """Only this project's Prometheus workspace may publish to the topic (confused-deputy conditions)."""
        aps_principal = iam.ServicePrincipal("aps.amazonaws.com")
        topic.add_to_resource_policy(iam.PolicyStatement(
            principals=[aps_principal], actions=["sns:Publish", "sns:GetTopicAttributes"], resources=[self.topic_arn],
            conditions={"StringEquals": {"aws:SourceAccount": AWS.ACCOUNT_ID},
                        "ArnEquals": {"aws:SourceArn": self.workspace_arn}},
        ))
        # The alert manager publishes encrypted messages, so it needs the key too. The key policy
        # cannot name the workspace (the workspace names the topic, which names the key): it names
        # this account's workspaces in this Region instead.
        self.alerts_key.add_to_resource_policy(iam.PolicyStatement(
            principals=[aps_principal], actions=["kms:GenerateDataKey*", "kms:Decrypt"], resources=["*"],
            conditions={"StringEquals": {"aws:SourceAccount": AWS.ACCOUNT_ID},
                        "ArnLike": {"aws:SourceArn": f"arn:{AWS.PARTITION}:aps:{AWS.REGION}:{AWS.ACCOUNT_ID}:workspace/*"}},
        ))

    def _add_workspace(self, topic_arn: str, rules_data: str) -> aps.CfnWorkspace:
        obs = self.spec
        log_group = logs.CfnLogGroup(self, "PrometheusLogs", retention_in_days=obs.log_retention_days)
        log_group.apply_removal_policy(RemovalPolicy.RETAIN)
        workspace = aps.CfnWorkspace(
            self, "PrometheusWorkspace", alias=self.project_name,
            alert_manager_definition=rules.alertmanager_definition(topic_arn, AWS.REGION),
            kms_key_arn=obs.kms_key_arn,
            logging_configuration=aps.CfnWorkspace.LoggingConfigurationProperty(log_group_arn=log_group.attr_arn),
        )
        workspace.apply_removal_policy(RemovalPolicy.RETAIN)
        self.workspace_arn = workspace.attr_arn
        aps.CfnRuleGroupsNamespace(self, "AlertRules", workspace=self.workspace_arn,
                                   name=f"{self.project_name}-gpu-health", data=rules_data)
        return workspace

    def _add_grafana(self) -> None:
        role = iam.Role(
            self, "GrafanaRole",
            assumed_by=iam.ServicePrincipal("grafana.amazonaws.com", conditions={
                "StringEquals": {"aws:SourceAccount": AWS.ACCOUNT_ID}}),
            description=f"fmcluster {self.project_name}: Grafana reads this project's Prometheus workspace and CloudWatch",
        )
        role.add_to_policy(iam.PolicyStatement(actions=APS_QUERY_ACTIONS, resources=[self.workspace_arn]))
        role.add_to_policy(iam.PolicyStatement(actions=["aps:ListWorkspaces", *CLOUDWATCH_READ_ACTIONS], resources=["*"]))
        Validations.of(role).acknowledge(Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            reason="aps:ListWorkspaces and the CloudWatch metric reads have no resource-level permissions; "
                   "queries themselves are limited to this project's workspace.",
        ))
        workspace = grafana.CfnWorkspace(
            self, "GrafanaWorkspace", name=self.project_name, account_access_type="CURRENT_ACCOUNT",
            authentication_providers=[self.spec.grafana.authentication],
            # Workspaces made through CloudFormation or the API manage their own role: CUSTOMER_MANAGED
            # (SERVICE_MANAGED is the console's); DataSources is for AWS's internal use (Grafana
            # CreateWorkspace reference; FACTS.md section 6).
            permission_type="CUSTOMER_MANAGED", role_arn=role.role_arn,
            description=f"fmcluster {self.project_name}: GPU health, utilisation, EFA, FSx, Slurm",
        )
        CfnOutput(self, GRAFANA_WORKSPACE_OUTPUT, value=workspace.attr_id)
        CfnOutput(self, "GrafanaUrl", value=f"https://{workspace.attr_endpoint}")
