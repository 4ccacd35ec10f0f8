"""What one stack hands the next: plain dataclasses of strings (CDK tokens at synth time,
real IDs when read back from deployed stacks' outputs), and the stack names and output keys
that carry them between deployments. No CDK imports here.

The output keys are stated here once: the stacks write them, ``fmcluster.aws`` reads them
back (``fmcluster parallelcluster config --from-stacks``, ``fmcluster dashboards push``).
"""

from __future__ import annotations

from dataclasses import dataclass

STACKS = ("network", "storage", "observability", "accounting", "cluster")
"""The stacks of a project, in deployment order; each is named ``<project>-<stack>``."""


def stack_name(project: str, stack: str) -> str:
    """``NAME-network``, ``NAME-storage``, ``NAME-observability``, ``NAME-accounting`` or ``NAME-cluster``."""
    if stack not in STACKS:
        raise ValueError(f"unknown stack {stack!r}; stacks: {', '.join(STACKS)}")
    return f"{project}-{stack}"


NETWORK_OUTPUTS = {
    # output key -> NetworkContract field
    "VpcId": "vpc_id",
    "ComputeSubnetId": "compute_subnet_id",
    "EfaSecurityGroupId": "efa_security_group_id",
    "NodeSecurityGroupId": "node_security_group_id",
    "StorageSecurityGroupId": "storage_security_group_id",
    "ServicesSubnetId": "services_subnet_id",
}
DATABASE_SUBNET_OUTPUTS = ("DatabaseSubnet1Id", "DatabaseSubnet2Id")
"""``NAME-network`` with a Slurm accounting database: its two subnets (``NetworkContract.database_subnet_ids``), in
that order; not written otherwise, so the network stacks of projects without one do not change."""
BUCKET_OUTPUTS = {"BucketName": "bucket_name", "BucketArn": "bucket_arn"}
"""``NAME-storage``: StorageContract fields."""
FILE_SYSTEM_OUTPUTS = {
    # output key -> MountContract field (only when the project has a file system)
    "FileSystemId": "file_system_id",
    "FileSystemDnsName": "dns_name",
    "FileSystemMountName": "mount_name",
    "FileSystemMountPath": "mount_path",
    "FileSystemEfaEnabled": "efa_enabled",
}
ACCOUNTING_USER = "slurm_admin"
"""The accounting database's master user, slurmdbd's login (``stacks/accounting.py``): a constant, not an output."""
ACCOUNTING_OUTPUTS = {
    # output key -> AccountingContract field (``NAME-accounting``; the user name is a constant, not an output)
    "AccountingDatabaseEndpoint": "endpoint",
    "AccountingDatabasePort": "port",
    "AccountingDatabaseSecretArn": "secret_arn",
    "AccountingClientSecurityGroupId": "client_security_group_id",
}
PROMETHEUS_WORKSPACE_OUTPUT = "PrometheusWorkspaceId"
PROMETHEUS_REMOTE_WRITE_OUTPUT = "PrometheusRemoteWriteUrl"
GRAFANA_WORKSPACE_OUTPUT = "GrafanaWorkspaceId"
"""The output of the ``NAME-observability`` stack that holds the Grafana workspace ID."""

HYPERPOD_CLUSTER_ARN_OUTPUT = "HyperPodClusterArn"
"""``NAME-cluster`` of a hyperpod project: the cluster's ARN, which ``fmcluster hyperpod status`` reads (the name is
its prefix and the compute subnet's ID, known only once deployed)."""
HYPERPOD_CLUSTER_ID_OUTPUT = "HyperPodClusterId"
"""``NAME-cluster`` of a hyperpod project: the cluster's ID (the ARN's last part), which a Session Manager target
names (``sagemaker-cluster:<id>_<group>-<instance>``: ``fmcluster connect``)."""
EKS_CLUSTER_NAME_OUTPUT = "EksClusterName"
"""``NAME-cluster`` of a hyperpod-eks project: the EKS cluster's name (``aws eks update-kubeconfig --name``;
``fmcluster status`` reads its add-ons' health)."""
PCS_CLUSTER_ID_OUTPUT = "PcsClusterId"
PCS_CLUSTER_ARN_OUTPUT = "PcsClusterArn"
"""``NAME-cluster`` of a pcs project: the AWS PCS cluster's ID and ARN (``aws pcs get-cluster`` takes the ID)."""
PCS_LOGIN_GROUP_ID_OUTPUT = "PcsLoginNodeGroupId"
"""``NAME-cluster`` of a pcs project with login nodes: the login node group's ID, the value of the
``aws:pcs:compute-node-group-id`` tag on its instances (``fmcluster connect``)."""
NODE_POLICY_OUTPUT = "ParallelClusterNodePolicyArn"
CLUSTER_NAME_OUTPUT = "ParallelClusterName"
"""``NAME-cluster`` of a parallelcluster project: the cluster's name, also the name of the stack ParallelCluster
makes and the ``parallelcluster:cluster-name`` tag of its instances (``fmcluster status``, ``connect``)."""
HEAD_NODE_IP_OUTPUT = "HeadNodePrivateIp"
BOOTSTRAP_OUTPUT = "BootstrapEntryUri"
"""The launcher, every ParallelCluster node's custom action (its content never changes, nor its URL)."""
BOOTSTRAP_ARGS_OUTPUT = "BootstrapBundlesUri"
"""The archive of per-instance-type bundles the pointers' dispatchers fetch (for a person to read; no action names
it)."""
BOOTSTRAP_POINTER_OUTPUTS = {
    # output key -> BootstrapContract field
    "BootstrapHeadPointerArn": "head_pointer_arn",
    "BootstrapComputePointerArn": "compute_pointer_arn",
    "BootstrapHeadDigest": "head_digest",
}


