"""Storage that exists already: when no storage stack is needed, and the contract read from the file."""

from __future__ import annotations

from fmcluster.config import Project
from fmcluster.contracts import MountContract, StorageContract


def creates_resources(project: Project) -> bool:
    """Whether the project needs a storage stack at all (not when bucket and file system both exist)."""
    spec = project.storage
    return spec.bucket.existing_name is None or (spec.fsx.enabled and spec.fsx.existing is None)


def imported_contract(project: Project) -> StorageContract:
    """The contract of storage that exists already: read from the project file, nothing to create."""
    spec = project.storage
    assert spec.bucket.existing_name is not None
    existing = spec.fsx.existing
    mount = None
    if spec.fsx.enabled and existing is not None:
        mount = MountContract(existing.file_system_id, existing.dns_name, existing.mount_name, spec.fsx.mount_path,
                              existing.efa_enabled)
    return StorageContract(
        bucket_name=spec.bucket.existing_name,
        bucket_arn=f"arn:aws:s3:::{spec.bucket.existing_name}",
        fsx=mount,
        scratch_path=spec.scratch.mount_path if spec.scratch.enabled else None,
    )
