"""The EKS cluster and the SageMaker HyperPod cluster on it, inside ``NAME-cluster`` (``orchestrator.type:
hyperpod-eks``).

Why in ``NAME-cluster`` and not a stack of its own: the EKS control plane holds no state of the project's (jobs'
data is on FSx, metrics in Prometheus; both in their own stacks), it exists only for the HyperPod cluster, and
HyperPod's ``Orchestrator.Eks.ClusterArn`` is create-only: the two are created, replaced and deleted together, which
is what one stack does in one change set. A stack of its own would add a cross-stack export the HyperPod cluster
pins (CloudFormation refuses to change an export in use) for no lifecycle it does not already share.

In creation order (``tests/kubernetes/test_readiness.py`` replays it against a model of when things become ready;
``tests/stacks/test_hyperpod_eks.py`` reads it from the template):

1. the control plane's two /28 subnets in two zones chosen by zone ID (own route table, no route out), its security
   group, its role, ``AWS::EKS::Cluster`` (API authentication, the pinned version, the endpoint the project chose,
   every control-plane log type);
2. access entries: the project's admins and the deploy-time kubectl handler (cluster admin);
3. the add-ons that need no node (DaemonSets: vpc-cni, kube-proxy, eks-pod-identity-agent), side by side;
4. the HyperPod Helm chart (:mod:`fmcluster.generate.hyperpod_chart`) through CDK's kubectl provider in the VPC,
   installed without waiting for its pods: no node exists yet;
5. ``AWS::SageMaker::Cluster`` with ``Orchestrator.Eks`` (HyperPod Slurm's bucket, role, naming and instance-group
   rules: :class:`fmcluster.stacks.hyperpod.HyperPodCluster`), a system group and a group per compute group with
   ``KubernetesConfig`` labels and taints, lifecycle scripts in EKS mode (``OnCreate``): the nodes;
6. the add-ons whose pods need a node (:data:`fmcluster.generate.hyperpod_eks.NODE_ADDONS`: CoreDNS, FSx CSI,
   cert-manager then the training operator, observability, task governance), side by side; pod identity for the
   training operator; then the cluster's ``ClusterSchedulerConfig`` and a ``ComputeQuota`` per team, and FSx's
   static volumes.
"""

from __future__ import annotations

import hashlib
from typing import Any

from aws_cdk import (
    Acknowledgment,
    CfnMapping,
    CfnOutput,
    CfnResource,
    CfnTag,
    Duration,
    Fn,
    Stack,
    Validations,
)
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_eks_v2 as eks2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk.lambda_layer_kubectl_v35 import KubectlV35Layer
from constructs import Construct

from fmcluster.bootstrap.bundles import LifecycleBundles
from fmcluster.contracts import EKS_CLUSTER_NAME_OUTPUT, MetricsContract, NetworkContract, StorageContract
from fmcluster.facts import PROJECT_TAG
from fmcluster.generate import hyperpod_chart as chart
from fmcluster.generate.hyperpod_eks import (
    ADDON_NEEDS,
    NODE_ADDONS,
    TASK_GOVERNANCE,
    TRAINING_OPERATOR,
    EksInstanceGroup,
    addons,
    instance_groups,
)
from fmcluster.kubernetes.governance import compute_quota_properties, scheduler_config_properties, team_namespace
from fmcluster.kubernetes.volumes import fsx_volumes
from fmcluster.stacks.hyperpod import HyperPodCluster
from fmcluster.stacks.kubectl import acknowledge_kubectl, depend_on_policies_only
from fmcluster.stacks.tokens import AWS

LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
"""Every control-plane log type (cfn-lint's ``AWS::EKS::Cluster`` schema, ``LoggingTypeConfig.Type``)."""
ADMIN_POLICY = "arn:{partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
"""EKS's access policy for cluster admins (EKS user guide, "Associate access policies with access entries")."""
CLUSTER_POLICY = "AmazonEKSClusterPolicy"
HTTPS = 443
PV_CAPACITY_GIB = 1200
"""The static PVs' ``capacity``: Kubernetes requires one, nothing enforces it for an existing FSx file system (the
FSx CSI driver's static provisioning example); FSx for Lustre's smallest size."""

