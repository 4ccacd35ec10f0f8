"""The SageMaker HyperPod cluster inside ``NAME-cluster`` (``orchestrator.type: hyperpod``).

- a ``sagemaker-``-prefixed bucket the stack owns (retained, encrypted, TLS-only) holding one lifecycle
  bundle per instance group under ``lifecycle/<group>/``, uploaded by a bucket deployment;
- the execution role: AWS's managed cluster-instance policy, the VPC interface permissions HyperPod
  needs in a customer VPC, read of the lifecycle prefix only, ``aps:RemoteWrite`` on the project's workspace;
- ``AWS::SageMaker::Cluster`` with API-driven Slurm (``SlurmConfig`` per group, ``FsxLustreConfig`` from the
  storage contract), the bundles in extended mode (``OnInitComplete``), deep health checks, node recovery and
  training plans. It depends on the role's policy
  and the upload, so creation races neither.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import (
    Acknowledgment,
    CfnOutput,
    CfnTag,
    DefaultStackSynthesizer,
    Fn,
    RemovalPolicy,
    Stack,
    Validations,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct
from fmcluster.stacks.tokens import AWS, block_all_public_access, is_unresolved
from fmcluster.stacks.staging import staged_of
from fmcluster.bootstrap.hyperpod import LifecycleBundles

from fmcluster.contracts import (
    HYPERPOD_CLUSTER_ARN_OUTPUT,
    HYPERPOD_CLUSTER_ID_OUTPUT,
    AccountingContract,
    MetricsContract,
    NetworkContract,
    StorageContract,
)
from fmcluster.facts import PROJECT_TAG
from fmcluster.generate.hyperpod import LIFECYCLE_PREFIX, InstanceGroup, cluster_accounting, instance_groups
from fmcluster.plan import ClusterPlan

MANAGED_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"
"""AWS's managed policy for HyperPod cluster instances (SageMaker developer guide, HyperPod IAM prerequisites)."""

VPC_ACTIONS = ["ec2:CreateNetworkInterface", "ec2:CreateNetworkInterfacePermission", "ec2:DeleteNetworkInterface",
               "ec2:DeleteNetworkInterfacePermission", "ec2:DescribeNetworkInterfaces", "ec2:DescribeVpcs",
               "ec2:DescribeDhcpOptions", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups",
               "ec2:DetachNetworkInterface"]
"""What a HyperPod execution role needs to attach the nodes to a customer VPC (SageMaker developer guide,
"IAM role for SageMaker HyperPod": additional permissions for using HyperPod with Amazon VPC)."""

FSX_MOUNT_NAME_MAX = 8
"""``FsxLustreConfig.MountName`` takes at most 8 characters (cfn-lint schema; FSx makes 8-character names)."""


