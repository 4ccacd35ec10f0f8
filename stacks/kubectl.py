"""CDK's kubectl provider (``aws_eks_v2.KubectlProvider``) as fmcluster uses it on an L1 EKS cluster: its cdk-nag
findings acknowledged with reasons, and its functions' DependsOn without the roles their GetAtt already orders."""

from __future__ import annotations

from aws_cdk import Acknowledgment, CfnResource, DefaultStackSynthesizer, Stack, Validations
from aws_cdk import aws_iam as iam
from constructs import Construct

from fmcluster.stacks.tokens import is_unresolved


def acknowledge_kubectl(scope: Construct, handler_role: iam.Role, provider: Construct) -> None:
    """cdk-nag on CDK's kubectl provider (its handler runs as ``handler_role``, its framework function beside)."""
    stack = Stack.of(scope)
    qualifier = stack.node.try_get_context("@aws-cdk/core:bootstrapQualifier") or \
        DefaultStackSynthesizer.DEFAULT_QUALIFIER
    region = "<AWS::Region>" if is_unresolved(stack.region) else stack.region
    partition = "<AWS::Partition>" if is_unresolved(stack.region) else stack.partition
    assets = f"arn:{partition}:s3:::cdk-{qualifier}-assets-<AWS::AccountId>-{region}/*"
    handler = stack.get_logical_id(provider.node.find_child("Handler").node.default_child)  # type: ignore[arg-type]
    managed = "arn:<AWS::Partition>:iam::aws:policy/"
    reasons = {
        f"AwsSolutions::AwsSolutions-IAM4[Policy::{managed}service-role/AWSLambdaBasicExecutionRole]":
            "CDK's kubectl provider functions write only their own logs; AWS's basic execution policy is that.",
        f"AwsSolutions::AwsSolutions-IAM4[Policy::{managed}service-role/AWSLambdaVPCAccessExecutionRole]":
            "The kubectl handler runs in the VPC (the Kubernetes API endpoint is private): AWS's policy for a "
            "function's network interfaces.",
        f"AwsSolutions::AwsSolutions-IAM4[Policy::{managed}AmazonEC2ContainerRegistryReadOnly]":
            "CDK's kubectl handler may pull OCI charts from ECR (CDK's own grant); read-only.",
        "AwsSolutions::AwsSolutions-IAM4[Policy::{\"Fn::If\":[\"" + stack.get_logical_id(
            handler_role.node.scope.node.find_child("HasEcrPublic")) + "\",{\"Fn::Join\":[\"\",[\"arn:\","
        "{\"Ref\":\"AWS::Partition\"},\":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly\"]]},"
        "{\"Ref\":\"AWS::NoValue\"}]}]":
            "CDK's kubectl handler may pull public OCI charts (CDK's own grant, aws partition only); read-only.",
        "AwsSolutions::AwsSolutions-IAM5[Action::s3:GetBucket*]": "CDK's asset grant: read of the chart asset.",
        "AwsSolutions::AwsSolutions-IAM5[Action::s3:GetObject*]": "CDK's asset grant: read of the chart asset.",
        "AwsSolutions::AwsSolutions-IAM5[Action::s3:List*]": "CDK's asset grant: read of the chart asset.",
        f"AwsSolutions::AwsSolutions-IAM5[Resource::{assets}]":
            "The kubectl handler reads the HyperPod chart's asset from CDK's own asset bucket.",
        f"AwsSolutions::AwsSolutions-IAM5[Resource::<{handler}.Arn>:*]":
            "CDK's provider framework invokes the kubectl handler's versions and aliases only.",
        "AwsSolutions::AwsSolutions-L1": "The runtime of CDK's kubectl handler is chosen by aws-cdk-lib and moves "
                                         "with it.",
    }
    for scope in (handler_role, provider):
        for rule, reason in reasons.items():
            Validations.of(scope).acknowledge(Acknowledgment(id=rule, reason=reason))


def depend_on_policies_only(scope: Construct) -> None:
    """CDK writes DependsOn on a function's role beside the GetAtt that already orders them (cfn-lint W3005): keep
    the rest, as :meth:`fmcluster.stacks.hyperpod.HyperPodCluster._acknowledge_upload` does. The rest is the role's
    policies, which CDK makes the function (the construct, not its CfnFunction) depend on: the provider framework's
    policy is what lets it invoke the kubectl handler, so a function that did not depend on it could lose it first
    on teardown, and the chart's delete could never run (issue 41)."""
    stack = Stack.of(scope)
    for found in scope.node.find_all():
        if isinstance(found, CfnResource) and found.cfn_resource_type == "AWS::Lambda::Function":
            owners = [found.node, *([found.node.scope.node] if found.node.scope else [])]
            construct_level = [c for owner in owners for d in owner.dependencies for c in d.node.find_all()]
            kept = {stack.get_logical_id(d) for d in [*found.obtain_dependencies(), *construct_level]
                    if isinstance(d, CfnResource) and d.cfn_resource_type != "AWS::IAM::Role"}
            found.add_override("DependsOn", sorted(kept))
