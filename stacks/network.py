"""``NAME-network``: the VPC (or an imported one), its subnets, endpoints, flow logs and security groups.

The VPC is built from L1 constructs because the compute subnet must be placed by AZ *ID*
(``use1-az6``): capacity is AZ-specific and AZ names differ per account, while the L2
``ec2.Vpc`` only knows AZ names.
"""

from __future__ import annotations

from aws_cdk import (
    Acknowledgment,
    CfnOutput,
    Fn,
    RemovalPolicy,
    Stack,
    Validations,
)
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from fmcluster.contracts import DATABASE_SUBNET_OUTPUTS, NETWORK_OUTPUTS, NetworkContract, export_name
from fmcluster.facts import LUSTRE_PORT_RANGES
from fmcluster.stacks import tokens
from fmcluster.stacks.tokens import AWS
from fmcluster.plan import NetworkPlan


class NetworkStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, plan: NetworkPlan, **kwargs) -> None:
        super().__init__(scope, construct_id, description=f"fmcluster {plan.project}: network", **kwargs)
        self.plan = plan
        spec = plan.spec
        if spec.existing is None:
            vpc_id, subnet_id, services_id = self._add_vpc()
            database_ids = self._add_database_subnets(vpc_id) if plan.database_subnet_cidrs else ()
        else:
            vpc_id = spec.existing.vpc_id
            subnet_id = services_id = spec.existing.compute_subnet_id
            database_ids = tuple(spec.existing.database_subnet_ids or ())
        vpc = ec2.Vpc.from_vpc_attributes(self, "VpcRef", vpc_id=vpc_id, availability_zones=[plan.availability_zone_id])
        efa, node, storage = self._add_security_groups(vpc)
        if spec.existing is None and spec.interface_endpoints:
            self._add_interface_endpoints(vpc, services_id)
        self.contract = NetworkContract(
            vpc_id=vpc_id,
            compute_subnet_id=subnet_id,
            efa_security_group_id=efa.security_group_id,
            node_security_group_id=node.security_group_id,
            storage_security_group_id=storage.security_group_id,
            services_subnet_id=services_id,
            database_subnet_ids=database_ids,
        )
        self._add_outputs()

    # -- resources -------------------------------------------------------------------------

    def _add_vpc(self) -> tuple[str, str, str]:
        """The VPC; the public subnet (NAT gateway) and, for a Local Zone, a services subnet in the
        services zone; the compute subnet in the compute zone. Returns the VPC, compute and services IDs."""
        net = self.plan
        # Each ``.ref`` is a jsii round trip returning the same token: read once.
        vpc_id = ec2.CfnVPC(self, "Vpc", cidr_block=net.vpc_cidr, enable_dns_hostnames=True,
                            enable_dns_support=True).ref
        igw_id = ec2.CfnInternetGateway(self, "InternetGateway").ref
        attachment = ec2.CfnVPCGatewayAttachment(self, "InternetGatewayAttachment", vpc_id=vpc_id,
                                                 internet_gateway_id=igw_id)

        public_id = ec2.CfnSubnet(
            self, "PublicSubnet", vpc_id=vpc_id, cidr_block=net.public_subnet_cidr,
            availability_zone_id=net.services_zone_id, map_public_ip_on_launch=False,
        ).ref
        public_routes = ec2.CfnRouteTable(self, "PublicRouteTable", vpc_id=vpc_id).ref
        ec2.CfnSubnetRouteTableAssociation(self, "PublicRouteTableAssociation", subnet_id=public_id,
                                           route_table_id=public_routes)
        to_igw = ec2.CfnRoute(self, "PublicDefaultRoute", route_table_id=public_routes,
                              destination_cidr_block="0.0.0.0/0", gateway_id=igw_id)
        to_igw.node.add_dependency(attachment)

        eip = ec2.CfnEIP(self, "NatAddress", domain="vpc")
        nat = ec2.CfnNatGateway(self, "NatGateway", subnet_id=public_id, allocation_id=eip.attr_allocation_id)

        compute_id = ec2.CfnSubnet(
            self, "ComputeSubnet", vpc_id=vpc_id, cidr_block=net.compute_subnet_cidr,
            availability_zone_id=self.plan.availability_zone_id, map_public_ip_on_launch=False,
        ).ref
        compute_routes = ec2.CfnRouteTable(self, "ComputeRouteTable", vpc_id=vpc_id).ref
        ec2.CfnSubnetRouteTableAssociation(self, "ComputeRouteTableAssociation", subnet_id=compute_id,
                                           route_table_id=compute_routes)
        ec2.CfnRoute(self, "ComputeDefaultRoute", route_table_id=compute_routes, destination_cidr_block="0.0.0.0/0",
                     nat_gateway_id=nat.ref)

        services_id = compute_id
        if net.services_subnet_cidr is not None:  # a Local Zone: FSx, endpoints, head node in the parent zone
            services_id = ec2.CfnSubnet(
                self, "ServicesSubnet", vpc_id=vpc_id, cidr_block=net.services_subnet_cidr,
                availability_zone_id=net.services_zone_id, map_public_ip_on_launch=False,
            ).ref
            ec2.CfnSubnetRouteTableAssociation(self, "ServicesRouteTableAssociation", subnet_id=services_id,
                                               route_table_id=compute_routes)

        ec2.CfnVPCEndpoint(
            self, "S3GatewayEndpoint", vpc_id=vpc_id, vpc_endpoint_type="Gateway",
            service_name=Fn.sub("com.amazonaws.${AWS::Region}.s3"),
            route_table_ids=[compute_routes, public_routes],
        )
        self._add_flow_logs(vpc_id)
        return vpc_id, compute_id, services_id

    def _add_database_subnets(self, vpc_id: str) -> tuple[str, ...]:
        """The Slurm accounting database's subnets: an RDS DB subnet group needs subnets in at least two Availability
        Zones (RDS User Guide, "Working with a DB instance in a VPC"), and nothing else here spans a second zone. The
        Region's first two zones (``Fn::GetAZs``) differ by construction, whatever the compute zone is; slurmdbd on
        the head node reaching the database across zones is fine for a trickle of inserts. Their own route table
        has no route out: the database answers the VPC and reaches nothing."""
        routes = ec2.CfnRouteTable(self, "DatabaseRouteTable", vpc_id=vpc_id).ref
        ids = []
        for index, cidr in enumerate(self.plan.database_subnet_cidrs or ()):
            subnet = ec2.CfnSubnet(
                self, f"DatabaseSubnet{index + 1}", vpc_id=vpc_id, cidr_block=cidr,
                availability_zone=Fn.select(index, Fn.get_azs()), map_public_ip_on_launch=False,
            )
            subnet_id = subnet.ref
            ec2.CfnSubnetRouteTableAssociation(self, f"DatabaseSubnet{index + 1}RouteTableAssociation",
                                               subnet_id=subnet_id, route_table_id=routes)
            ids.append(subnet_id)
        return tuple(ids)

    def _add_flow_logs(self, vpc_id: str) -> None:
        group = logs.CfnLogGroup(self, "FlowLogs", retention_in_days=self.plan.spec.flow_logs_retention_days)
        group.apply_removal_policy(RemovalPolicy.RETAIN)
        # Confused-deputy conditions: only this account's flow logs may assume the role (VPC user guide,
        # "IAM role for publishing flow logs to CloudWatch Logs").
        principal = iam.ServicePrincipal("vpc-flow-logs.amazonaws.com", conditions={
            "StringEquals": {"aws:SourceAccount": AWS.ACCOUNT_ID},
            "ArnLike": {"aws:SourceArn": f"arn:{AWS.PARTITION}:ec2:{AWS.REGION}:{AWS.ACCOUNT_ID}:vpc-flow-log/*"},
        })
        role = iam.Role(self, "FlowLogsRole", assumed_by=principal,
                        description="Lets VPC Flow Logs write to the project's flow-log group")
        logs.LogGroup.from_log_group_arn(self, "FlowLogsRef", group.attr_arn).grant_write(role)
        Validations.of(role).acknowledge(Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::<FlowLogs.Arn>:*]",
            reason="Flow Logs name their own log streams; the wildcard covers only the streams of this one log group.",
        ))
        ec2.CfnFlowLog(
            self, "FlowLog", resource_id=vpc_id, resource_type="VPC", traffic_type="ALL",
            log_destination_type="cloud-watch-logs", log_group_name=group.ref,
            deliver_logs_permission_arn=role.role_arn,
        )

    def _add_security_groups(self, vpc: ec2.IVpc) -> tuple[ec2.SecurityGroup, ...]:
        name = self.plan.project
        efa = ec2.SecurityGroup(
            self, "EfaSecurityGroup", vpc=vpc, allow_all_outbound=False,
            description=f"{name}: EFA, all traffic to and from itself",
        )
        efa.add_ingress_rule(efa, tokens.all_traffic(), "EFA: all traffic from members")
        efa.add_egress_rule(efa, tokens.all_traffic(), "EFA: all traffic to members")

        node = ec2.SecurityGroup(
            self, "NodeSecurityGroup", vpc=vpc, allow_all_outbound=True,
            description=f"{name}: GPU nodes, egress through the NAT gateway",
        )
        storage = ec2.SecurityGroup(
            self, "StorageSecurityGroup", vpc=vpc, allow_all_outbound=True,
            description=f"{name}: FSx for Lustre file servers",
        )
        for low, high in LUSTRE_PORT_RANGES:
            port = tokens.tcp(low, high)
            # EC2 allows only a-zA-Z0-9 ._-:/()#,@[]+=&;{}!$* in rule descriptions.
            ports = f"TCP {low}" if low == high else f"TCP {low}-{high}"
            for peer, who in ((node, "nodes"), (efa, "EFA members"), (storage, "itself")):
                storage.add_ingress_rule(peer, port, f"Lustre {ports} from {who}")
            node.add_ingress_rule(storage, port, f"Lustre {ports} from the file servers")
        return efa, node, storage

    def _add_interface_endpoints(self, vpc: ec2.IVpc, subnet_id: str) -> None:
        group = ec2.SecurityGroup(
            self, "EndpointSecurityGroup", vpc=vpc, allow_all_outbound=False,
            description=f"{self.plan.project}: interface endpoints, HTTPS from the VPC",
        )
        group.add_ingress_rule(ec2.Peer.ipv4(self.plan.vpc_cidr), tokens.tcp(443), "HTTPS from the VPC")
        for service in self.plan.spec.interface_endpoints:
            ec2.CfnVPCEndpoint(
                self, "Endpoint" + "".join(part.capitalize() for part in service.replace("-", ".").split(".")),
                vpc_id=vpc.vpc_id, vpc_endpoint_type="Interface",
                service_name=Fn.sub(f"com.amazonaws.${{AWS::Region}}.{service}"),
                subnet_ids=[subnet_id], security_group_ids=[group.security_group_id], private_dns_enabled=True,
            )

    def _add_outputs(self) -> None:
        what = {"VpcId": "VPC", "ComputeSubnetId": "private compute subnet", "EfaSecurityGroupId": "EFA security group",
                "NodeSecurityGroupId": "node security group", "StorageSecurityGroupId": "FSx security group",
                "ServicesSubnetId": "subnet of FSx, interface endpoints and the head node"}
        for key, field in NETWORK_OUTPUTS.items():
            CfnOutput(self, key, value=getattr(self.contract, field), description=f"The {what[key]}",
                      export_name=export_name(self.plan.project, key))
        if self.plan.database_subnet_cidrs:  # created here; an existing network's are known already
            for key, subnet_id in zip(DATABASE_SUBNET_OUTPUTS, self.contract.database_subnet_ids):
                CfnOutput(self, key, value=subnet_id, description="A subnet of the Slurm accounting database",
                          export_name=export_name(self.plan.project, key))
