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
    CfnOutput,
    Fn,
    Stack,
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
from fmcluster.stacks.node_role import add_node_role
from fmcluster.stacks.parallelcluster import ParallelClusterCluster

from fmcluster.contracts import (
    BOOTSTRAP_ARGS_OUTPUT,
    BOOTSTRAP_OUTPUT,
    MetricsContract,
    NetworkContract,
    StorageContract,
    export_name,
)
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
            self.role, self.instance_profile = add_node_role(self, plan, metrics)
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

