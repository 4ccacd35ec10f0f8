"""The AWS PCS cluster inside ``NAME-cluster`` (``orchestrator.type: pcs``).

- the nodes' role and instance profile under the IAM path ``/aws-pcs/`` (PCS takes a profile whose name starts
  with ``AWSPCS`` or whose path holds ``/aws-pcs/``: botocore ``CreateComputeNodeGroup.iamInstanceProfileArn``),
  allowed ``pcs:RegisterComputeNodeGroupInstance`` (FACTS.md section 5);
- ``AWS::PCS::Cluster`` with Slurm, its ``Size`` (:func:`fmcluster.generate.pcs.size`) and its controller's
  interface in the services subnet (never a Local Zone: cfn-lint's ``AWS::PCS::Cluster`` schema, ``SubnetIds``);
- per compute group a compute node group launched from the group's own EFA launch template
  (:func:`fmcluster.stacks.launch_template.efa_launch_template`: every EFA interface, the placement group, the
  reservation or capacity-block market) and a queue of the same name (its Slurm partition);
- a login node group from a plain launch template.

PCS copies a custom launch template and merges its user data with its own, which must therefore be a MIME
multi-part archive: ``text/cloud-config`` parts run before the node registers with PCS, ``text/x-shellscript``
parts after registration and before slurmd starts (PCS user guide "Working with Amazon EC2 user data",
https://docs.aws.amazon.com/pcs/latest/userguide/working-with_ec2-user-data.html). The group's bootstrap bundle
(GPU checks, FSx mount, metrics agent) runs as a shell part, so that slurmd starts on a node that is ready.
"""

from __future__ import annotations

from typing import Any

import dataclasses

from aws_cdk import Acknowledgment, CfnOutput, CfnTag, Fn, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_pcs as pcs
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct
from fmcluster.bootstrap.selfmanaged import LOGIN_BUNDLE, GroupBundle
from fmcluster.stacks.launch_template import camel, efa_launch_template
from fmcluster.stacks.node_role import add_node_role
from fmcluster.stacks.staging import grant_staged

from fmcluster.contracts import (
    PCS_CLUSTER_ARN_OUTPUT,
    PCS_CLUSTER_ID_OUTPUT,
    PCS_LOGIN_GROUP_ID_OUTPUT,
    MetricsContract,
    NetworkContract,
)
from fmcluster.facts import PROJECT_TAG
from fmcluster.generate import pcs as generate
from fmcluster.plan import ClusterPlan

IAM_PATH = "/aws-pcs/"
"""The path PCS accepts for the nodes' role and instance profile (FACTS.md section 5)."""
MIME_BOUNDARY = "==FMCLUSTER=="


def mime_user_data(shell: str) -> str:
    """``shell`` as the one ``text/x-shellscript`` part of a MIME multi-part archive (the layout of the PCS user
    guide: blank lines before each boundary and after each part's headers)."""
    return (f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"\nMIME-Version: 1.0\n\n'
            f'--{MIME_BOUNDARY}\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n'
            f"{shell.rstrip()}\n\n--{MIME_BOUNDARY}--\n")


