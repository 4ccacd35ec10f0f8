"""``NAME-cluster``: per compute group a placement group and an EFA launch template, and the node role.

This stack is the one recreated often; the orchestrator issues add their resources here.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from aws_cdk import (
    Acknowledgment,
    CfnOutput,
    CfnTag,
    Fn,
    Stack,
    Token,
    Validations,
    aws_ec2 as ec2,
    aws_iam as iam,
    aws_s3_assets as s3_assets,
)
from constructs import Construct

from fmcluster.bootstrap import render
from fmcluster.config import ComputeGroup, Project
from fmcluster.plan import GroupPlan, Plan
from fmcluster.contracts import MetricsContract, NetworkContract, StorageContract

ROOT_DEVICE = {"ubuntu-22.04": "/dev/sda1", "ubuntu-24.04": "/dev/sda1", "al2023": "/dev/xvda"}

DLAMI_PARAMETER = {
    # AWS Deep Learning Base OSS NVIDIA Driver GPU AMIs, resolved by CloudFormation at deploy time.
    "ubuntu-22.04": "/aws/service/deeplearning/ami/{arch}/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id",
    "ubuntu-24.04": "/aws/service/deeplearning/ami/{arch}/base-oss-nvidia-driver-gpu-ubuntu-24.04/latest/ami-id",
    "al2023": "/aws/service/deeplearning/ami/{arch}/base-oss-nvidia-driver-gpu-amazon-linux-2023/latest/ami-id",
}


class ClusterStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, project: Project, plan: Plan,
                 network: NetworkContract, storage: StorageContract, metrics: MetricsContract | None = None,
                 **kwargs) -> None:
        super().__init__(scope, construct_id, description=f"fmcluster {project.name}: compute capacity", **kwargs)
        self.project = project
        self.plan = plan
        self.network = network
        self.storage = storage
        self.launch_templates: dict[str, ec2.CfnLaunchTemplate] = {}
        if project.orchestrator.type == "parallelcluster":
            # ParallelCluster makes its own launch templates, placement groups and node roles.
            self._add_parallelcluster(metrics)
            return
        self.role, self.instance_profile = self._add_node_role()
        for group in project.compute_groups:
            self.launch_templates[group.name] = self._add_group(group, plan.group(group.name))

    def _add_parallelcluster(self, metrics: MetricsContract | None) -> None:
        """One bundle per instance type in an archive, and a dispatcher as the OnNodeConfigured action."""
        from fmcluster.parallelcluster.stack_names import BOOTSTRAP_ARGS_OUTPUT, BOOTSTRAP_OUTPUT
        from fmcluster.stacks.parallelcluster import ParallelClusterCluster

        root = _scratch_dir(f"fmcluster-{self.project.name}-pcluster-")
        sums = {}
        for group in self.project.compute_groups:
            if group.instance_type in sums:
                continue
            # ParallelCluster mounts the shared FSx itself (SharedStorage), so the bundle does not.
            ctx = render.context_for(self.project, group.name, "compute", "parallelcluster", fsx=None)
            sums[group.instance_type] = render.render_bundle(ctx, root / "bundles" / group.instance_type).sums_sha256
        (root / "dispatch").mkdir()
        (root / "dispatch" / "on-node-configured.sh").write_text(render.dispatcher_script(self.project.name, sums))
        bundles = s3_assets.Asset(self, "BootstrapBundles", path=str(root / "bundles"))
        dispatcher = s3_assets.Asset(self, "BootstrapDispatcher", path=str(root / "dispatch" / "on-node-configured.sh"))
        ParallelClusterCluster(
            self, "ParallelCluster", project=self.project, plan=self.plan, network=self.network, storage=self.storage,
            bootstrap_uri=dispatcher.s3_object_url, bootstrap_args=[bundles.s3_object_url],
            bootstrap_read_arns=[a.bucket.arn_for_objects(a.s3_object_key) for a in (dispatcher, bundles)],
            metrics=metrics,
        )
        CfnOutput(self, BOOTSTRAP_OUTPUT, value=dispatcher.s3_object_url,
                  description="OnNodeConfigured script; its argument is BootstrapBundlesUri")
        CfnOutput(self, BOOTSTRAP_ARGS_OUTPUT, value=bundles.s3_object_url,
                  description="Archive of the bootstrap bundles, one per instance type")

    def _add_node_role(self) -> tuple[iam.Role, iam.CfnInstanceProfile]:
        role = iam.Role(
            self, "NodeRole", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description=f"fmcluster {self.project.name}: GPU nodes (SSM Session Manager, no SSH keys)",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSSMManagedInstanceCore")],
        )
        Validations.of(role).acknowledge(Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]",
            reason="AmazonSSMManagedInstanceCore is AWS's maintained minimum for Session Manager, which replaces SSH "
                   "keys; a copy would drift from it.",
        ))
        profile = iam.CfnInstanceProfile(self, "NodeInstanceProfile", roles=[role.role_name])
        return role, profile

    def _add_group(self, group: ComputeGroup, gplan: GroupPlan) -> ec2.CfnLaunchTemplate:
        gid = _camel(group.name)
        placement = None
        if gplan.placement_group:
            pg = ec2.CfnPlacementGroup(self, f"{gid}PlacementGroup", strategy="cluster")
            placement = ec2.CfnLaunchTemplate.PlacementProperty(group_name=pg.ref)
            CfnOutput(self, f"{gid}PlacementGroupName", value=pg.ref, description=f"Placement group of {group.name}")

        interfaces = [
            ec2.CfnLaunchTemplate.NetworkInterfaceProperty(
                network_card_index=nic.card,
                device_index=nic.device,
                interface_type=nic.type,
                subnet_id=self.network.compute_subnet_id,
                groups=[self.network.efa_security_group_id, self.network.node_security_group_id],
                delete_on_termination=True,
                associate_public_ip_address=False if nic.needs_ip else None,
                description=f"{self.project.name}-{group.name} card {nic.card} device {nic.device} ({nic.type})",
            )
            for nic in gplan.interfaces
        ]
        reservation = None
        market = None
        if gplan.reservation_id is not None:
            reservation = ec2.CfnLaunchTemplate.CapacityReservationSpecificationProperty(
                capacity_reservation_target=ec2.CfnLaunchTemplate.CapacityReservationTargetProperty(
                    capacity_reservation_id=gplan.reservation_id))
        if gplan.capacity == "capacity-block":
            market = ec2.CfnLaunchTemplate.InstanceMarketOptionsProperty(market_type="capacity-block")

        user_data = self._bootstrap_user_data(group, gid)
        image = group.ami_id or "{{resolve:ssm:%s}}" % DLAMI_PARAMETER[self.project.os].format(arch=gplan.architecture)
        tags = [CfnTag(key="Name", value=f"{self.project.name}-{group.name}"),
                CfnTag(key="fmcluster:group", value=group.name)]
        template = ec2.CfnLaunchTemplate(
            self, f"{gid}LaunchTemplate",
            launch_template_name=f"{self.project.name}-{group.name}",
            launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
                instance_type=group.instance_type,
                image_id=image,
                user_data=user_data,
                iam_instance_profile=ec2.CfnLaunchTemplate.IamInstanceProfileProperty(arn=self.instance_profile.attr_arn),
                metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(
                    http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=1),
                block_device_mappings=[ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
                    device_name=ROOT_DEVICE[self.project.os],
                    ebs=ec2.CfnLaunchTemplate.EbsProperty(
                        volume_size=group.root_volume_gib, volume_type="gp3", encrypted=True, delete_on_termination=True),
                )],
                network_interfaces=interfaces,
                placement=placement,
                capacity_reservation_specification=reservation,
                instance_market_options=market,
                tag_specifications=[ec2.CfnLaunchTemplate.TagSpecificationProperty(resource_type=kind, tags=tags)
                                    for kind in ("instance", "volume", "network-interface")],
            ),
        )
        CfnOutput(self, f"{gid}LaunchTemplateId", value=template.ref, description=f"Launch template of {group.name}",
                  export_name=f"{self.project.name}-{group.name}-LaunchTemplateId")
        return template


    def _bootstrap_user_data(self, group: ComputeGroup, gid: str) -> str:
        """Render the group's bootstrap bundle, publish it as an asset, return the entry script as user data."""
        mount, boot_env = None, {}
        fsx = self.storage.fsx
        if fsx is not None:
            if Token.is_unresolved(fsx.file_system_id):  # created in this deployment: known at boot only
                mount = render.FsxMount(mount_path=fsx.mount_path, efa_enabled=fsx.efa_enabled)
                boot_env = {"FMC_FSX_ID": fsx.file_system_id, "FMC_FSX_DNS": fsx.dns_name,
                            "FMC_FSX_MOUNT_NAME": fsx.mount_name}
            else:
                mount = render.FsxMount(file_system_id=fsx.file_system_id, dns_name=fsx.dns_name,
                                        mount_name=fsx.mount_name, mount_path=fsx.mount_path,
                                        efa_enabled=fsx.efa_enabled)
        ctx = render.context_for(self.project, group.name, "compute", fsx=mount)
        bundle_dir = _scratch_dir(f"fmcluster-{self.project.name}-{group.name}-")
        manifest = render.render_bundle(ctx, bundle_dir)
        asset = s3_assets.Asset(self, f"{gid}Bootstrap", path=str(bundle_dir))
        # Exactly this object: no wildcard on the shared CDK asset bucket.
        self.role.add_to_policy(iam.PolicyStatement(
            actions=["s3:GetObject"], resources=[asset.bucket.arn_for_objects(asset.s3_object_key)]))
        entry = render.entry_script(ctx.model_copy(update={"bundle_s3_uri": asset.s3_object_url}),
                                    manifest.sums_sha256, boot_env)
        return Fn.base64(entry)


def _scratch_dir(prefix: str) -> Path:
    """A folder for rendered bundles; CDK copies assets into cdk.out at synth, then it goes."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("_", "-").split("-"))
