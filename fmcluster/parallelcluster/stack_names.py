"""Names shared by the CDK construct, the CLI and the tests (stack outputs, the node policy)."""

from __future__ import annotations

from fmcluster.config import Project

NODE_POLICY_OUTPUT = "ParallelClusterNodePolicyArn"
CLUSTER_NAME_OUTPUT = "ParallelClusterName"
HEAD_NODE_IP_OUTPUT = "HeadNodePrivateIp"
BOOTSTRAP_OUTPUT = "BootstrapEntryUri"
BOOTSTRAP_ARGS_OUTPUT = "BootstrapBundlesUri"
"""The argument of the OnNodeConfigured script: the archive of per-instance-type bundles."""

NETWORK_OUTPUTS = ("VpcId", "ComputeSubnetId", "EfaSecurityGroupId", "NodeSecurityGroupId", "StorageSecurityGroupId")
STORAGE_OUTPUTS = ("BucketName", "BucketArn", "FileSystemId", "FileSystemDnsName", "FileSystemMountName",
                   "FileSystemMountPath", "FileSystemEfaEnabled")


def node_policy_name(project: Project) -> str:
    """The managed policy fmcluster attaches to every cluster node (bootstrap bundle, metrics)."""
    return f"parallelcluster-{project.name}-nodes"
