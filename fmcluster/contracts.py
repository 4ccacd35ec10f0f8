"""What one stack hands the next: plain dataclasses of strings (CDK tokens at synth time,
real IDs when read back from deployed stacks' outputs). No CDK imports here."""

from __future__ import annotations

from dataclasses import dataclass


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
