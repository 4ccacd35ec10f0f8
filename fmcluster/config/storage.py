"""The ``storage:`` section of a project file: S3 bucket, FSx for Lustre, local NVMe, checkpoints."""

from __future__ import annotations

import re
from typing import Literal, get_args

from pydantic import Field, field_validator, model_validator

from fmcluster.config.base import Int, Model, absolute_directory
from fmcluster.facts import (
    FSX_EFA_STEP_GIB,
    KMS_KEY_ARN,
    fsx_nearest_capacities,
    fsx_valid_capacity,
)

S3_EVENT = Literal["NEW", "CHANGED", "DELETED"]
BUCKET_NAME = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
S3_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/(?P<prefix>([^/]+/)*)$")

Persistent2Throughput = Literal[125, 250, 500, 1000]
"""PERSISTENT_2 MB/s per TiB of storage (FACTS.md section 3)."""
PERSISTENT_2_THROUGHPUT: tuple[int, ...] = get_args(Persistent2Throughput)
DNS_HOST = r"^[a-z0-9][a-z0-9.-]{2,252}$"
"""A DNS name in lowercase, as ``aws fsx describe-file-systems`` prints it (and the node bootstrap accepts)."""
MAX_PLANNED_GIB = 10_000_000
"""fmcluster's own bound on sizes it plans with (about 10 PB, far above FSx's default 100,800 GiB quota):
it keeps the planner's search finite."""


class Bucket(Model):
    """The project's S3 bucket: durable storage for datasets and checkpoints."""

    existing_name: str | None = Field(
        default=None, pattern=BUCKET_NAME, description="Use this existing bucket instead of creating one."
    )
    kms_key_arn: str | None = Field(
        default=None, pattern=KMS_KEY_ARN, description="Encrypt with this KMS key (SSE-KMS). Default: S3-managed keys."
    )
    noncurrent_version_days: int = Field(
        default=30, ge=1, le=3650,
        description="Days an overwritten or deleted object version (an old checkpoint) is kept before S3 expires it.",
    )
    access_log_days: int = Field(
        default=365, ge=1, le=3650, description="Days the server access logs of the bucket are kept.",
    )


class ExistingFileSystem(Model):
    """An FSx for Lustre file system that already exists (mounted, never created or changed)."""

    file_system_id: str = Field(pattern=r"^fs-[0-9a-f]{8,17}$", description="ID of the file system, `fs-...`.")
    dns_name: str = Field(pattern=DNS_HOST, description="Its DNS name, e.g. fs-0123.fsx.us-east-1.amazonaws.com.")
    mount_name: str = Field(pattern=r"^[a-z0-9]{4,16}$", description="Its Lustre mount name (`aws fsx describe-file-systems`).")
    efa_enabled: bool = Field(default=False, description="Whether it was created with EFA.")


class Metadata(Model):
    """Lustre metadata performance (PERSISTENT_2)."""

    mode: Literal["AUTOMATIC", "USER_PROVISIONED"] = Field(default="AUTOMATIC", description="Who sizes metadata IOPS.")
    iops: Int | None = Field(default=None, description="With USER_PROVISIONED: 1500, 3000, 6000, 12000, then multiples of 12000 up to 192000.")

    @model_validator(mode="after")
    def _iops(self) -> Metadata:
        if self.mode == "USER_PROVISIONED":
            if self.iops is None:
                raise ValueError("USER_PROVISIONED metadata needs `iops`")
            if not valid_metadata_iops(self.iops):
                raise ValueError(f"iops {self.iops} is not valid; use 1500, 3000, 6000, 12000 or a multiple of 12000 up to 192000")
        elif self.iops is not None:
            raise ValueError("`iops` is set only with mode: USER_PROVISIONED")
        return self


def valid_metadata_iops(iops: int) -> bool:
    return iops in (1500, 3000, 6000, 12000) or (iops % 12000 == 0 and 12000 <= iops <= 192000)


