"""Placeholder IDs for a cluster.yaml written without deployed stacks (offline, in CI, in tests).

Each has the shape ParallelCluster's schema wants (``subnet-`` + 17 hex digits and so on) and is
all zeros, so nobody mistakes it for a real resource; ``--from-stacks`` replaces them all.
"""

from __future__ import annotations

from fmcluster.contracts import (
    COMPUTE_POINTER_ROLE,
    HEAD_POINTER_ROLE,
    AccountingContract,
    BootstrapContract,
    MetricsContract,
    MountContract,
    NetworkContract,
    StorageContract,
    bootstrap_pointer_name,
    node_policy_name,
)
from fmcluster.plan import StoragePlan

ACCOUNT = "000000000000"
REGION = "us-east-1"

NETWORK = NetworkContract(
    vpc_id="vpc-00000000000000000",
    compute_subnet_id="subnet-00000000000000000",
    efa_security_group_id="sg-00000000000000000",
    node_security_group_id="sg-00000000000000001",
    storage_security_group_id="sg-00000000000000002",
    services_subnet_id="subnet-00000000000000000",
)


def storage(plan: StoragePlan) -> StorageContract:
    """A bucket, and a file system when the project has one."""
    fsx = plan.spec.fsx
    return StorageContract(
        bucket_name=f"{plan.project}-data-placeholder",
        bucket_arn=f"arn:aws:s3:::{plan.project}-data-placeholder",
        fsx=MountContract(
            file_system_id="fs-00000000000000000",
            dns_name=f"fs-00000000000000000.fsx.{REGION}.amazonaws.com",
            mount_name="placeholder",
            mount_path=fsx.mount_path,
            efa_enabled=fsx.efa_enabled,
        ) if plan.fsx else None,
        scratch_path=None,
    )


def bootstrap(project: str) -> BootstrapContract:
    """The launcher and the two pointers (an all-zero digest: no bundle was rendered)."""
    def pointer(role: str) -> str:
        return f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter{bootstrap_pointer_name(project, role)}"

    return BootstrapContract(launcher_uri=f"s3://{project}-bootstrap-placeholder/bootstrap/fmcluster-launch.sh",
                             head_pointer_arn=pointer(HEAD_POINTER_ROLE), compute_pointer_arn=pointer(COMPUTE_POINTER_ROLE),
                             head_digest="0" * 64)


def node_policy_arn(project: str) -> str:
    return f"arn:aws:iam::{ACCOUNT}:policy/{node_policy_name(project)}"


def metrics() -> MetricsContract:
    workspace = "ws-00000000-0000-0000-0000-000000000000"
    return MetricsContract(
        workspace_arn=f"arn:aws:aps:{REGION}:{ACCOUNT}:workspace/{workspace}",
        workspace_id=workspace,
        remote_write_url=f"https://aps-workspaces.{REGION}.amazonaws.com/workspaces/{workspace}/api/v1/remote_write",
    )


def accounting(project: str) -> AccountingContract:
    """The accounting database's endpoint, user and secret (``stacks/accounting.py``), all placeholders."""
    return AccountingContract(
        endpoint=f"{project}-accounting-placeholder.cluster-000000000000.{REGION}.rds.amazonaws.com",
        port=3306,
        user_name="slurm_admin",
        secret_arn=f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{project}-accounting-000000",
        client_security_group_id="sg-00000000000000003",
    )