class HyperPodCluster(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, plan: ClusterPlan, bundles: LifecycleBundles,
                 network: NetworkContract, storage: StorageContract, metrics: MetricsContract | None = None,
                 accounting: AccountingContract | None = None) -> None:
        super().__init__(scope, construct_id)
        self.plan = plan
        stack = Stack.of(self)
        self.groups = self._instance_groups()

        # The stack ID's first UUID block keeps the default name unique per stack and within 63 characters.
        stack_uuid = Fn.select(0, Fn.split("-", Fn.select(2, Fn.split("/", AWS.STACK_ID))))
        self.bucket = s3.Bucket(
            self, "LifecycleBucket",
            bucket_name=self._bucket_name() or Fn.join("-", ["sagemaker", plan.project, stack_uuid]),
            encryption=s3.BucketEncryption.S3_MANAGED, enforce_ssl=True, versioned=True,
            block_public_access=block_all_public_access(),
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED, removal_policy=RemovalPolicy.RETAIN,
        )
        Validations.of(self.bucket).acknowledge(Acknowledgment(
            id="AwsSolutions::AwsSolutions-S1",
            reason="The bucket holds only the lifecycle scripts this stack renders and uploads; every change to them "
                   "is a CloudFormation deployment, recorded there and in CloudTrail.",
        ))
        sources = [s3deploy.Source.asset(str(bundles.root))]
        # Known at deploy time only: a file beside each bundle's entry script. The staged monitoring artefacts are in
        # the asset bucket, not the lifecycle bucket the bundles are copied to (fmcluster.bootstrap.staging).
        deployed = [*([f"FMC_METRICS_REMOTE_WRITE_URL={metrics.remote_write_url}"] if metrics is not None else []),
                    *([f"FMC_ARTEFACTS_BUCKET={staged_of(stack).bucket_name}"] if staged_of(stack).bucket_name else [])]
        if deployed:
            sources += [s3deploy.Source.data(f"{group}/fmcluster.env", "\n".join(deployed) + "\n")
                        for group in bundles.sums]
        self.upload = s3deploy.BucketDeployment(
            self, "LifecycleScripts", sources=sources,
            destination_bucket=self.bucket, destination_key_prefix=f"{LIFECYCLE_PREFIX}/", prune=True,
            retain_on_delete=True,
        )
        self._acknowledge_upload(stack)

        self.accounting = accounting
        self.role, policy = self._add_role(metrics, efa_fsx=storage.fsx is not None and storage.fsx.efa_enabled)
        # No literal name: ClusterName and VpcConfig are create-only (cfn-lint's schema) and CloudFormation refuses to
        # replace a resource whose custom name stays the same ("cannot update a stack when a custom-named resource
        # requires replacing"). The compute subnet's ID in the name makes a new subnet come with a new name.
        self.cluster_name = Fn.join("-", [self._name_prefix(),
                                          Fn.select(1, Fn.split("-", network.compute_subnet_id))])
        self.cluster = self._add_cluster(network, storage, bundles)
        self.cluster.node.add_dependency(policy)
        self.cluster.node.add_dependency(self.upload)
        # `fmcluster hyperpod status` reads the ARN (DescribeCluster takes name or ARN); an output of the name would
        # re-export the network stack's import (cfn-lint W6001).
        CfnOutput(stack, HYPERPOD_CLUSTER_ARN_OUTPUT, value=self.cluster.attr_cluster_arn,
                  description="SageMaker HyperPod cluster")
        # The ID is the ARN's last part (``arn:...:cluster/<id>``, SageMaker API reference, DescribeCluster); a
        # Session Manager target names it: `fmcluster connect` starts a session on the controller or a login node.
        CfnOutput(stack, HYPERPOD_CLUSTER_ID_OUTPUT,
                  value=Fn.select(1, Fn.split("/", self.cluster.attr_cluster_arn)),
                  description="SageMaker HyperPod cluster ID (fmcluster connect: sagemaker-cluster:<id>_<group>-<i>)")
        CfnOutput(stack, "HyperPodLifecycleUri", value=f"s3://{self.bucket.bucket_name}/{LIFECYCLE_PREFIX}/",
                  description="Lifecycle bundles, one prefix per instance group")

    # -- what the EKS-orchestrated cluster (stacks/hyperpod_eks.py) says differently ----------------

    def _instance_groups(self) -> list:
        return instance_groups(self.plan)

    def _bucket_name(self) -> str | None:
        return self.plan.hyperpod.lifecycle_bucket_name

    def _name_prefix(self) -> str:
        return self.plan.hyperpod_name_prefix

    # -- the role --------------------------------------------------------------------------------

    def _add_role(self, metrics: MetricsContract | None, efa_fsx: bool = False) -> tuple[iam.Role, iam.Policy]:
        project = self.plan.project
        role = iam.Role(
            self, "ExecutionRole", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description=f"fmcluster {project}: HyperPod cluster instances",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(MANAGED_POLICY)],
        )
        Validations.of(role).acknowledge(Acknowledgment(
            id=f"AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{MANAGED_POLICY}]",
            reason="HyperPod's own managed policy for cluster instances (CloudWatch logs and metrics of the cluster, "
                   "sagemaker-* lifecycle buckets); AWS maintains it with the service.",
        ))
        statements = [
            iam.PolicyStatement(sid="VpcInterfaces", actions=VPC_ACTIONS, resources=["*"]),
            iam.PolicyStatement(sid="TagVpcInterfaces", actions=["ec2:CreateTags"],
                                resources=[f"arn:{AWS.PARTITION}:ec2:*:*:network-interface/*"]),
            iam.PolicyStatement(sid="ReadLifecycleScripts", actions=["s3:GetObject"],
                                resources=[self.bucket.arn_for_objects(f"{LIFECYCLE_PREFIX}/*")]),
            iam.PolicyStatement(sid="ListLifecycleScripts", actions=["s3:ListBucket"], resources=[self.bucket.bucket_arn],
                                conditions={"StringLike": {"s3:prefix": [f"{LIFECYCLE_PREFIX}/*"]}}),
        ]
        if efa_fsx:
            # An EFA-enabled file system: HyperPod describes it to set up its clients (FACTS.md section 5, from AWS's
            # HyperPod samples); DescribeFileSystems is listed against "*" like the VPC Describe actions above.
            statements.append(iam.PolicyStatement(sid="DescribeEfaFileSystem", actions=["fsx:DescribeFileSystems"],
                                                  resources=["*"]))
        if metrics is not None:
            statements.append(iam.PolicyStatement(sid="RemoteWriteMetrics", actions=["aps:RemoteWrite"],
                                                  resources=[metrics.workspace_arn]))
        if self.accounting is not None:
            # slurmdbd on the controller logs in with the secret's user name and password. Which principal reads the
            # secret the AccountingDatabase documentation does not say (botocore sagemaker ClusterAccountingDatabase:
            # "credentials ... in an AWS Secrets Manager secret instead of in the request"); the instances run as this
            # role, so it may read this one secret (unconfirmed that it is needed; harmless if not).
            statements.append(iam.PolicyStatement(sid="ReadAccountingSecret", actions=["secretsmanager:GetSecretValue"],
                                                  resources=[self.accounting.secret_arn]))
        clusters = f"arn:{AWS.PARTITION}:sagemaker:{AWS.REGION}:{AWS.ACCOUNT_ID}:cluster/*"
        if self.plan.needs_imex:
            # fmcluster-imex finds the node's UltraServer members with HyperPod's node API (UltraServerInfo.Id,
            # PrivatePrimaryIp); EC2 cannot see HyperPod's instances. Not the cluster's own ARN: the cluster
            # depends on this policy, so naming it here would be a circular reference.
            statements.append(iam.PolicyStatement(
                sid="FindUltraServerMembers", actions=["sagemaker:ListClusterNodes", "sagemaker:DescribeClusterNode"],
                resources=[clusters]))
        staged = staged_of(Stack.of(self)).read_arns  # the monitoring artefacts staged at deploy (fmcluster.stacks.staging)
        if staged:
            statements.append(iam.PolicyStatement(sid="ReadStagedArtefacts", actions=["s3:GetObject"],
                                                  resources=list(staged)))
        policy = iam.Policy(self, "ExecutionPolicy", roles=[role], statements=statements)
        bucket = Stack.of(self).get_logical_id(self.bucket.node.default_child)  # type: ignore[arg-type]
        for resource, why in (
            ("*", "the VPC interface actions HyperPod documents for a customer VPC take no resource-level "
                  "permissions (Describe*) or name interfaces that do not exist yet; fsx:DescribeFileSystems "
                  "(EFA-enabled FSx only) is read-only"),
            ("arn:<AWS::Partition>:ec2:*:*:network-interface/*",
             "HyperPod tags the interfaces it creates for the nodes; their IDs are not known before"),
            (f"<{bucket}.Arn>/{LIFECYCLE_PREFIX}/*", "read-only, under this stack's own lifecycle prefix"),
            ("arn:<AWS::Partition>:sagemaker:<AWS::Region>:<AWS::AccountId>:cluster/*",
             "read-only node listing of this account's HyperPod clusters in the Region (IMEX members of an "
             "UltraServer); the cluster's own ARN cannot be named in a policy the cluster depends on"),
        ):
            Validations.of(policy).acknowledge(Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{resource}]", reason=why))
        return role, policy

    def _acknowledge_upload(self, stack: Stack) -> None:
        """cdk-nag on CDK's bucket-deployment function (one per stack, outside this construct)."""
        reasons = {
            "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AWSLambdaBasicExecutionRole]": "CDK's upload function writes only its own logs; AWS's basic execution "
                                            "policy is the minimum for that.",
            "AwsSolutions::AwsSolutions-IAM5[Action::s3:GetBucket*]": "CDK's bucket-deployment grant: read of the "
                                                                      "CDK asset bucket and the lifecycle bucket only.",
            "AwsSolutions::AwsSolutions-IAM5[Action::s3:GetObject*]": "CDK's bucket-deployment grant on the asset "
                                                                      "and lifecycle buckets only.",
            "AwsSolutions::AwsSolutions-IAM5[Action::s3:List*]": "CDK's bucket-deployment grant on the asset and "
                                                                 "lifecycle buckets only.",
            "AwsSolutions::AwsSolutions-IAM5[Action::s3:DeleteObject*]": "prune: the upload removes lifecycle files "
                                                                         "a new rendering no longer has.",
            "AwsSolutions::AwsSolutions-IAM5[Action::s3:Abort*]": "CDK's bucket-deployment grant on the lifecycle "
                                                                  "bucket only (multipart uploads).",
            "AwsSolutions::AwsSolutions-L1": "The runtime of CDK's own bucket-deployment function is chosen by "
                                             "aws-cdk-lib and moves with it.",
        }
        qualifier = stack.node.try_get_context("@aws-cdk/core:bootstrapQualifier") or DefaultStackSynthesizer.DEFAULT_QUALIFIER
        if is_unresolved(stack.region):
            assets = f"arn:<AWS::Partition>:s3:::cdk-{qualifier}-assets-<AWS::AccountId>-<AWS::Region>/*"
        else:
            assets = f"arn:{stack.partition}:s3:::cdk-{qualifier}-assets-<AWS::AccountId>-{stack.region}/*"
        bucket = stack.get_logical_id(self.bucket.node.default_child)  # type: ignore[arg-type]
        reasons[f"AwsSolutions::AwsSolutions-IAM5[Resource::{assets}]"] = (
            "CDK's upload function reads the lifecycle bundle's asset from CDK's own asset bucket.")
        reasons[f"AwsSolutions::AwsSolutions-IAM5[Resource::<{bucket}.Arn>/*]"] = (
            "CDK's upload function writes the lifecycle bundles into this stack's lifecycle bucket.")
        for found in stack.node.find_all():
            if found.node.id.startswith("Custom::CDKBucketDeployment"):
                for rule, reason in reasons.items():
                    Validations.of(found).acknowledge(Acknowledgment(id=rule, reason=reason))
                # CDK writes DependsOn on the function's role beside the GetAtt that already orders them
                # (cfn-lint W3005): keep the GetAtt alone.
                function, role = found.node.default_child, found.node.try_find_child("ServiceRole")
                policy = role.node.try_find_child("DefaultPolicy") if role is not None else None
                if function is not None and policy is not None and policy.node.default_child is not None:
                    function.add_override(  # type: ignore[union-attr]
                        "DependsOn", [stack.get_logical_id(policy.node.default_child)])  # type: ignore[arg-type]

    # -- the cluster -----------------------------------------------------------------------------

    def _add_cluster(self, network: NetworkContract, storage: StorageContract,
                     bundles: LifecycleBundles) -> sagemaker.CfnCluster:
        plan = self.plan
        settings = plan.hyperpod
        security_groups = [network.efa_security_group_id, network.node_security_group_id]
        # In a Local Zone the controller and login nodes go to the services subnet in the parent zone, beside FSx
        # (an instance-group VPC override, the way HyperPod spans zones); the GPU nodes stay in the compute subnet.
        head_vpc = None
        if network.services_subnet_id != network.compute_subnet_id:
            head_vpc = sagemaker.CfnCluster.VpcConfigProperty(
                security_group_ids=security_groups, subnets=[network.services_subnet_id])
        fsx = storage.fsx
        groups = [self._group(g, bundles, fsx, head_vpc if g.node_type != "Compute" else None) for g in self.groups]
        tags = [CfnTag(key=PROJECT_TAG, value=plan.project), *(CfnTag(key=k, value=v) for k, v in plan.tags.items())]
        accounting = cluster_accounting(plan, self.accounting)
        return sagemaker.CfnCluster(
            self, "Cluster",
            cluster_name=self.cluster_name,
            instance_groups=groups,
            # Slurm's strategy and, with an accounting database, Orchestrator.Slurm.AccountingDatabase and
            # NodeProvisioningMode: Continuous (which it requires; generate.hyperpod.cluster_accounting)
            orchestrator=sagemaker.CfnCluster.OrchestratorProperty(
                slurm=sagemaker.CfnCluster.ClusterOrchestratorSlurmConfigProperty(
                    slurm_config_strategy=settings.slurm_config_strategy,
                    accounting_database=self._accounting_database(accounting["Orchestrator"]["Slurm"]))),
            node_provisioning_mode=accounting.get("NodeProvisioningMode"),
            node_recovery=settings.node_recovery,
            vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
                security_group_ids=security_groups, subnets=[network.compute_subnet_id]),
            tags=tags,
        )

    @staticmethod
    def _accounting_database(slurm: dict) -> object | None:
        database = slurm.get("AccountingDatabase")
        if database is None:
            return None
        return sagemaker.CfnCluster.ClusterAccountingDatabaseProperty(
            endpoint=database["Endpoint"], port=database["Port"], secret_arn=database["SecretArn"])

    def _group(self, group: InstanceGroup, bundles: LifecycleBundles, fsx, override_vpc) -> object:
        storage_configs = []
        if group.ebs_volume_gib is not None:
            storage_configs.append(sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                    volume_size_in_gb=group.ebs_volume_gib)))
        if fsx is not None:
            storage_configs.append(sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                fsx_lustre_config=sagemaker.CfnCluster.ClusterFsxLustreConfigProperty(
                    dns_name=fsx.dns_name, mount_name=fsx.mount_name, mount_path=fsx.mount_path)))
        return sagemaker.CfnCluster.ClusterInstanceGroupProperty(
            instance_group_name=group.name,
            instance_type=group.instance_type,
            instance_count=group.count,
            execution_role=self.role.role_arn,
            threads_per_core=group.threads_per_core,
            # Extended mode (OnInitComplete): the bundle runs after HyperPod has set up Slurm, Docker/enroot and the
            # FSx mount; OnCreate (customer managed mode) would leave starting Slurm to the bundle (cfn-lint's
            # AWS::SageMaker::Cluster schema, ClusterLifeCycleConfig; botocore sagemaker ClusterLifeCycleConfig).
            # That HyperPod mounts FsxLustreConfig before OnInitComplete is inferred, not stated by AWS: its own
            # OnInitComplete extensions find /fsx mounted and never mount it (awslabs/awsome-distributed-ai
            # 1.architectures/5.sagemaker-hyperpod/Extensions/run_extensions.sh, add-users/README.md
            # "Filesystem Auto-Detection"); unconfirmed beyond that.
            life_cycle_config=sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
                source_s3_uri=f"s3://{self.bucket.bucket_name}/{group.lifecycle_prefix}",
                on_init_complete=bundles.on_init_complete),
            instance_storage_configs=storage_configs or None,
            on_start_deep_health_checks=list(group.deep_health_checks) or None,
            training_plan_arn=group.training_plan_arn,
            slurm_config=sagemaker.CfnCluster.ClusterSlurmConfigProperty(
                node_type=group.node_type, partition_names=[group.partition] if group.partition else None),
            network_interface=(sagemaker.CfnCluster.ClusterNetworkInterfaceProperty(interface_type=group.interface_type)
                               if group.interface_type else None),
            override_vpc_config=override_vpc,
        )


def build(stack: Any, bundles: LifecycleBundles, metrics: MetricsContract | None) -> None:
    """The HyperPod cluster in ``stack`` (:data:`fmcluster.stacks.cluster.BUILDERS`)."""
    stack.hyperpod = HyperPodCluster(stack, "HyperPod", plan=stack.plan, bundles=bundles, network=stack.network,
                                     storage=stack.storage, metrics=metrics, accounting=stack.accounting)
