"""``NAME-cluster``: the compute capacity, recreated often.

What goes in is the project's orchestrator's to say (:mod:`fmcluster.orchestrators`): without a scheduler, per
compute group a placement group and an EFA launch template whose user data fetches the group's bootstrap bundle, and
the node role (:meth:`ClusterStack.add_launch_templates`); otherwise the orchestrator's cluster construct
(ParallelCluster's, HyperPod's, PCS's), built from the bundles it rendered (:data:`BUILDERS`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

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
from fmcluster.bootstrap.selfmanaged import GroupBundle
from fmcluster.stacks.launch_template import camel, efa_launch_template
from fmcluster.stacks.staging import grant_staged, stage
from fmcluster.stacks.node_role import add_node_role

from fmcluster.contracts import (
    AccountingContract,
    MetricsContract,
    NetworkContract,
    StorageContract,
    export_name,
)
from fmcluster.plan import ClusterPlan, GroupPlan


class ClusterStack(Stack):
    """The compute capacity of one project: what its orchestrator builds here (:data:`BUILDERS`), from the bundles
    it rendered (:data:`fmcluster.bootstrap.bundles.RENDERERS`)."""

    def __init__(self, scope: Construct, construct_id: str, *, plan: ClusterPlan, bundles: object,
                 network: NetworkContract, storage: StorageContract, metrics: MetricsContract | None = None,
                 accounting: AccountingContract | None = None, staged: Sequence[dict[str, str]] = (),
                 **kwargs) -> None:
        super().__init__(scope, construct_id, description=f"fmcluster {plan.project}: compute capacity", **kwargs)
        self.plan = plan
        self.network = network
        self.storage = storage
        self.accounting = accounting
        """The Slurm accounting database (``NAME-accounting``), or None: accounting off or kept elsewhere."""
        self.launch_templates: dict[str, ec2.CfnLaunchTemplate] = {}
        self.staged = stage(self, staged)
        """The monitoring artefacts the bundles list, staged at deploy (fmcluster.stacks.staging): every node role reads
        them."""
        BUILDERS[plan.orchestrator](self, bundles, metrics)

    def add_launch_templates(self, bundles: dict[str, GroupBundle], metrics: MetricsContract | None) -> None:
        """Self-managed nodes: the node role, and per compute group its launch template (and placement group)."""
        self.role, self.instance_profile = add_node_role(self, self.plan, metrics)
        grant_staged(self, self.role)
        for group in self.plan.groups:
            self.launch_templates[group.name] = self._add_group(group, bundles[group.name])

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


Builder = Callable[["ClusterStack", Any, "MetricsContract | None"], None]


class OwnBuilder:
    """An orchestrator's ``build(stack, bundles, metrics)``, from its own stack module, imported when a project first
    needs it: each module pulls CDK modules of its own (HyperPod on EKS: ``aws_eks`` and the kubectl layer's jsii
    assembly; PCS: ``aws_pcs``) that a project of another orchestrator never loads, and every synthesis would
    otherwise pay for all of them (about 0.6 s)."""

    def __init__(self, module: str) -> None:
        self.module = module

    def __call__(self, stack: ClusterStack, bundles: Any, metrics: MetricsContract | None) -> None:
        importlib.import_module(self.module).build(stack, bundles, metrics)

    def __repr__(self) -> str:
        return f"{self.module}.build"


BUILDERS: dict[str, Builder] = {
    "none": ClusterStack.add_launch_templates,
    "parallelcluster": OwnBuilder("fmcluster.stacks.parallelcluster"),
    "hyperpod": OwnBuilder("fmcluster.stacks.hyperpod"),
    "pcs": OwnBuilder("fmcluster.stacks.pcs"),
    "hyperpod-eks": OwnBuilder("fmcluster.stacks.hyperpod_eks"),
}
"""The stacks stage's table of orchestrators (:mod:`fmcluster.orchestrators`): what each adds to the cluster stack
from its bundles (the stack holds the plan, network and storage contracts)."""
