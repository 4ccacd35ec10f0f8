"""The ParallelCluster cluster inside ``NAME-cluster``: the node policy, and (``create_cluster``)
ParallelCluster's CloudFormation provider with a ``Custom::PclusterCluster`` resource.

Used by :class:`fmcluster.stacks.cluster.ClusterStack` when ``orchestrator.type`` is
``parallelcluster``. The configuration is :func:`fmcluster.parallelcluster.generate.cluster_config`
with tokens for the subnet, security groups, file system, policy and bootstrap object.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import (
    Acknowledgment,
    Aws,
    CfnOutput,
    CfnStack,
    CustomResource,
    Fn,
    Stack,
    Validations,
    aws_iam as iam,
)
from constructs import Construct

from fmcluster.config import Project
from fmcluster.contracts import MetricsContract, NetworkContract, StorageContract
from fmcluster.parallelcluster import generate, stack_names
from fmcluster.parallelcluster.settings import settings_of
from fmcluster.plan import Plan

PROVIDER_TEMPLATE = ("https://${AWS::Region}-aws-parallelcluster.s3.${AWS::Region}.${AWS::URLSuffix}"
                     "/parallelcluster/%s/templates/custom_resource/cluster.yaml")


class ParallelClusterCluster(Construct):
    """The node policy, its output, and -- unless ``create_cluster: false`` -- the cluster itself.

    ``bootstrap_uri``: S3 URI of the bundle's entry script, run by every compute node as
    ``OnNodeConfigured``. ``bootstrap_read_arns``: the S3 object ARNs (or ``<bucket-arn>/<prefix>/*``)
    the nodes must read to run it.
    """

    def __init__(self, scope: Construct, construct_id: str, *, project: Project, plan: Plan,
                 network: NetworkContract, storage: StorageContract | None, bootstrap_uri: str,
                 bootstrap_read_arns: Sequence[str], metrics: MetricsContract | None = None) -> None:
        super().__init__(scope, construct_id)
        settings = settings_of(project)
        stack = Stack.of(self)
        self.cluster_name = generate.cluster_name(project)

        self.node_policy = iam.ManagedPolicy(
            self, "NodePolicy",
            managed_policy_name=stack_names.node_policy_name(project),
            description=f"fmcluster {project.name}: ParallelCluster nodes read the bootstrap bundle"
                        + (" and remote-write metrics" if metrics else ""),
            document=iam.PolicyDocument.from_json({
                "Version": "2012-10-17",
                "Statement": generate.node_policy_statements(bootstrap_read_arns, metrics),
            }),
        )
        Validations.of(self.node_policy).acknowledge(Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5",
            reason="Read-only s3:GetObject on the bootstrap bundle's own objects (a key prefix of the bundle "
                   "bucket, files named by the renderer); no other bucket or action.",
        ))
        CfnOutput(stack, stack_names.NODE_POLICY_OUTPUT, value=self.node_policy.managed_policy_arn,
                  description="Managed policy for ParallelCluster nodes (AdditionalIamPolicies)",
                  export_name=f"{project.name}-{stack_names.NODE_POLICY_OUTPUT}")
        CfnOutput(stack, stack_names.CLUSTER_NAME_OUTPUT, value=self.cluster_name,
                  description="ParallelCluster cluster name")

        self.configuration = generate.cluster_config(
            project, plan, network=network, storage=storage, bootstrap_uri=bootstrap_uri,
            node_policy_arns=[self.node_policy.managed_policy_arn], region=Aws.REGION, partition=Aws.PARTITION,
        )
        self.provider: CfnStack | None = None
        self.cluster: CustomResource | None = None
        if settings.create_cluster:
            self._add_cluster(project, settings.version, settings.deletion_policy, settings.extra_iam_policy_arns)

    def _add_cluster(self, project: Project, version: str, deletion_policy: str, extra_policies: list[str]) -> None:
        # The provider's Lambda creates the cluster stack, which attaches our node policies to the
        # roles it makes under /parallelcluster/<cluster>/: allow exactly that, nothing else.
        attach = iam.ManagedPolicy(
            self, "ProviderAttachPolicy",
            description=f"fmcluster {project.name}: let the ParallelCluster provider attach the node policies",
            statements=[iam.PolicyStatement(
                actions=["iam:AttachRolePolicy", "iam:DetachRolePolicy"],
                resources=[Fn.sub("arn:${AWS::Partition}:iam::${AWS::AccountId}:role/parallelcluster/"
                                  f"{self.cluster_name}/*")],
                conditions={"ArnEquals": {"iam:PolicyARN": [self.node_policy.managed_policy_arn, *extra_policies]}},
            )],
        )
        Validations.of(attach).acknowledge(Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5",
            reason="ParallelCluster names the node roles when it creates the cluster; the path is this cluster's "
                   "own and a condition limits the policies to fmcluster's node policy and the project's.",
        ))
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
        stack = Stack.of(self)
        CfnOutput(stack, stack_names.HEAD_NODE_IP_OUTPUT, value=self.cluster.get_att_string("headNode.privateIpAddress"),
                  description="Private IP of the ParallelCluster head node (reach it with SSM Session Manager)")
        CfnOutput(stack, "ParallelClusterValidationMessages",
                  value=self.cluster.get_att_string("validationMessages"),
                  description="Warnings ParallelCluster reported when it created or updated the cluster")
