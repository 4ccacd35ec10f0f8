"""``NAME-cluster``: the compute capacity, recreated often.

- ``orchestrator.type: none``: per compute group a placement group and an EFA launch template
  whose user data fetches the group's bootstrap bundle, and the node role;
- ``parallelcluster``: the bootstrap bundles and ParallelCluster's cluster
  (:class:`fmcluster.stacks.parallelcluster.ParallelClusterCluster`), which makes its own
  launch templates, placement groups and node roles;
- ``hyperpod``: a SageMaker HyperPod cluster with its lifecycle bucket and execution role
  (:class:`fmcluster.stacks.hyperpod.HyperPodCluster`).
"""

from __future__ import annotations

from aws_cdk import (
    Acknowledgment,
    Aws,
    CfnOutput,
    Fn,
    Stack,
    Validations,
)
from aws_cdk import (
    aws_ec2 as ec2,
)
from aws_cdk import (
    aws_iam as iam,
)
from aws_cdk import (
    aws_s3_assets as s3_assets,
)
from constructs import Construct
from fmcluster.bootstrap.bundles import DispatchedBundles, GroupBundle, LifecycleBundles
from fmcluster.stacks.hyperpod import HyperPodCluster
from fmcluster.stacks.launch_template import camel, efa_launch_template
from fmcluster.stacks.parallelcluster import ParallelClusterCluster

from fmcluster.contracts import (
    BOOTSTRAP_ARGS_OUTPUT,
    BOOTSTRAP_OUTPUT,
    MetricsContract,
    NetworkContract,
    StorageContract,
    export_name,
)
from fmcluster.facts import PROJECT_TAG
from fmcluster.plan import ClusterPlan, GroupPlan


class ClusterStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, plan: ClusterPlan,
                 bundles: DispatchedBundles | LifecycleBundles | dict[str, GroupBundle], network: NetworkContract,
                 storage: StorageContract, metrics: MetricsContract | None = None, **kwargs) -> None:
        super().__init__(scope, construct_id, description=f"fmcluster {plan.project}: compute capacity", **kwargs)
        self.plan = plan
        self.network = network
        self.storage = storage
        self.launch_templates: dict[str, ec2.CfnLaunchTemplate] = {}
        if isinstance(bundles, DispatchedBundles):
            self._add_parallelcluster(bundles, metrics)
        elif isinstance(bundles, LifecycleBundles):
            self.hyperpod = HyperPodCluster(self, "HyperPod", plan=plan, bundles=bundles, network=network,
                                            storage=storage, metrics=metrics)
        else:
            self.role, self.instance_profile = self._add_node_role(metrics)
            for group in plan.groups:
                self.launch_templates[group.name] = self._add_group(group, bundles[group.name])

    def _add_parallelcluster(self, bundles: DispatchedBundles, metrics: MetricsContract | None) -> None:
        """The archive of per-instance-type bundles, and the dispatcher as the OnNodeConfigured action."""
        archive = s3_assets.Asset(self, "BootstrapBundles", path=str(bundles.bundles))
        dispatcher = s3_assets.Asset(self, "BootstrapDispatcher", path=str(bundles.dispatcher))
        ParallelClusterCluster(
            self, "ParallelCluster", plan=self.plan, network=self.network, storage=self.storage,
            bootstrap_uri=dispatcher.s3_object_url,
            # the archive of bundles, and the metrics workspace the nodes' agents remote-write to
            bootstrap_args=[archive.s3_object_url, *([metrics.remote_write_url] if metrics else [])],
            bootstrap_read_arns=[a.bucket.arn_for_objects(a.s3_object_key) for a in (dispatcher, archive)],
            metrics=metrics, scripts_bucket_arn=dispatcher.bucket.bucket_arn,
        )
        CfnOutput(self, BOOTSTRAP_OUTPUT, value=dispatcher.s3_object_url,
                  description="OnNodeConfigured script; its argument is BootstrapBundlesUri")
        CfnOutput(self, BOOTSTRAP_ARGS_OUTPUT, value=archive.s3_object_url,
                  description="Archive of the bootstrap bundles, one per instance type")

    def _add_node_role(self, metrics: MetricsContract | None = None) -> tuple[iam.Role, iam.CfnInstanceProfile]:
        """The self-managed nodes' role; with ``metrics``, each node's Prometheus agent may remote-write to the
        project's workspace (that workspace only, nothing else of Amazon Managed Prometheus)."""
        role = iam.Role(
            self, "NodeRole", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"fmcluster {self.plan.project}: GPU nodes (SSM Session Manager, no SSH keys)",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSSMManagedInstanceCore")],
        )
        Validations.of(role).acknowledge(Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]",
            reason="AmazonSSMManagedInstanceCore is AWS's maintained minimum for Session Manager, which replaces SSH "
                   "keys; a copy would drift from it.",
        ))
        profile = iam.CfnInstanceProfile(self, "NodeInstanceProfile", roles=[role.role_name])
        self._add_node_health_policy(role)
        if metrics is not None:
            iam.Policy(self, "NodeMetricsPolicy", roles=[role], statements=[
                iam.PolicyStatement(sid="RemoteWriteOwnMetrics", actions=["aps:RemoteWrite"],
                                    resources=[metrics.workspace_arn]),
            ])
        return role, profile

    def _add_node_health_policy(self, role: iam.Role) -> None:
        """What the bootstrap's health check and IMEX unit call: tag a failed node `fmcluster:health` and, in an
        Auto Scaling group, mark it unhealthy; where a group needs IMEX, find the members of the node's UltraServer
        (``ec2:DescribeInstanceTopology``: its CapacityBlockId names the UltraServer) and their addresses
        (``ec2:DescribeInstances`` on those instance IDs). Tags and health changes are limited to this project's
        instances and groups."""
        project_tag = {f"aws:ResourceTag/{PROJECT_TAG}": self.plan.project}

        def arn(service: str, resource: str) -> str:
            return f"arn:{Aws.PARTITION}:{service}:{Aws.REGION}:{Aws.ACCOUNT_ID}:{resource}"

        reads = ["autoscaling:DescribeAutoScalingInstances"]
        if any(g.needs_imex for g in self.plan.groups):
            reads = ["ec2:DescribeInstanceTopology", "ec2:DescribeInstances", *reads]
        policy = iam.Policy(self, "NodeHealthPolicy", roles=[role], statements=[
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

    def _add_group(self, group: GroupPlan, bundle: GroupBundle) -> ec2.CfnLaunchTemplate:
        gid = camel(group.name)
        template, placement_group = efa_launch_template(
            self, self.plan, group, self.network, user_data=lambda: self._bootstrap_user_data(bundle, gid),
            instance_profile_arn=self.instance_profile.attr_arn)
        if placement_group is not None:
            CfnOutput(self, f"{gid}PlacementGroupName", value=placement_group.ref,
                      description=f"Placement group of {group.name}")
        CfnOutput(self, f"{gid}LaunchTemplateId", value=template.ref, description=f"Launch template of {group.name}",
                  export_name=export_name(self.plan.project, f"{group.name}-LaunchTemplateId"))
        return template

    def _bootstrap_user_data(self, bundle: GroupBundle, gid: str) -> str:
        """Publish the group's rendered bundle as an asset; the entry script that fetches it is the user data."""
        asset = s3_assets.Asset(self, f"{gid}Bootstrap", path=str(bundle.path))
        # Exactly this object: no wildcard on the shared CDK asset bucket.
        self.role.add_to_policy(iam.PolicyStatement(
            actions=["s3:GetObject"], resources=[asset.bucket.arn_for_objects(asset.s3_object_key)]))
        return Fn.base64(bundle.entry_script(asset.s3_object_url))

