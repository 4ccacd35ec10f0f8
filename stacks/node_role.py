"""The GPU nodes' IAM role, as every orchestrator whose nodes launch from our own templates gives it: Session
Manager instead of SSH keys, what the bootstrap's health check and IMEX unit call, and remote-write to the
project's metrics workspace."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from aws_cdk import aws_iam as iam
from constructs import Construct

from fmcluster.stacks.tokens import AWS
from fmcluster.contracts import MetricsContract
from fmcluster.facts import PROJECT_TAG
from fmcluster.plan import ClusterPlan


def add_node_role(scope: Construct, plan: ClusterPlan, metrics: MetricsContract | None = None, *,
                  path: str | None = None) -> tuple[iam.Role, iam.CfnInstanceProfile]:
    """The GPU nodes' role and instance profile (``NodeRole``, ``NodeInstanceProfile`` in ``scope``); with
    ``metrics``, each node's Prometheus agent may remote-write to the project's workspace (that workspace only,
    nothing else of Amazon Managed Prometheus). ``path``: the IAM path of the role and its instance profile (AWS PCS
    takes a profile whose ARN holds ``/aws-pcs/``)."""
    role = iam.Role(
        scope, "NodeRole", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"), path=path,
        description=f"fmcluster {plan.project}: GPU nodes (SSM Session Manager, no SSH keys)",
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSSMManagedInstanceCore")],
    )
    Validations.of(role).acknowledge(Acknowledgment(
        id="AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]",
        reason="AmazonSSMManagedInstanceCore is AWS's maintained minimum for Session Manager, which replaces SSH "
               "keys; a copy would drift from it.",
    ))
    profile = iam.CfnInstanceProfile(scope, "NodeInstanceProfile", roles=[role.role_name], path=path)
    _add_node_health_policy(scope, plan, role)
    if metrics is not None:
        iam.Policy(scope, "NodeMetricsPolicy", roles=[role], statements=[
            iam.PolicyStatement(sid="RemoteWriteOwnMetrics", actions=["aps:RemoteWrite"],
                                resources=[metrics.workspace_arn]),
        ])
    return role, profile


def _add_node_health_policy(scope: Construct, plan: ClusterPlan, role: iam.Role) -> None:
    """What the bootstrap's health check and IMEX unit call: tag a failed node `fmcluster:health` and, in an
    Auto Scaling group, mark it unhealthy; where a group needs IMEX, find the members of the node's UltraServer
    (``ec2:DescribeInstanceTopology``: its CapacityBlockId names the UltraServer) and their addresses
    (``ec2:DescribeInstances`` on those instance IDs). Tags and health changes are limited to this project's
    instances and groups."""
    project_tag = {f"aws:ResourceTag/{PROJECT_TAG}": plan.project}

    def arn(service: str, resource: str) -> str:
        return f"arn:{AWS.PARTITION}:{service}:{AWS.REGION}:{AWS.ACCOUNT_ID}:{resource}"

    reads = ["autoscaling:DescribeAutoScalingInstances"]
    if plan.needs_imex:
        reads = ["ec2:DescribeInstanceTopology", "ec2:DescribeInstances", *reads]
    policy = iam.Policy(scope, "NodeHealthPolicy", roles=[role], statements=[
        iam.PolicyStatement(sid="DescribeNodes",  # no resource-level permissions for these reads
                            actions=reads, resources=["*"]),
        iam.PolicyStatement(sid="TagUnhealthyNode", actions=["ec2:CreateTags"],
                            resources=[arn("ec2", "instance/*")],
                            conditions={"StringEquals": project_tag,
                                        "ForAllValues:StringEquals": {"aws:TagKeys": ["fmcluster:health"]}}),
        iam.PolicyStatement(sid="MarkUnhealthyNode", actions=["autoscaling:SetInstanceHealth"],
                            resources=[arn("autoscaling", "autoScalingGroup:*")],
                            conditions={"StringEquals": project_tag}),
    ])
    for resource in ("*", "arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:instance/*",
                     "arn:<AWS::Partition>:autoscaling:<AWS::Region>:<AWS::AccountId>:autoScalingGroup:*"):
        Validations.of(policy).acknowledge(Acknowledgment(
            id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{resource}]",
            reason="DescribeInstanceTopology, DescribeInstances and DescribeAutoScalingInstances have no "
                   "resource-level permissions; "
                   "tagging and health changes are limited by condition to this project's resources.",
        ))