EKS_NODE_ACTIONS = ["ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses", "ec2:AttachNetworkInterface",
                    "ec2:DescribeInstances", "ec2:DescribeInstanceTypes", "ec2:DescribeTags",
                    "ec2:ModifyNetworkInterfaceAttribute", "ecr:GetAuthorizationToken",
                    "ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer",
                    "eks-auth:AssumeRoleForPodIdentity"]
"""What HyperPod's nodes do on EKS besides Slurm's: the VPC CNI's address management and the pods' image pulls run
as the node's role (SageMaker developer guide, "IAM role for SageMaker HyperPod", the EKS additions; the VPC CNI's
AmazonEKS_CNI_Policy actions), and the pod identity agent's AssumeRoleForPodIdentity."""

TRAINING_OPERATOR_SERVICE_ACCOUNT = ("aws-hyperpod", "hp-training-operator-controller-manager")
"""The training operator's pod identity (FACTS.md section 5b)."""


def _id(text: str) -> str:
    """A logical-ID suffix from a user-given string (an ARN): stable, never a list position."""
    return hashlib.sha256(text.encode()).hexdigest()[:8].upper()


class HyperPodEksCluster(HyperPodCluster):
    """The EKS control plane, its add-ons and chart, and the HyperPod cluster it orchestrates."""

    def _instance_groups(self) -> list:
        return instance_groups(self.plan)

    def _bucket_name(self) -> str | None:
        return self.plan.hyperpod_eks.lifecycle_bucket_name

    def _name_prefix(self) -> str:
        return self.plan.eks_name_prefix

    def _add_cluster(self, network: NetworkContract, storage: StorageContract,  # type: ignore[override]
                     bundles: LifecycleBundles) -> sagemaker.CfnCluster:
        plan = self.plan
        settings = plan.hyperpod_eks
        stack = Stack.of(self)
        self.tags = [CfnTag(key=PROJECT_TAG, value=plan.project),
                     *(CfnTag(key=k, value=v) for k, v in plan.tags.items())]
        self.eks = self._add_control_plane(network)
        handler_role = iam.Role(self, "KubectlHandlerRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                                description=f"fmcluster {plan.project}: installs the HyperPod Helm chart")
        self.access_entries = [self._access_entry(f"Admin{_id(arn)}", arn) for arn in settings.admins]
        handler_entry = self._access_entry("KubectlHandler", handler_role.role_arn)
        self.access_entries.append(handler_entry)
        wanted = addons(plan)
        early = self._add_addons({n: v for n, v in wanted.items() if n not in NODE_ADDONS})
        self.chart = self._add_chart(network, handler_role)
        for dependency in [*early.values(), handler_entry]:
            self.chart.node.add_dependency(dependency)

        self.role.add_to_policy(iam.PolicyStatement(sid="EksNodes", actions=EKS_NODE_ACTIONS, resources=["*"]))
        Validations.of(self.role).acknowledge(Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            reason="The VPC CNI's address actions and ECR's GetAuthorizationToken take no resource-level permissions "
                   "(EC2 and ECR service authorization references); image reads are by the pods' own registries."))
        groups = [self._eks_group(g, bundles) for g in self.groups]
        security_groups = [network.efa_security_group_id, network.node_security_group_id]
        cluster = sagemaker.CfnCluster(
            self, "Cluster", cluster_name=self.cluster_name, instance_groups=groups,
            orchestrator=sagemaker.CfnCluster.OrchestratorProperty(
                eks=sagemaker.CfnCluster.ClusterOrchestratorEksConfigProperty(cluster_arn=self.eks.attr_arn)),
            node_recovery=settings.node_recovery,
            vpc_config=sagemaker.CfnCluster.VpcConfigProperty(security_group_ids=security_groups,
                                                              subnets=[network.compute_subnet_id]),
            tags=self.tags)
        cluster.node.add_dependency(self.chart)
        for addon in early.values():
            cluster.node.add_dependency(addon)
        # the add-ons whose pods need a node: after the HyperPod cluster brings the nodes, side by side
        self.addons = {**early, **self._add_addons({n: v for n, v in wanted.items() if n in NODE_ADDONS},
                                                   after=cluster)}
        quotas: list[CfnResource] = self._add_task_governance(cluster) if settings.task_governance else []
        if storage.fsx is not None:
            self._add_fsx_volumes(storage, quotas)
        depend_on_policies_only(self.kubectl_provider)  # last: every policy the functions' roles got is there
        CfnOutput(stack, EKS_CLUSTER_NAME_OUTPUT, value=self.eks.ref,
                  description="EKS cluster (aws eks update-kubeconfig)")
        CfnOutput(stack, "EksClusterArn", value=self.eks.attr_arn, description="EKS cluster orchestrating HyperPod")
        return cluster

    # -- 1. the control plane ---------------------------------------------------------------------------------

    def _add_control_plane(self, network: NetworkContract) -> eks.CfnCluster:
        plan = self.plan
        settings = plan.hyperpod_eks
        cidrs = plan.control_plane_subnet_cidrs
        if not cidrs:
            raise ValueError("the EKS control plane needs two /28 subnets (check hyperpod-eks-network)")
        routes = ec2.CfnRouteTable(self, "ControlPlaneRouteTable", vpc_id=network.vpc_id).ref
        subnets = []
        for index, (cidr, zone) in enumerate(zip(cidrs, plan.control_plane_zone_ids, strict=True)):
            # by zone ID, never a zone name's position (Fn::GetAZs): EKS refuses some zones (FACTS.md 5b.x)
            subnet = ec2.CfnSubnet(self, f"ControlPlaneSubnet{index + 1}", vpc_id=network.vpc_id, cidr_block=cidr,
                                   availability_zone_id=zone, map_public_ip_on_launch=False)
            ec2.CfnSubnetRouteTableAssociation(self, f"ControlPlaneSubnet{index + 1}RouteTableAssociation",
                                               subnet_id=subnet.ref, route_table_id=routes)
            subnets.append(subnet.ref)
        self.control_plane_group = ec2.CfnSecurityGroup(
            self, "ControlPlaneSecurityGroup", vpc_id=network.vpc_id,
            group_description="EKS control plane: the Kubernetes API from the nodes and the kubectl handler",
            security_group_egress=[ec2.CfnSecurityGroup.EgressProperty(
                ip_protocol="-1", destination_security_group_id=network.node_security_group_id,
                description="kubelet, webhooks and metrics on the HyperPod nodes")])
        ec2.CfnSecurityGroupIngress(self, "ApiFromNodes", group_id=self.control_plane_group.attr_group_id,
                                    ip_protocol="tcp", from_port=HTTPS, to_port=HTTPS,
                                    source_security_group_id=network.node_security_group_id,
                                    description="Kubernetes API from the HyperPod nodes")
        ec2.CfnSecurityGroupIngress(self, "NodesFromControlPlane", group_id=network.node_security_group_id,
                                    ip_protocol="-1", source_security_group_id=self.control_plane_group.attr_group_id,
                                    description="The EKS control plane to the kubelets and webhooks")
        role = iam.Role(self, "ControlPlaneRole", assumed_by=iam.ServicePrincipal("eks.amazonaws.com"),
                        description=f"fmcluster {plan.project}: EKS control plane",
                        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(CLUSTER_POLICY)])
        Validations.of(role).acknowledge(Acknowledgment(
            id=f"AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{CLUSTER_POLICY}]",
            reason="EKS's own managed policy for a cluster's service role (EKS user guide, 'Amazon EKS cluster IAM "
                   "role'); AWS maintains it with the service."))
        cluster = eks.CfnCluster(
            self, "EksCluster", version=settings.kubernetes_version, role_arn=role.role_arn,
            resources_vpc_config=eks.CfnCluster.ResourcesVpcConfigProperty(
                subnet_ids=subnets, security_group_ids=[self.control_plane_group.attr_group_id],
                endpoint_private_access=True, endpoint_public_access=settings.public_endpoint,
                public_access_cidrs=list(settings.public_access_cidrs) or None),
            # STANDARD: EKS upgrades the control plane when the version leaves standard support instead of billing
            # extended support (EKS user guide, "Cluster upgrade policy"); EXTENDED: the project chose to pay for it
            upgrade_policy=eks.CfnCluster.UpgradePolicyProperty(support_type=settings.upgrade_policy),
            access_config=eks.CfnCluster.AccessConfigProperty(authentication_mode="API",
                                                              bootstrap_cluster_creator_admin_permissions=False),
            logging=eks.CfnCluster.LoggingProperty(cluster_logging=eks.CfnCluster.ClusterLoggingProperty(
                enabled_types=[eks.CfnCluster.LoggingTypeConfigProperty(type=t) for t in LOG_TYPES])),
            tags=self.tags)
        if settings.public_endpoint:
            Validations.of(cluster).acknowledge(Acknowledgment(
                id="AwsSolutions::AwsSolutions-EKS1",
                reason="The project asks for a public Kubernetes API endpoint (orchestrator.hyperpod_eks."
                       "public_endpoint), open to its public_access_cidrs only; IAM still authenticates every "
                       "request."))
        return cluster

    def _access_entry(self, construct_id: str, principal_arn: str) -> eks.CfnAccessEntry:
        entry = eks.CfnAccessEntry(
            self, construct_id, cluster_name=self.eks.ref, principal_arn=principal_arn, type="STANDARD",
            access_policies=[eks.CfnAccessEntry.AccessPolicyProperty(
                policy_arn=ADMIN_POLICY.format(partition=AWS.PARTITION),
                access_scope=eks.CfnAccessEntry.AccessScopeProperty(type="cluster"))],
            tags=self.tags)
        return entry

    # -- 3. add-ons -------------------------------------------------------------------------------------------

    def _add_addons(self, wanted: dict[str, str], after: Construct | None = None) -> dict[str, eks.CfnAddon]:
        """The add-ons in ``wanted``, each after the access entries and ``after``, and after the add-ons it needs
        (:data:`fmcluster.generate.hyperpod_eks.ADDON_NEEDS`) only: side by side otherwise."""
        out: dict[str, eks.CfnAddon] = {}
        for name, version in wanted.items():
            identities = None
            if name == TRAINING_OPERATOR:
                identities = [self._pod_identity(name, *TRAINING_OPERATOR_SERVICE_ACCOUNT, cluster=after)]
            addon = eks.CfnAddon(self, f"Addon{''.join(p.title() for p in name.split('-'))}", addon_name=name,
                                 cluster_name=self.eks.ref, addon_version=version, resolve_conflicts="OVERWRITE",
                                 pod_identity_associations=identities, tags=self.tags)
            for entry in self.access_entries:
                addon.node.add_dependency(entry)
            if after is not None:
                addon.node.add_dependency(after)
            for needed in ADDON_NEEDS.get(name, ()):
                addon.node.add_dependency(out[needed])
            out[name] = addon
        return out

    def _pod_identity(self, name: str, namespace: str, service_account: str, cluster: Any) -> Any:
        role = iam.Role(self, f"{''.join(p.title() for p in name.split('-'))}Role",
                        assumed_by=iam.ServicePrincipal("pods.eks.amazonaws.com"),
                        description=f"fmcluster {self.plan.project}: {name} (pod identity)")
        role.assume_role_policy.add_statements(iam.PolicyStatement(  # type: ignore[union-attr]
            actions=["sts:TagSession"], principals=[iam.ServicePrincipal("pods.eks.amazonaws.com")]))
        role.add_to_policy(iam.PolicyStatement(
            sid="DescribeHyperPod", actions=["sagemaker:DescribeClusterNode", "sagemaker:ListClusterNodes",
                                             "sagemaker:DescribeCluster"],
            resources=[cluster.attr_cluster_arn]))  # the add-on comes after the HyperPod cluster: its ARN is known
        return eks.CfnAddon.PodIdentityAssociationProperty(role_arn=role.role_arn, service_account=service_account)

    # -- 4. the chart -----------------------------------------------------------------------------------------

    def _add_chart(self, network: NetworkContract, handler_role: iam.Role) -> Construct:
        folder, real = chart.chart_dir()
        # the EKS image account of the Region the stack deploys to (a Region not in the table fails the template's
        # validation, before anything is created)
        accounts = CfnMapping(self, "EksImageAccounts", mapping={
            region: {"Account": chart.eks_image_account(region)} for region in chart.EKS_IMAGE_REGIONS})
        account = accounts.find_in_map(AWS.REGION, "Account")
        handler_group = ec2.CfnSecurityGroup(
            self, "KubectlHandlerSecurityGroup", vpc_id=network.vpc_id,
            group_description="The kubectl handler: the Kubernetes API, and S3 and EKS through the NAT gateway",
            security_group_egress=[ec2.CfnSecurityGroup.EgressProperty(
                ip_protocol="tcp", from_port=HTTPS, to_port=HTTPS, cidr_ip="0.0.0.0/0",
                description="HTTPS: the Kubernetes API, S3 (the chart asset) and EKS")])
        ec2.CfnSecurityGroupIngress(self, "ApiFromKubectlHandler", group_id=self.control_plane_group.attr_group_id,
                                    ip_protocol="tcp", from_port=HTTPS, to_port=HTTPS,
                                    source_security_group_id=handler_group.attr_group_id,
                                    description="Kubernetes API from the kubectl handler")
        vpc = ec2.Vpc.from_vpc_attributes(self, "Vpc", vpc_id=network.vpc_id, availability_zones=["placeholder"])
        subnet = ec2.Subnet.from_subnet_attributes(self, "ComputeSubnet", subnet_id=network.compute_subnet_id)
        group = ec2.SecurityGroup.from_security_group_id(self, "KubectlGroup", handler_group.attr_group_id)
        # CDK's kubectl provider on the L1 cluster: the provider takes a cluster, the chart a cluster that has it
        bare = eks2.Cluster.from_cluster_attributes(self, "EksBare", cluster_name=self.eks.ref, vpc=vpc)
        provider = eks2.KubectlProvider(self, "Kubectl", cluster=bare,
                                        kubectl_layer=KubectlV35Layer(self, "KubectlLayer"),
                                        private_subnets=[subnet], security_groups=[group], role=handler_role)
        imported = eks2.Cluster.from_cluster_attributes(self, "EksRef", cluster_name=self.eks.ref, vpc=vpc,
                                                        kubectl_provider=provider)
        Validations.of(subnet).acknowledge(Acknowledgment(
            id="Annotation::@aws-cdk/aws-ec2:noSubnetRouteTableId",
            reason="The compute subnet is imported by ID only to place CDK's kubectl handler in it; nothing reads its "
                   "route table."))
        acknowledge_kubectl(self, handler_role, provider)
        self.kubectl_provider = provider
        asset = s3_assets.Asset(self, "HyperPodChartAsset", path=str(folder))
        self.kubectl_cluster = imported
        # no wait: the chart's Deployments need nodes, which come only with the HyperPod cluster created after it
        # (AWS's Terraform for HyperPod EKS installs it with `wait = false`; FACTS.md 5b.x); `fmcluster status`
        # reports the add-ons' health once the nodes are there
        helm = eks2.HelmChart(
            self, "HyperPodChart", cluster=imported, chart_asset=asset, release=chart.RELEASE,
            namespace=chart.NAMESPACE, values=chart.chart_values(self.plan, AWS.REGION, account), wait=False,
            timeout=Duration.minutes(15))
        for child in helm.node.find_all():  # which chart the template installs: preflight refuses the stub
            if isinstance(child, CfnResource) and child.cfn_resource_type.startswith("Custom::"):
                child.add_metadata("fmcluster:chart", chart.CHART_COMMIT if real else "stub")
        return helm

    # -- 5. instance groups -----------------------------------------------------------------------------------

    def _eks_group(self, group: EksInstanceGroup, bundles: LifecycleBundles) -> object:
        storage_configs = None
        if group.ebs_volume_gib is not None:
            storage_configs = [sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                    volume_size_in_gb=group.ebs_volume_gib))]
        return sagemaker.CfnCluster.ClusterInstanceGroupProperty(
            instance_group_name=group.name, instance_type=group.instance_type, instance_count=group.count,
            execution_role=self.role.role_arn, threads_per_core=group.threads_per_core,
            # EKS mode: HyperPod runs the group's OnCreate script (AWS's HyperPod EKS samples, on_create.sh);
            # OnInitComplete is the Slurm path's extended mode
            life_cycle_config=sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
                source_s3_uri=f"s3://{self.bucket.bucket_name}/{group.lifecycle_prefix}",
                on_create=bundles.on_init_complete),
            instance_storage_configs=storage_configs,
            on_start_deep_health_checks=list(group.deep_health_checks) or None,
            training_plan_arn=group.training_plan_arn,
            kubernetes_config=sagemaker.CfnCluster.ClusterKubernetesConfigProperty(
                labels=group.labels or None,
                taints=[sagemaker.CfnCluster.ClusterKubernetesTaintProperty(key=t.key, value=t.value, effect=t.effect)
                        for t in group.taints] or None) if (group.labels or group.taints) else None,
            network_interface=(sagemaker.CfnCluster.ClusterNetworkInterfaceProperty(interface_type=group.interface_type)
                               if group.interface_type else None))

    # -- 6. task governance -----------------------------------------------------------------------------------

    def _add_fsx_volumes(self, storage: StorageContract, quotas: list[CfnResource]) -> None:
        """The project's retained file system as a static PV and claim in ``default`` and each team's namespace
        (:func:`fmcluster.kubernetes.volumes.fsx_volumes`); after the FSx CSI add-on, and after the quotas, whose
        namespaces task governance creates."""
        fsx = storage.fsx
        assert fsx is not None
        namespaces = ["default", *(team_namespace(t.name) for t in self.plan.teams)] if quotas else ["default"]
        manifest = eks2.KubernetesManifest(
            self, "FsxVolumes", cluster=self.kubectl_cluster, overwrite=True,
            manifest=fsx_volumes(self.plan.project, namespaces, fsx.file_system_id, fsx.dns_name, fsx.mount_name,
                                 PV_CAPACITY_GIB))
        manifest.node.add_dependency(self.addons["aws-fsx-csi-driver"])
        for quota in quotas:
            manifest.node.add_dependency(quota)

    def _add_task_governance(self, cluster: sagemaker.CfnCluster) -> list[CfnResource]:
        plan = self.plan
        governance = self.addons[TASK_GOVERNANCE]  # after the HyperPod cluster: Kueue's pods need nodes
        tags = {PROJECT_TAG: plan.project, **plan.tags}
        # Name and ClusterArn are create-only (cfn-lint's schemas): a name of the cluster's own ID changes with the
        # cluster, so a replaced HyperPod cluster brings new quotas instead of wedging on the same name
        cluster_id = Fn.select(1, Fn.split("/", cluster.attr_cluster_arn))
        scheduler = CfnResource(self, "SchedulerConfig", type="AWS::SageMaker::ClusterSchedulerConfig",
                                properties=scheduler_config_properties(Fn.join("-", ["teams", cluster_id]),
                                                                       cluster.attr_cluster_arn, tags=tags))
        scheduler.node.add_dependency(governance)
        types = {g.name: g.instance_type for g in plan.groups}
        quotas = []
        for team in plan.teams:
            quota = CfnResource(self, f"Quota{''.join(p.title() for p in team.name.split('-'))}",
                                type="AWS::SageMaker::ComputeQuota",
                                properties=compute_quota_properties(team, types, Fn.join("-", [team.name, cluster_id]),
                                                                    cluster.attr_cluster_arn, tags=tags))
            quota.node.add_dependency(scheduler)
            quota.node.add_dependency(governance)
            quotas.append(quota)
        return quotas


def build(stack: Any, bundles: LifecycleBundles, metrics: MetricsContract | None) -> None:
    """The EKS and HyperPod clusters in ``stack`` (:data:`fmcluster.stacks.cluster.BUILDERS`)."""
    stack.hyperpod = HyperPodEksCluster(stack, "HyperPod", plan=stack.plan, bundles=bundles, network=stack.network,
                                        storage=stack.storage, metrics=metrics)
