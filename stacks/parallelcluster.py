"""The ParallelCluster cluster inside ``NAME-cluster``: the node policy, and (``create_cluster``)
ParallelCluster's CloudFormation provider with a ``Custom::PclusterCluster`` resource.

Used by :class:`fmcluster.stacks.cluster.ClusterStack` when ``orchestrator.type`` is
``parallelcluster``. The configuration is :func:`fmcluster.generate.parallelcluster.cluster_config`
with tokens for the subnet, security groups, file system, policy and bootstrap object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from aws_cdk import (
    Acknowledgment,
    CfnOutput,
    CfnStack,
    CustomResource,
    Fn,
    Stack,
    Validations,
)
from aws_cdk import (
    aws_iam as iam,
)
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct
from fmcluster.stacks.tokens import AWS
from fmcluster.bootstrap.bundles import DispatchedBundles

from fmcluster.contracts import (
    BOOTSTRAP_ARGS_OUTPUT,
    BOOTSTRAP_OUTPUT,
    CLUSTER_NAME_OUTPUT,
    HEAD_NODE_IP_OUTPUT,
    NODE_POLICY_OUTPUT,
    AccountingContract,
    MetricsContract,
    NetworkContract,
    StorageContract,
    export_name,
    node_policy_name,
)
from fmcluster.generate import parallelcluster as generate
from fmcluster.plan import ClusterPlan

PROVIDER_TEMPLATE = ("https://${AWS::Region}-aws-parallelcluster.s3.${AWS::Region}.${AWS::URLSuffix}"
                     "/parallelcluster/%s/templates/custom_resource/cluster.yaml")


class ParallelClusterCluster(Construct):
    """The node policy, its output, and -- unless ``create_cluster: false`` -- the cluster itself.

    ``bootstrap_uri``: S3 URI of the bundle's entry script, run by every compute node as
    ``OnNodeConfigured``. ``bootstrap_read_arns``: the S3 object ARNs (or ``<bucket-arn>/<prefix>/*``)
    the nodes must read to run it. ``scripts_bucket_arn``: the bucket the cluster's custom-action scripts are
    assets in (CDK's asset bucket); the provider may read its ``*.sh`` objects, every custom action's script.
    """

    def __init__(self, scope: Construct, construct_id: str, *, plan: ClusterPlan,
                 network: NetworkContract, storage: StorageContract | None, bootstrap_uri: str,
                 bootstrap_read_arns: Sequence[str], metrics: MetricsContract | None = None,
                 bootstrap_args: Sequence[str] = (), scripts_bucket_arn: str | None = None,
                 accounting: AccountingContract | None = None) -> None:
        super().__init__(scope, construct_id)
        settings = plan.pcluster
        project = plan.project
        stack = Stack.of(self)
        self.cluster_name = plan.pcluster_name
        self.scripts_bucket_arn = scripts_bucket_arn
        self.accounting = accounting

        self.node_policy = iam.ManagedPolicy(
            self, "NodePolicy",
            managed_policy_name=node_policy_name(project),
            # Description is create-only and the name is custom: a description that followed the settings (metrics on
            # or off) would make CloudFormation replace a custom-named policy, which it refuses (fmcluster.guard).
            description=f"fmcluster {project}: what ParallelCluster nodes need (bootstrap bundle, metrics)",
            document=iam.PolicyDocument.from_json({
                "Version": "2012-10-17",
                "Statement": generate.node_policy_statements(bootstrap_read_arns, metrics),
            }),
        )
        for arn in bootstrap_read_arns:
            text = _nag_text(stack, arn)
            if "*" in text:
                Validations.of(self.node_policy).acknowledge(Acknowledgment(
                    id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{text}]",
                    reason="Read-only s3:GetObject under the bootstrap bundle's own key prefix (files named by the "
                           "renderer); no other prefix, bucket or action.",
                ))
        CfnOutput(stack, NODE_POLICY_OUTPUT, value=self.node_policy.managed_policy_arn,
                  description="Managed policy for ParallelCluster nodes (AdditionalIamPolicies)",
                  export_name=export_name(project, NODE_POLICY_OUTPUT))
        CfnOutput(stack, CLUSTER_NAME_OUTPUT, value=self.cluster_name,
                  description="ParallelCluster cluster name")

        self.configuration = generate.cluster_config(
            plan, network=network, storage=storage, bootstrap_uri=bootstrap_uri, bootstrap_args=bootstrap_args,
            node_policy_arns=[self.node_policy.managed_policy_arn], region=AWS.REGION, partition=AWS.PARTITION,
            accounting=accounting,
        )
        self.provider: CfnStack | None = None
        self.cluster: CustomResource | None = None
        if settings.create_cluster:
            self._add_cluster(project, settings.version, settings.deletion_policy, settings.extra_iam_policy_arns)

    def _add_cluster(self, project: str, version: str, deletion_policy: str, extra_policies: list[str]) -> None:
        # The provider's Lambda creates the cluster stack, which attaches our node policies to the
        # roles it makes under /parallelcluster/<cluster>/: allow exactly that, nothing else.
        roles = Fn.sub(f"arn:${{AWS::Partition}}:iam::${{AWS::AccountId}}:role/parallelcluster/{self.cluster_name}/*")
        statements = [iam.PolicyStatement(
            actions=["iam:AttachRolePolicy", "iam:DetachRolePolicy"],
            resources=[roles],
            conditions={"ArnEquals": {"iam:PolicyARN": [self.node_policy.managed_policy_arn, *extra_policies]}},
        )]
        scripts = None
        if self.scripts_bucket_arn is not None:
            # The provider's Lambda reads only parallelcluster-* buckets (aws-parallelcluster
            # cloudformation/custom_resource/cluster.yaml, its policies; FACTS.md section 5): without this its check
            # of the custom actions' script URLs gets a 403 and reports a validation warning.
            scripts = f"{self.scripts_bucket_arn}/*.sh"
            statements.append(iam.PolicyStatement(sid="ReadCustomActionScripts", actions=["s3:GetObject"],
                                                  resources=[scripts]))
        if self.accounting is not None:
            # ParallelCluster validates SlurmSettings.Database.PasswordSecretArn with secretsmanager:DescribeSecret
            # (PasswordSecretArnValidator, pcluster/validators/directory_service_validators.py, 3.16.1); without it
            # the provider reports "Cannot validate secret ... lack of permissions" (validators/common.py). The head
            # node's own GetSecretValue on it ParallelCluster grants itself (AllowGettingSlurmDbSecretValue,
            # pcluster/templates/cdk_builder_utils.py).
            statements.append(iam.PolicyStatement(sid="DescribeAccountingSecret",
                                                  actions=["secretsmanager:DescribeSecret"],
                                                  resources=[self.accounting.secret_arn]))
        attach = iam.ManagedPolicy(
            self, "ProviderAttachPolicy",
            description=f"fmcluster {project}: let the ParallelCluster provider attach the node policies",
            statements=statements,
        )
        stack = Stack.of(self)
        acknowledgments = []
        if scripts is not None:
            acknowledgments.append(Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{_nag_text(stack, scripts)}]",
                reason="Read-only: the shell scripts (content-hashed assets) in CDK's asset bucket, which ParallelCluster's "
                       "provider checks for every custom action; nothing else of the bucket.",
            ))
        acknowledgments.append(Acknowledgment(
            id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{_nag_text(stack, roles)}]",
            reason="ParallelCluster names the node roles when it creates the cluster; the path is this cluster's "
                   "own and a condition limits the policies to fmcluster's node policy and the project's.",
        ))
        Validations.of(attach).acknowledge(*acknowledgments)  # one jsii call for both
        self.provider = CfnStack(
            self, "Provider",
            template_url=Fn.sub(PROVIDER_TEMPLATE % version),
            parameters={"AdditionalIamPolicies": attach.managed_policy_arn},
        )
        self.cluster = CustomResource(
            self, "Cluster",
            resource_type="Custom::PclusterCluster",
            service_token=self.provider.get_att("Outputs.ServiceToken").to_string(),
            properties={
                "ClusterName": self.cluster_name,
                "ClusterConfiguration": self.configuration,
                "DeletionPolicy": deletion_policy,
            },
        )
        CfnOutput(stack, HEAD_NODE_IP_OUTPUT, value=self.cluster.get_att_string("headNode.privateIpAddress"),
                  description="Private IP of the ParallelCluster head node (reach it with SSM Session Manager)")
        CfnOutput(stack, "ParallelClusterValidationMessages",
                  value=self.cluster.get_att_string("validationMessages"),
                  description="Warnings ParallelCluster reported when it created or updated the cluster")


def _nag_text(stack: Stack, value: str) -> str:
    """A value as cdk-nag names it in a finding: ``<AWS::Partition>``, ``<Logical.Attr>`` for tokens."""
    resolved = stack.resolve(value)

    def text(part: object) -> str:
        if isinstance(part, str):
            return part
        if isinstance(part, dict) and "Ref" in part:
            return f"<{part['Ref']}>"
        if isinstance(part, dict) and "Fn::GetAtt" in part:
            return f"<{'.'.join(part['Fn::GetAtt'])}>"
        if isinstance(part, dict) and "Fn::ImportValue" in part:
            return text(part["Fn::ImportValue"])
        if isinstance(part, dict) and "Fn::Join" in part:
            sep, parts = part["Fn::Join"]
            return sep.join(text(p) for p in parts)
        if isinstance(part, dict) and "Fn::Sub" in part and isinstance(part["Fn::Sub"], str):
            return re.sub(r"\$\{([^}]+)\}", lambda m: f"<{m.group(1)}>", part["Fn::Sub"])
        return json.dumps(part)

    return text(resolved)


def build(stack: Any, bundles: DispatchedBundles, metrics: MetricsContract | None) -> None:
    """The archive of per-instance-type bundles, and the dispatcher as the OnNodeConfigured action, in ``stack``
    (:data:`fmcluster.stacks.cluster.BUILDERS`)."""
    archive = s3_assets.Asset(stack, "BootstrapBundles", path=str(bundles.bundles))
    dispatcher = s3_assets.Asset(stack, "BootstrapDispatcher", path=str(bundles.dispatcher))
    archive_url, dispatcher_url = archive.s3_object_url, dispatcher.s3_object_url  # each read is a jsii round trip
    dispatcher_bucket = dispatcher.bucket
    ParallelClusterCluster(
        stack, "ParallelCluster", plan=stack.plan, network=stack.network, storage=stack.storage,
        bootstrap_uri=dispatcher_url,
        # the archive of bundles, and the metrics workspace the nodes' agents remote-write to
        bootstrap_args=[archive_url, *([metrics.remote_write_url] if metrics else [])],
        bootstrap_read_arns=[dispatcher_bucket.arn_for_objects(dispatcher.s3_object_key),
                             archive.bucket.arn_for_objects(archive.s3_object_key)],
        metrics=metrics, scripts_bucket_arn=dispatcher_bucket.bucket_arn, accounting=stack.accounting,
    )
    CfnOutput(stack, BOOTSTRAP_OUTPUT, value=dispatcher_url,
              description="OnNodeConfigured script; its argument is BootstrapBundlesUri")
    CfnOutput(stack, BOOTSTRAP_ARGS_OUTPUT, value=archive_url,
              description="Archive of the bootstrap bundles, one per instance type")