HEAD_POINTER_ROLE, COMPUTE_POINTER_ROLE = "head-node", "compute"
"""ParallelCluster's node roles with a bootstrap pointer each: the head node; every queue's compute nodes."""


def bootstrap_pointer_name(project: str, role: str) -> str:
    """The SSM parameter naming what a ParallelCluster node role (``head-node``, ``compute``) runs at boot."""
    return f"/fmcluster/{project}/bootstrap/{role}"


def export_name(project: str, output_key: str) -> str:
    """The CloudFormation export of an output (``<project>-<key>``)."""
    return f"{project}-{output_key}"


def node_policy_name(project: str) -> str:
    """The managed policy fmcluster attaches to every ParallelCluster node (bootstrap bundle, metrics)."""
    return f"parallelcluster-{project}-nodes"


@dataclass(frozen=True)
class NetworkContract:
    """From ``NAME-network``."""

    vpc_id: str
    compute_subnet_id: str
    efa_security_group_id: str
    """All traffic in and out to itself: EFA OS-bypass between the nodes (and EFA-enabled FSx)."""
    node_security_group_id: str
    """The nodes' own group: egress to the world through the NAT gateway, Lustre from the storage group."""
    storage_security_group_id: str
    """For FSx for Lustre: Lustre ports from the nodes and from itself."""
    services_subnet_id: str
    """Where FSx, interface endpoints and a head node go: the compute subnet in a regular zone, a private
    subnet in the parent Availability Zone when the compute subnet is in a Local Zone."""
    database_subnet_ids: tuple[str, ...] = ()
    """The Slurm accounting database's subnets, in two Availability Zones (RDS needs two); empty without one."""


@dataclass(frozen=True)
class MountContract:
    """From ``NAME-storage``: everything a scheduler needs to mount the project's file system.

    The same shape whether fmcluster created the file system or imported an existing one,
    so any orchestrator can mount any file system.
    """

    file_system_id: str
    dns_name: str
    mount_name: str
    mount_path: str
    efa_enabled: bool


@dataclass(frozen=True)
class StorageContract:
    """From ``NAME-storage``."""

    bucket_name: str
    bucket_arn: str
    fsx: MountContract | None
    """None when the project has no FSx for Lustre."""
    scratch_path: str | None
    """Where the instance-store NVMe RAID 0 is mounted on each node, or None."""


@dataclass(frozen=True)
class MetricsContract:
    """From ``NAME-observability``: where the cluster's collector sends metrics."""

    workspace_arn: str
    workspace_id: str
    remote_write_url: str


@dataclass(frozen=True)
class AccountingContract:
    """From the accounting database (``stacks/accounting.py``): what a Slurm orchestrator needs to reach it.

    ``secret_arn`` holds the password alone (``password_secret``, ParallelCluster's ``PasswordSecretArn``: the
    cookbook's ``update_slurm_database_password.sh`` writes the whole SecretString as slurmdbd's StoragePass) or a
    JSON ``{"username", "password"}`` (``credentials_secret``, HyperPod's ``AccountingDatabase.SecretArn``: "the
    user name and password for the accounting database", botocore sagemaker ``ClusterAccountingDatabase``)."""

    endpoint: str
    port: int
    user_name: str
    secret_arn: str
    client_security_group_id: str
    """Put this group on slurmdbd's host (the head node or controller): the database admits it alone."""


@dataclass(frozen=True)
class BootstrapContract:
    """From ``NAME-cluster`` (ParallelCluster): the custom actions' launcher and what it reads.

    Each node role has a pointer (an SSM parameter, :func:`bootstrap_pointer_name`) that every deploy rewrites with
    the S3 URL and sha256 of the role's current dispatcher and its arguments; the launcher and the pointers' ARNs,
    all ParallelCluster's configuration names, never change. ``head_digest`` is the sha256 the head node's pointer
    names: the head node's OnNodeUpdated carries it, so a new head-node bundle is a change ParallelCluster applies
    (SUPPORTED) by running the launcher there again."""

    launcher_uri: str
    head_pointer_arn: str
    compute_pointer_arn: str
    head_digest: str
