"""``NAME-storage``: the project bucket, FSx for Lustre and its data repository associations.

Everything stateful here is retained when the stack is deleted, and its logical ID comes
from a user-given name (a bucket role, an association's file-system path), never a list
position, so reordering the project file never replaces data. ``fmcluster plan --against``
refuses changes that would replace any of it.
"""

from __future__ import annotations

import hashlib
import re

from aws_cdk import (
    Acknowledgment,
    CfnOutput,
    RemovalPolicy,
    Stack,
    Validations,
)
from aws_cdk import (
    aws_fsx as fsx,
)
from aws_cdk import (
    aws_kms as kms,
)
from aws_cdk import (
    aws_logs as logs,
)
from aws_cdk import (
    aws_s3 as s3,
)
from constructs import Construct
from fmcluster.stacks.tokens import block_all_public_access, days

from fmcluster.contracts import (
    BUCKET_OUTPUTS,
    FILE_SYSTEM_OUTPUTS,
    MountContract,
    NetworkContract,
    StorageContract,
    export_name,
)
from fmcluster.plan import StoragePlan
from fmcluster.plan.associations import AssociationPlan, plan_associations

LOG_RETENTION_DAYS = 365


def association_id(file_system_path: str) -> str:
    """A logical ID from the association's path: readable, and unique even after sanitising."""
    readable = "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", file_system_path) if part)[:40]
    digest = hashlib.sha256(file_system_path.encode()).hexdigest()[:8].upper()
    return f"Association{readable}{digest}"


class StorageStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, plan: StoragePlan, network: NetworkContract,
                 **kwargs) -> None:
        super().__init__(scope, construct_id, description=f"fmcluster {plan.project}: S3 and FSx for Lustre", **kwargs)
        # Grant S3 server access logging by bucket policy, never by the legacy LogDeliveryWrite ACL, whatever
        # context the app was built with (the access-log bucket has ACLs off: BucketOwnerEnforced).
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        self.plan = plan
        self.spec = plan.spec
        self.network = network
        bucket = self._add_bucket()
        mount = self._add_file_system(bucket) if self.spec.fsx.enabled else None
        scratch = self.spec.scratch
        self.contract = StorageContract(
            bucket_name=bucket.bucket_name,
            bucket_arn=bucket.bucket_arn,
            fsx=mount,
            scratch_path=scratch.mount_path if scratch.enabled else None,
        )
        self._add_outputs()

    def _add_bucket(self) -> s3.IBucket:
        spec = self.spec.bucket
        if spec.existing_name:
            return s3.Bucket.from_bucket_name(self, "DataBucket", spec.existing_name)
        # ACLs off (BucketOwnerEnforced): S3 server access logging is granted by bucket policy, which CDK
        # writes for the logging service (feature flag serverAccessLogsUseBucketPolicy in cdk.json).
        logs_bucket = s3.Bucket(
            self, "AccessLogsBucket", encryption=s3.BucketEncryption.S3_MANAGED, enforce_ssl=True,
            block_public_access=block_all_public_access(), versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED, removal_policy=RemovalPolicy.RETAIN,
            lifecycle_rules=[s3.LifecycleRule(
                id="ExpireAccessLogs", expiration=days(spec.access_log_days),
                noncurrent_version_expiration=days(1))],
        )
        Validations.of(logs_bucket).acknowledge(Acknowledgment(
            id="AwsSolutions::AwsSolutions-S1",
            reason="This is the server access log bucket of the project bucket; logging it to itself would loop.",
        ))
        key = kms.Key.from_key_arn(self, "DataKey", spec.kms_key_arn) if spec.kms_key_arn else None
        return s3.Bucket(
            self, "DataBucket",
            encryption=s3.BucketEncryption.KMS if key else s3.BucketEncryption.S3_MANAGED,
            encryption_key=key, bucket_key_enabled=bool(key),
            enforce_ssl=True, versioned=True, block_public_access=block_all_public_access(),
            server_access_logs_bucket=logs_bucket, server_access_logs_prefix="data-bucket/",
            lifecycle_rules=[s3.LifecycleRule(
                id="ExpireOldVersions", noncurrent_version_expiration=days(spec.noncurrent_version_days),
                abort_incomplete_multipart_upload_after=days(7))],
            removal_policy=RemovalPolicy.RETAIN,
        )

    def _add_file_system(self, bucket: s3.IBucket) -> MountContract:
        spec = self.spec.fsx
        if spec.existing is not None:
            return MountContract(
                file_system_id=spec.existing.file_system_id, dns_name=spec.existing.dns_name,
                mount_name=spec.existing.mount_name, mount_path=spec.mount_path, efa_enabled=spec.existing.efa_enabled,
            )
        sp = self.plan
        log_group = logs.CfnLogGroup(self, "LustreLogs", log_group_name=f"/aws/fsx/fmcluster-{self.plan.project}",
                                     retention_in_days=LOG_RETENTION_DAYS)
        log_group.apply_removal_policy(RemovalPolicy.RETAIN)
        groups = [self.network.storage_security_group_id]
        if spec.efa_enabled:
            groups.append(self.network.efa_security_group_id)
        persistent = spec.deployment_type == "PERSISTENT_2"
        file_system = fsx.CfnFileSystem(
            self, "FileSystem",
            file_system_type="LUSTRE",
            file_system_type_version="2.15",
            storage_type="SSD",
            storage_capacity=sp.capacity_gib,
            subnet_ids=[self.network.services_subnet_id],
            security_group_ids=groups,
            lustre_configuration=fsx.CfnFileSystem.LustreConfigurationProperty(
                deployment_type=spec.deployment_type,
                per_unit_storage_throughput=sp.throughput_per_tib if persistent else None,
                data_compression_type=spec.compression,
                metadata_configuration=fsx.CfnFileSystem.MetadataConfigurationProperty(
                    mode=spec.metadata.mode, iops=spec.metadata.iops) if spec.metadata else None,
                efa_enabled=True if spec.efa_enabled else None,
                log_configuration=fsx.CfnFileSystem.LogConfigurationProperty(
                    level=spec.log_level, destination=log_group.attr_arn if spec.log_level != "DISABLED" else None),
            ),
        )
        file_system.apply_removal_policy(RemovalPolicy.RETAIN)
        for assoc in plan_associations(self.spec):
            self._add_association(file_system, bucket, assoc)
        return MountContract(
            file_system_id=file_system.ref, dns_name=file_system.attr_dns_name,
            mount_name=file_system.attr_lustre_mount_name, mount_path=spec.mount_path, efa_enabled=spec.efa_enabled,
        )

    def _add_association(self, file_system: fsx.CfnFileSystem, bucket: s3.IBucket, assoc: AssociationPlan) -> None:
        # Export defaults by owner (fmcluster.plan.associations): no deletions anywhere unless asked, nothing at all
        # into a bucket the project does not own.
        repository = assoc.repository or f"s3://{bucket.bucket_name}{assoc.file_system_path}/"
        s3_config = fsx.CfnDataRepositoryAssociation.S3Property(
            auto_import_policy=fsx.CfnDataRepositoryAssociation.AutoImportPolicyProperty(
                events=list(assoc.import_events)) if assoc.import_events else None,
            auto_export_policy=fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(
                events=list(assoc.export_events)) if assoc.export_events else None,
        )
        source = assoc.source
        resource = fsx.CfnDataRepositoryAssociation(
            self, association_id(assoc.file_system_path),
            file_system_id=file_system.ref, file_system_path=assoc.file_system_path, data_repository_path=repository,
            batch_import_meta_data_on_create=source.batch_import_on_create,
            imported_file_chunk_size=source.imported_file_chunk_size_mib, s3=s3_config,
        )
        resource.apply_removal_policy(RemovalPolicy.RETAIN)

    def _add_outputs(self) -> None:
        c = self.contract
        values = {key: getattr(c, field) for key, field in BUCKET_OUTPUTS.items()}
        if c.fsx is not None:
            values |= {key: getattr(c.fsx, field) for key, field in FILE_SYSTEM_OUTPUTS.items()}
            values["FileSystemEfaEnabled"] = str(c.fsx.efa_enabled).lower()
        for key, value in values.items():
            CfnOutput(self, key, value=value, export_name=export_name(self.plan.project, key))
