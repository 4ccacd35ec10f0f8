"""A compute group's EFA launch template (and its cluster placement group), as every orchestrator that launches
from our own templates builds it: self-managed nodes and AWS PCS node groups.

- every EFA interface the type has (:func:`fmcluster.plan.efa_layout`), in the compute subnet, in the EFA and node
  security groups; only the primary takes an address, and none is public;
- the group's placement group (created here, or the reservation's own), its reservation and capacity-block market;
- IMDSv2 only, an encrypted gp3 root volume, and the project's tags on instances, volumes and interfaces.
"""

from __future__ import annotations

from collections.abc import Callable

from aws_cdk import CfnTag
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fmcluster.contracts import NetworkContract
from fmcluster.facts import PROJECT_TAG
from fmcluster.plan import ClusterPlan, GroupPlan


def camel(name: str) -> str:
    """A group name as a logical-ID part: ``gpu-a`` -> ``GpuA``."""
    return "".join(part.capitalize() for part in name.replace("_", "-").split("-"))


def efa_launch_template(scope: Construct, plan: ClusterPlan, group: GroupPlan, network: NetworkContract, *,
                        user_data: Callable[[], str], instance_profile_arn: str | None
                        ) -> tuple[ec2.CfnLaunchTemplate, ec2.CfnPlacementGroup | None]:
    """``GROUPLaunchTemplate`` (and ``GROUPPlacementGroup`` where the group asks for one) in ``scope``; ``user_data``
    makes the (base64) user data, after the placement group (the order of the template's resources stays put). Without ``instance_profile_arn`` the template names none (the orchestrator gives it)."""
    gid = camel(group.name)
    project = plan.project
    placement = None
    pg = None
    if group.placement_group:
        pg = ec2.CfnPlacementGroup(scope, f"{gid}PlacementGroup", strategy="cluster")
        placement = ec2.CfnLaunchTemplate.PlacementProperty(group_name=pg.ref)
    elif group.existing_placement_group is not None:  # the reservation's own group
        placement = ec2.CfnLaunchTemplate.PlacementProperty(group_name=group.existing_placement_group)

    interfaces = [
        ec2.CfnLaunchTemplate.NetworkInterfaceProperty(
            network_card_index=nic.card,
            device_index=nic.device,
            interface_type=nic.type,
            subnet_id=network.compute_subnet_id,
            groups=[network.efa_security_group_id, network.node_security_group_id],
            delete_on_termination=True,
            associate_public_ip_address=False if nic.needs_ip else None,
            description=f"{project}-{group.name} card {nic.card} device {nic.device} ({nic.type})",
        )
        for nic in group.interfaces
    ]
    reservation = None
    market = None
    if group.reservation_id is not None:
        reservation = ec2.CfnLaunchTemplate.CapacityReservationSpecificationProperty(
            capacity_reservation_target=ec2.CfnLaunchTemplate.CapacityReservationTargetProperty(
                capacity_reservation_id=group.reservation_id))
    if group.capacity == "capacity-block":
        market = ec2.CfnLaunchTemplate.InstanceMarketOptionsProperty(market_type="capacity-block")

    user_data_text = user_data()
    os_facts = plan.os_facts
    image = group.ami_id or "{{resolve:ssm:%s}}" % os_facts.dlami_parameter(group.architecture)
    # Instances, volumes and interfaces carry the project tag (the collector finds nodes by it, cost
    # allocation groups by it, the health policy is limited by it) and the project's own tags.
    tags = [CfnTag(key="Name", value=f"{project}-{group.name}"),
            CfnTag(key="fmcluster:group", value=group.name),
            CfnTag(key=PROJECT_TAG, value=project),
            *(CfnTag(key=k, value=v) for k, v in plan.tags.items())]
    template = ec2.CfnLaunchTemplate(
        scope, f"{gid}LaunchTemplate",
        launch_template_name=f"{project}-{group.name}",
        launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
            instance_type=group.instance_type,
            image_id=image,
            user_data=user_data_text,
            iam_instance_profile=(None if instance_profile_arn is None
                                  else ec2.CfnLaunchTemplate.IamInstanceProfileProperty(arn=instance_profile_arn)),
            metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(
                http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=1),
            block_device_mappings=[ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
                device_name=os_facts.root_device,
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
    return template, pg