class PcsCluster(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, plan: ClusterPlan, bundles: dict[str, GroupBundle],
                 network: NetworkContract, metrics: MetricsContract | None = None) -> None:
        super().__init__(scope, construct_id)
        self.plan = plan
        settings = plan.pcs
        stack = Stack.of(self)
        self.launch_templates: dict[str, ec2.CfnLaunchTemplate] = {}
        self.node_groups: dict[str, pcs.CfnComputeNodeGroup] = {}
        self.queues: dict[str, pcs.CfnQueue] = {}

        self.role, self.instance_profile = add_node_role(self, plan, metrics, path=IAM_PATH)
        grant_staged(stack, self.role)  # the monitoring artefacts staged at deploy (fmcluster.stacks.staging)
        self._allow_registration()

        # Name, Networking and Size are create-only (cfn-lint schema), and CloudFormation refuses to replace a
        # resource whose custom name stays the same: the size's letter and the subnet's ID change the name with them.
        size = generate.size(plan)
        self.cluster_name = Fn.join("", [generate.name_start(plan),
                                         Fn.select(1, Fn.split("-", network.services_subnet_id))])
        tags = {PROJECT_TAG: plan.project, **plan.tags}
        # The controller's interface joins the nodes' groups: the EFA group lets all traffic between its members
        # (slurmctld 6817, slurmd 6818, srun's ports), as AWS's self-referencing PCS cluster group does
        # (aws-hpc-recipes recipes/pcs/getting_started/assets/pcs-cluster-sg.yaml).
        security_groups = [network.efa_security_group_id, network.node_security_group_id]
        self.cluster = pcs.CfnCluster(
            self, "Cluster", name=self.cluster_name, size=size,
            scheduler=pcs.CfnCluster.SchedulerProperty(type="SLURM", version=settings.slurm_version),
            networking=pcs.CfnCluster.NetworkingProperty(subnet_ids=[network.services_subnet_id],
                                                         security_group_ids=security_groups),
            slurm_configuration=self._slurm_configuration(plan),
            tags=tags,
        )

        for node_group in generate.node_groups(plan):
            if node_group.group is None:
                template = self._login_template(network, bundles[LOGIN_BUNDLE])
            else:
                group = plan.group(node_group.group)
                # The node group's image goes into the template: PCS uses the template's when AmiId is absent
                # (cfn-lint schema, AmiId); stating it in both keeps the template honest when read alone.
                group = dataclasses.replace(group, ami_id=generate.image(plan, group))
                template, _ = efa_launch_template(
                    self, plan, group, network, instance_profile_arn=None,  # the node group names the profile
                    user_data=lambda b=bundles[group.name], g=group.name: self._user_data(b, g))
            self.launch_templates[node_group.name] = template
            self.node_groups[node_group.name] = self._node_group(node_group, template, network, tags)
        for queue in generate.queues(plan):
            self.queues[queue.name] = pcs.CfnQueue(
                self, f"{camel(queue.name)}Queue", cluster_id=self.cluster.attr_id, name=queue.name,
                compute_node_group_configurations=[
                    pcs.CfnQueue.ComputeNodeGroupConfigurationProperty(
                        compute_node_group_id=self.node_groups[g].attr_id) for g in queue.groups],
                tags=tags)

        CfnOutput(stack, PCS_CLUSTER_ID_OUTPUT, value=self.cluster.attr_id, description="AWS PCS cluster ID")
        CfnOutput(stack, PCS_CLUSTER_ARN_OUTPUT, value=self.cluster.attr_arn, description="AWS PCS cluster ARN")
        login = next((g for g in generate.node_groups(plan) if g.group is None), None)
        if login is not None:  # its instances carry the tag aws:pcs:compute-node-group-id=<this ID>
            CfnOutput(stack, PCS_LOGIN_GROUP_ID_OUTPUT, value=self.node_groups[login.name].attr_id,
                      description="AWS PCS login node group ID (fmcluster connect starts a session on one of them)")

    @staticmethod
    def _slurm_configuration(plan: ClusterPlan) -> object | None:
        """Scale-down idle time and, with ``orchestrator.accounting`` on, PCS's managed accounting: ``Accounting.Mode:
        STANDARD`` (botocore pcs ``Accounting``: STANDARD or NONE; ``defaultPurgeTimeInDays`` left at its default
        -1, records kept). PCS runs slurmdbd and its database itself; it needs Slurm 24.11 or later, which every
        version fmcluster offers is (FACTS.md section 5; ``fmcluster.config.pcs.SLURM_VERSIONS``)."""
        idle = plan.pcs.scaledown_idle_seconds
        managed = plan.accounting_store == "managed"
        if idle is None and not managed:
            return None
        return pcs.CfnCluster.SlurmConfigurationProperty(
            scale_down_idle_time_in_seconds=idle,
            accounting=pcs.CfnCluster.AccountingProperty(mode="STANDARD") if managed else None)

    # -- the role ---------------------------------------------------------------------------------------------

    def _allow_registration(self) -> None:
        """``pcs:RegisterComputeNodeGroupInstance``: the PCS agent on each node registers it with the cluster."""
        policy = self.registration = iam.Policy(self, "NodeRegistrationPolicy", roles=[self.role], statements=[
            iam.PolicyStatement(sid="RegisterWithPcs", actions=["pcs:RegisterComputeNodeGroupInstance"],
                                resources=["*"]),
        ])
        Validations.of(policy).acknowledge(Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            reason="pcs:RegisterComputeNodeGroupInstance is granted on * as in AWS's own PCS instance profiles "
                   "(AWSPCSComputeNodePolicy; aws-hpc-recipes pcs-iip-minimal.yaml); the call registers only "
                   "the calling instance, with the bootstrap ID PCS gave it.",
        ))

    # -- node groups --------------------------------------------------------------------------------------------

    def _user_data(self, bundle: GroupBundle, group: str) -> str:
        """Publish the group's bundle as an asset; its entry script, as the shell part of a MIME archive."""
        asset = s3_assets.Asset(self, f"{camel(group)}Bootstrap", path=str(bundle.path))
        # Exactly this object: no wildcard on the shared CDK asset bucket.
        self.role.add_to_policy(iam.PolicyStatement(
            actions=["s3:GetObject"], resources=[asset.bucket.arn_for_objects(asset.s3_object_key)]))
        text = mime_user_data(bundle.entry_script(asset.s3_object_url))
        return Fn.base64(text)

    def _login_template(self, network: NetworkContract, bundle: GroupBundle) -> ec2.CfnLaunchTemplate:
        """The login nodes' template: the nodes' security groups (so that they reach slurmctld), IMDSv2 only, an
        encrypted root volume, the project's tags, and the login bundle (the FSx mount with the Lustre client it
        installs where the image lacks one, exporters and metrics agent, health check) as the MIME shell part."""
        plan = self.plan
        user_data = self._user_data(bundle, LOGIN_BUNDLE)
        tags = [CfnTag(key="Name", value=f"{plan.project}-login"), CfnTag(key="fmcluster:group", value="login"),
                CfnTag(key=PROJECT_TAG, value=plan.project), *(CfnTag(key=k, value=v) for k, v in plan.tags.items())]
        return ec2.CfnLaunchTemplate(
            self, "LoginLaunchTemplate", launch_template_name=f"{plan.project}-login",
            launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
                image_id=generate.image(plan, None),
                user_data=user_data,
                metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(
                    http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=1),
                block_device_mappings=[ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
                    device_name=plan.os_facts.root_device,
                    ebs=ec2.CfnLaunchTemplate.EbsProperty(volume_size=200, volume_type="gp3", encrypted=True,
                                                          delete_on_termination=True))],
                security_group_ids=[network.efa_security_group_id, network.node_security_group_id],
                tag_specifications=[ec2.CfnLaunchTemplate.TagSpecificationProperty(resource_type=kind, tags=tags)
                                    for kind in ("instance", "volume")],
            ))

    def _node_group(self, node_group: generate.NodeGroup, template: ec2.CfnLaunchTemplate,
                    network: NetworkContract, tags: dict[str, str]) -> pcs.CfnComputeNodeGroup:
        group = None if node_group.group is None else self.plan.group(node_group.group)
        # Compute nodes in the compute subnet (EFA stays in one subnet); login nodes beside the controller.
        subnet = network.compute_subnet_id if group is not None else network.services_subnet_id
        image = generate.image(self.plan, group)
        resource = pcs.CfnComputeNodeGroup(
            self, f"{camel(node_group.name)}NodeGroup", cluster_id=self.cluster.attr_id, name=node_group.name,
            iam_instance_profile_arn=self.instance_profile.attr_arn,
            instance_configs=[pcs.CfnComputeNodeGroup.InstanceConfigProperty(instance_type=node_group.instance_type)],
            scaling_configuration=pcs.CfnComputeNodeGroup.ScalingConfigurationProperty(
                min_instance_count=node_group.min_count, max_instance_count=node_group.max_count),
            subnet_ids=[subnet], ami_id=image, purchase_option=node_group.purchase_option,
            custom_launch_template=pcs.CfnComputeNodeGroup.CustomLaunchTemplateProperty(
                template_id=template.ref, version=template.attr_latest_version_number),
            tags=tags,
        )
        # Nodes register with PCS and fetch their bundle as soon as they boot: the role's grants come first.
        resource.node.add_dependency(self.role, self.registration)
        return resource


def build(stack: Any, bundles: dict[str, GroupBundle], metrics: MetricsContract | None) -> None:
    """The PCS cluster in the cluster stack (:data:`fmcluster.stacks.cluster.BUILDERS`)."""
    stack.pcs = PcsCluster(stack, "Pcs", plan=stack.plan, bundles=bundles, network=stack.network, metrics=metrics)
    stack.launch_templates.update(stack.pcs.launch_templates)