class Association(Model):
    """A data repository association: a file-system directory linked to an S3 prefix."""

    file_system_path: str = Field(description="Directory in the file system, e.g. `/datasets` (no overlaps).")
    data_repository_path: str | None = Field(
        default=None,
        description="The S3 prefix linked to the directory, `s3://bucket/prefix/`. Default: the project bucket, "
                    "prefix = the file-system path. A dataset already in another bucket: name it here and list "
                    "the bucket in `storage.external_buckets`.",
        examples=["s3://team-datasets/tokenized/"],
    )
    import_events: list[S3_EVENT] = Field(
        default_factory=lambda: ["NEW", "CHANGED", "DELETED"],
        description="S3 changes the file system picks up automatically (`[]`: none after the first import).",
    )
    export_events: list[S3_EVENT] | None = Field(
        default=None,
        description="File-system changes exported to S3 automatically. Default: NEW and CHANGED into the project's "
                    "bucket, nothing into a bucket the project does not own (`external_buckets`). DELETED (a file "
                    "deleted on FSx deletes the S3 object) is exported only when listed here.",
        examples=[["NEW", "CHANGED"]],
    )
    batch_import_on_create: bool = Field(default=True, description="Import the prefix's metadata when the association is made.")
    imported_file_chunk_size_mib: Int = Field(default=1024, ge=1, le=512000, description="Stripe size of imported files, MiB.")

    @field_validator("file_system_path")
    @classmethod
    def _fs_path(cls, value: str) -> str:
        return absolute_directory(value, "/datasets")

    @field_validator("data_repository_path")
    @classmethod
    def _s3_path(cls, value: str | None) -> str | None:
        if value is not None and not S3_URI.match(value):
            raise ValueError(f"{value!r} is not an S3 prefix like s3://bucket/prefix/ (ending with '/')")
        return value

    @field_validator("import_events", "export_events")
    @classmethod
    def _unique(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("events listed more than once")
        return value


class FileSystem(Model):
    """FSx for Lustre: the shared, high-throughput file system."""

    enabled: bool = Field(default=True, description="Create (or mount) an FSx for Lustre file system.")
    existing: ExistingFileSystem | None = Field(default=None, description="Mount this file system instead of creating one.")
    deployment_type: Literal["PERSISTENT_2", "SCRATCH_2"] = Field(
        default="PERSISTENT_2", description="PERSISTENT_2 (durable, data repository associations) or SCRATCH_2."
    )
    storage_capacity_gib: Int | None = Field(
        default=None, le=MAX_PLANNED_GIB, description="1200, 2400, then multiples of 2400 GiB. Default: sized by the checkpoint planner."
    )
    throughput_per_tib: Persistent2Throughput | None = Field(
        default=None, description="PERSISTENT_2 MB/s per TiB. Default: chosen by the checkpoint planner."
    )
    compression: Literal["LZ4", "NONE"] = Field(default="LZ4", description="Data compression.")
    metadata: Metadata | None = Field(default=None, description="Metadata configuration (PERSISTENT_2).")
    efa_enabled: bool = Field(default=False, description="EFA (and GPUDirect Storage) to the file servers; needs PERSISTENT_2 and `metadata`.")
    mount_path: str = Field(default="/fsx", description="Where nodes mount it.")
    max_capacity_gib: Int = Field(
        default=100800, ge=1200, le=MAX_PLANNED_GIB,
        description="Largest file system the planner may propose. 100,800 GiB is the largest that SageMaker "
                    "HyperPod accepts (FSxLustreConfig.SizeInGiB); raise it if your FSx quota allows more.",
    )
    associations: list[Association] = Field(default_factory=list, description="Data repository associations.")
    log_level: Literal["WARN_ERROR", "WARN_ONLY", "ERROR_ONLY", "DISABLED"] = Field(
        default="WARN_ERROR", description="Lustre logging to CloudWatch Logs."
    )

    @field_validator("storage_capacity_gib")
    @classmethod
    def _capacity(cls, value: int | None) -> int | None:
        if value is not None and not fsx_valid_capacity(value):
            low, high = fsx_nearest_capacities(value)
            nearest = f"{low} or {high}" if low else f"{high}"
            raise ValueError(f"{value} GiB is not a valid FSx for Lustre size; the nearest valid sizes are {nearest} GiB")
        return value

    @field_validator("mount_path")
    @classmethod
    def _mount_path(cls, value: str) -> str:
        return absolute_directory(value, "/fsx")

    @model_validator(mode="after")
    def _rules(self) -> FileSystem:
        if self.deployment_type == "SCRATCH_2":
            if self.throughput_per_tib is not None:
                raise ValueError("throughput_per_tib is not allowed with SCRATCH_2 (fixed at 200 MB/s per TiB); "
                                 "remove it or use PERSISTENT_2")
            if self.associations:
                raise ValueError("data repository associations need PERSISTENT_2")
            if self.metadata is not None:
                raise ValueError("a metadata configuration needs PERSISTENT_2")
        if self.efa_enabled and self.deployment_type != "PERSISTENT_2":
            raise ValueError("efa_enabled needs deployment_type PERSISTENT_2")
        # the metadata configuration EFA also needs is the check fsx-efa-metadata's: the orchestrator may refuse an
        # EFA-enabled file system altogether (fsx-efa-orchestrator), which makes the metadata moot
        if self.efa_enabled and self.storage_capacity_gib is not None:
            tiers = [self.throughput_per_tib] if self.throughput_per_tib else sorted(FSX_EFA_STEP_GIB, reverse=True)
            if not any(self.storage_capacity_gib % FSX_EFA_STEP_GIB[t] == 0 for t in tiers):
                steps = ", ".join(f"{FSX_EFA_STEP_GIB[t]:,} GiB at {t}" for t in tiers)
                raise ValueError(f"storage_capacity_gib {self.storage_capacity_gib:,} is not a size FSx accepts for an "
                                 f"EFA-enabled file system: multiples of {steps} MB/s per TiB")
        return self




class Scratch(Model):
    """Local NVMe instance store: RAID 0 across the instance's drives (ephemeral)."""

    enabled: bool = Field(default=True, description="Assemble the instance-store drives into one RAID 0 volume.")
    mount_path: str = Field(default="/scratch", description="Where it is mounted (absolute); container storage goes there too.")

    @field_validator("mount_path")
    @classmethod
    def _mount_path(cls, value: str) -> str:
        return absolute_directory(value, "/scratch")


class Checkpoint(Model):
    """What one checkpoint weighs and how fast it must be written: the planner's inputs."""

    bytes: Int | None = Field(default=None, ge=1, le=10**18, description="Size of one checkpoint in bytes (up to 1 EB).")
    parameters: float | None = Field(default=None, gt=0, le=1e15, description="Model parameters (e.g. 70e9; up to 1e15).")
    bytes_per_parameter: float = Field(
        default=16, gt=0, le=1024,
        description="Bytes of training state per parameter: weights, gradients and optimizer (16 for BF16 + fp32 Adam).",
    )
    target_write_seconds: float = Field(default=60, gt=0, le=86400, description="How long a checkpoint write may take (up to a day).")
    keep: Int = Field(default=2, ge=1, le=100, description="Checkpoints kept on the file system at once.")
    interval_minutes: float | None = Field(
        default=None, gt=0, le=10080,
        description="Minutes between the starts of two checkpoints (up to a week). With it, the plan shows the share "
                    "of wall time spent writing checkpoints (60 s every 30 min = 3.3%) and the FSx size that keeps it "
                    "under 5%.",
    )
    node_failures_per_1000_node_days: float | None = Field(
        default=None, gt=0, le=1000,
        description="Node failures per 1,000 node-days (one node running for one day is one node-day; 1000 = every "
                    "node fails daily), from your own fleet's history. With interval_minutes, the plan adds the time "
                    "spent restoring the last checkpoint and redoing the work lost since it.",
    )

    @model_validator(mode="after")
    def _size(self) -> Checkpoint:
        if (self.bytes is None) == (self.parameters is None):
            raise ValueError("give exactly one of `bytes` or `parameters` (with bytes_per_parameter)")
        if self.node_failures_per_1000_node_days is not None and self.interval_minutes is None:
            raise ValueError("node_failures_per_1000_node_days needs interval_minutes (how often a checkpoint is "
                             "written decides how much work a failure loses)")
        return self

    @property
    def size_bytes(self) -> int:
        return self.bytes if self.bytes is not None else int(self.parameters * self.bytes_per_parameter)  # type: ignore[operator]


class Storage(Model):
    """Shared storage: an S3 bucket, FSx for Lustre, local NVMe scratch."""

    bucket: Bucket = Field(default_factory=Bucket, description="The project's S3 bucket.")
    fsx: FileSystem = Field(default_factory=FileSystem, description="FSx for Lustre.")
    scratch: Scratch = Field(default_factory=Scratch, description="Local NVMe.")
    checkpoint: Checkpoint | None = Field(
        default=None, description="Checkpoint size and target write time (sizes FSx), and how often one is written.")
    external_buckets: list[str] = Field(
        default_factory=list,
        description="Buckets other than the project's that associations may link to (`data_repository_path`): "
                    "an explicit permission, since FSx reads them and, with export events, writes to them. "
                    "Bucket names, not `s3://` URIs.",
        examples=[["team-datasets"]],
    )

    @field_validator("external_buckets")
    @classmethod
    def _buckets(cls, value: list[str]) -> list[str]:
        bad = [b for b in value if not re.match(BUCKET_NAME, b)]
        if bad:
            raise ValueError(f"not bucket names: {', '.join(bad)} (write the name, not s3://...)")
        return value
