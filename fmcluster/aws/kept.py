"""What a stack delete keeps (``DeletionPolicy: Retain``), one entry per resource type: how to find whether it is
still there (and its size, where a describe call gives one), what keeping it costs per month at the list prices of
:mod:`fmcluster.prices` (priced by the plan's own functions, :mod:`fmcluster.plan.cost`: ``destroy``'s kept total is
the plan's "destroyed" column), the aws CLI lines that delete it, and how ``fmcluster destroy --delete-retained``
deletes it.

Keeping is the default and the point: job records, checkpoints and datasets outlive the stacks. Deleting them is
``--delete-retained``'s alone, with a final snapshot or backup where the service takes one (the Aurora cluster:
``FinalDBSnapshotIdentifier``; FSx for Lustre: ``SkipFinalBackup: false``).

Physical IDs are what CloudFormation's ``ListStackResources`` reports for each type (the ``Ref`` value): a bucket,
log group or subnet/parameter group name, a key, file system, association, security group or DB identifier, the
secret's and the Prometheus workspace's ARN.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from fmcluster.aws.session import is_account_problem
from fmcluster.facts import HOURS_PER_MONTH
from fmcluster.plan import cost as costs
from fmcluster.prices import list_price, lookup

__all__ = ["HOURS_PER_MONTH", "Kept", "delete", "describe", "poll", "priced"]

GONE_CODES = frozenset({
    "NoSuchBucket", "404", "NotFound", "ResourceNotFoundException", "NotFoundException", "FileSystemNotFound",
    "DataRepositoryAssociationNotFound", "DBClusterNotFoundFault", "DBInstanceNotFound", "DBSubnetGroupNotFoundFault",
    "DBParameterGroupNotFound", "InvalidGroup.NotFound", "InvalidGroupId.Malformed",
})
"""Error codes that mean "no such resource" (botocore's service models; S3's HeadBucket answers a bare 404)."""


@dataclass
class Kept:
    """One retained resource that is still there."""

    stack: str
    logical_id: str
    type: str
    physical_id: str
    in_network: bool = False
    """It sits in the project's VPC (subnets or security groups of NAME-network): the network cannot go before it."""
    detail: str = ""
    """What a describe call said: size, state."""
    monthly_usd: float | None = None
    """List price per month of keeping it; None with :attr:`cost` saying why (by use, not in the table)."""
    cost: str = ""
    commands: list[str] = field(default_factory=list)
    """The aws CLI lines that delete it, in order."""
    rank: int = 0
    """Deletion order among kept resources: lower first (an instance before its cluster before its subnet group)."""
    region: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"stack": self.stack, "logical_id": self.logical_id, "type": self.type, "id": self.physical_id,
                "in_network": self.in_network, "detail": self.detail, "monthly_usd": self.monthly_usd,
                "cost": self.cost, "delete": self.commands}


def priced(item: costs.CostItem, what: str = "") -> tuple[float | None, str]:
    """A plan cost line as ``destroy`` shows it: (USD a month or None, words); ``~`` marks an estimate."""
    if item.usd is None:
        return None, f"{item.basis}: price not in the table"
    about = "~" if item.status == costs.ESTIMATE else ""
    return item.usd, f"{about}${item.usd:,.2f}/month{what} ({item.basis})"


def _month(k: Kept, item: str, key: str, quantity: float = 1.0, what: str = "") -> tuple[float | None, str]:
    return priced(costs.monthly(item, key, quantity, f"{quantity:g} {item}", lookup(k.region or None)), what)


def _by_use(key: str, stored: str = "stored bytes") -> tuple[None, str]:
    price = list_price(key)
    rate = f"${price.usd}/{price.unit}" if price.usd is not None else "price not in the table"
    return None, f"by use: {rate} of {stored}"


def _gone(exc: ClientError) -> bool:
    if is_account_problem(exc):
        return False
    error = exc.response.get("Error", {})
    return (error.get("Code") in GONE_CODES or "not found" in str(error.get("Message", "")).lower()
            or "does not exist" in str(error.get("Message", "")).lower())


# --- per type: describe (None: gone), then price and commands -------------------------------------

BUCKET_VERSIONS_QUERY = "{Objects: [Versions, DeleteMarkers][].{Key: Key, VersionId: VersionId}}"
"""The JMESPath of the bucket's delete line: every version and delete marker as DeleteObjects wants them."""


def _bucket(s: Any, k: Kept) -> bool:
    s3 = s.client("s3")
    s3.head_bucket(Bucket=k.physical_id)
    versioned = s3.get_bucket_versioning(Bucket=k.physical_id).get("Status") == "Enabled"
    k.detail = "versioned" if versioned else ""
    k.monthly_usd, k.cost = _by_use("s3.standard", "objects stored (every version kept)" if versioned else "objects")
    # a versioned bucket keeps every version and delete marker: DeleteObjects takes 1,000 at a time (repeat the line
    # until it fails with nothing to delete); `aws s3 rm --recursive` would only add delete markers
    empty = (f"aws s3api delete-objects --bucket {k.physical_id} --delete \"$(aws s3api list-object-versions "
             f"--bucket {k.physical_id} --region {k.region} --max-items 1000 --output json "
             f"--query '{BUCKET_VERSIONS_QUERY}')\"") if versioned else f"aws s3 rm s3://{k.physical_id} --recursive"
    k.commands = [empty, f"aws s3api delete-bucket --bucket {k.physical_id}"]
    k.rank = 2
    return True


def _log_group(s: Any, k: Kept) -> bool:
    groups = s.client("logs").describe_log_groups(logGroupNamePrefix=k.physical_id).get("logGroups", [])
    found = [g for g in groups if g["logGroupName"] == k.physical_id]
    if not found:
        return False
    stored = found[0].get("storedBytes", 0)
    k.detail = f"{stored / 1e9:.2f} GB stored"
    k.monthly_usd, k.cost = _by_use("logs.storage")
    k.commands = [f"aws logs delete-log-group --log-group-name {k.physical_id}"]
    k.rank = 2
    return True


def _key(s: Any, k: Kept) -> bool:
    meta = s.client("kms").describe_key(KeyId=k.physical_id)["KeyMetadata"]
    if meta.get("KeyState") in ("PendingDeletion", "PendingReplicaDeletion"):
        k.detail = f"pending deletion on {meta.get('DeletionDate', '?')}"
        k.cost = "until its deletion date"
        k.commands = []
    else:
        k.detail = meta.get("KeyState", "")
        k.monthly_usd, k.cost = _month(k, "alerts key", "kms.key")
        k.commands = [f"aws kms schedule-key-deletion --key-id {k.physical_id} --pending-window-in-days 7"]
    k.rank = 3
    return True


def workspace_id(physical_id: str) -> str:
    """The Prometheus workspace's ID from its ARN (``arn:aws:aps:REGION:ACCOUNT:workspace/ws-...``) or the ID."""
    return physical_id.rsplit("/", 1)[-1]


def _workspace(s: Any, k: Kept) -> bool:
    ws = s.client("amp").describe_workspace(workspaceId=workspace_id(k.physical_id))["workspace"]
    if ws.get("status", {}).get("statusCode") == "DELETING":
        return False
    k.detail = ws.get("status", {}).get("statusCode", "")
    k.monthly_usd, k.cost = _by_use("aps.storage", "metrics stored")
    k.commands = [f"aws amp delete-workspace --workspace-id {workspace_id(k.physical_id)}"]
    k.rank = 2
    return True


def _file_system(s: Any, k: Kept) -> bool:
    [fs] = s.client("fsx").describe_file_systems(FileSystemIds=[k.physical_id])["FileSystems"]
    if fs.get("Lifecycle") == "DELETING":
        return False
    lustre = fs.get("LustreConfiguration", {})
    gib, tier = fs.get("StorageCapacity", 0), lustre.get("PerUnitStorageThroughput")
    k.detail = f"{gib:,} GiB, {lustre.get('DeploymentType', '?')}, {tier} MB/s/TiB"
    if costs.fsx_key(lustre.get("DeploymentType"), tier):
        k.monthly_usd, k.cost = priced(costs.fsx_month(gib, lustre.get("DeploymentType"), tier,
                                                       lookup(k.region or None)))
    else:
        k.cost = "price not in the table (only PERSISTENT_2 and SCRATCH_2 are)"
    k.commands = [f"aws fsx delete-file-system --file-system-id {k.physical_id} "
                  "--lustre-configuration SkipFinalBackup=false"]
    k.rank = 1
    return True


def _association(s: Any, k: Kept) -> bool:
    [dra] = s.client("fsx").describe_data_repository_associations(AssociationIds=[k.physical_id])["Associations"]
    if dra.get("Lifecycle") == "DELETING":
        return False
    k.detail = f"{dra.get('FileSystemPath', '')} <-> {dra.get('DataRepositoryPath', '')}"
    k.cost = "no charge of its own"
    k.commands = [f"aws fsx delete-data-repository-association --association-id {k.physical_id} "
                  "--no-delete-data-in-file-system"]
    return True


def _db_cluster(s: Any, k: Kept) -> bool:
    [db] = s.client("rds").describe_db_clusters(DBClusterIdentifier=k.physical_id)["DBClusters"]
    if db.get("Status") == "deleting":
        return False
    scaling = db.get("ServerlessV2ScalingConfiguration", {})
    k.detail = (f"{db.get('Engine', '')} {db.get('Status', '')}, {scaling.get('MinCapacity', '?')}-"
                f"{scaling.get('MaxCapacity', '?')} ACU, deletion protection "
                f"{'on' if db.get('DeletionProtection') else 'off'}")
    k.monthly_usd, k.cost = _by_use("aurora.storage", "job records stored")
    modify = (f"aws rds modify-db-cluster --db-cluster-identifier {k.physical_id} --no-deletion-protection "
              "--apply-immediately")
    k.commands = [*([modify] if db.get("DeletionProtection") else []),
                  f"aws rds delete-db-cluster --db-cluster-identifier {k.physical_id} "
                  f"--final-db-snapshot-identifier {final_snapshot(k.physical_id)}"]
    k.rank = 1
    return True


def final_snapshot(cluster: str) -> str:
    return f"{cluster}-final"


def _db_instance(s: Any, k: Kept) -> bool:
    rds = s.client("rds")
    [db] = rds.describe_db_instances(DBInstanceIdentifier=k.physical_id)["DBInstances"]
    if db.get("DBInstanceStatus") == "deleting":
        return False
    k.detail = f"{db.get('DBInstanceClass', '')} {db.get('DBInstanceStatus', '')} in {db.get('DBClusterIdentifier')}"
    minimum = None
    if db.get("DBInstanceClass") == "db.serverless" and db.get("DBClusterIdentifier"):
        [cluster] = rds.describe_db_clusters(DBClusterIdentifier=db["DBClusterIdentifier"])["DBClusters"]
        minimum = cluster.get("ServerlessV2ScalingConfiguration", {}).get("MinCapacity")
    if minimum is not None:
        k.monthly_usd, k.cost = priced(costs.acu_month(minimum, lookup(k.region or None)), " at least")
    else:
        k.cost = "price not in the table (not db.serverless)"
    k.commands = [f"aws rds delete-db-instance --db-instance-identifier {k.physical_id}"]
    return True


def _subnet_group(s: Any, k: Kept) -> bool:
    s.client("rds").describe_db_subnet_groups(DBSubnetGroupName=k.physical_id)
    k.cost = "no charge"
    k.commands = [f"aws rds delete-db-subnet-group --db-subnet-group-name {k.physical_id}"]
    k.rank = 2
    return True


def _parameter_group(s: Any, k: Kept) -> bool:
    s.client("rds").describe_db_cluster_parameter_groups(DBClusterParameterGroupName=k.physical_id)
    k.cost = "no charge"
    k.commands = [f"aws rds delete-db-cluster-parameter-group --db-cluster-parameter-group-name {k.physical_id}"]
    k.rank = 2
    return True


def _security_group(s: Any, k: Kept) -> bool:
    s.client("ec2").describe_security_groups(GroupIds=[k.physical_id])
    k.cost = "no charge"
    k.commands = [f"aws ec2 delete-security-group --group-id {k.physical_id}"]
    k.rank = 2
    return True


def _secret(s: Any, k: Kept) -> bool:
    secret = s.client("secretsmanager").describe_secret(SecretId=k.physical_id)
    if secret.get("DeletedDate"):
        k.detail, k.cost, k.commands = f"deleted on {secret['DeletedDate']}, in its recovery window", "", []
    else:
        k.monthly_usd, k.cost = _month(k, "accounting secret", "secretsmanager.secret")
        k.commands = [f"aws secretsmanager delete-secret --secret-id {k.physical_id} --recovery-window-in-days 7"]
    k.rank = 2
    return True


DESCRIBE: dict[str, Callable[[Any, Kept], bool]] = {
    "AWS::S3::Bucket": _bucket,
    "AWS::Logs::LogGroup": _log_group,
    "AWS::KMS::Key": _key,
    "AWS::APS::Workspace": _workspace,
    "AWS::FSx::FileSystem": _file_system,
    "AWS::FSx::DataRepositoryAssociation": _association,
    "AWS::RDS::DBCluster": _db_cluster,
    "AWS::RDS::DBInstance": _db_instance,
    "AWS::RDS::DBSubnetGroup": _subnet_group,
    "AWS::RDS::DBClusterParameterGroup": _parameter_group,
    "AWS::EC2::SecurityGroup": _security_group,
    "AWS::SecretsManager::Secret": _secret,
}
"""Retained type -> describe it into a :class:`Kept` (False or a not-found error: it is gone)."""


def describe(session: Any, kept: Kept) -> bool:
    """Fill ``kept`` from a describe call; False when the resource is gone. A type :data:`DESCRIBE` lacks is
    listed as it is, with the console as the way to delete it."""
    how = DESCRIBE.get(kept.type)
    if how is None:
        kept.cost = "not priced"
        kept.commands = [f"# delete {kept.type} {kept.physical_id} in the console (no command known to fmcluster)"]
        return True
    try:
        found = how(session, kept)
    except ClientError as exc:
        if _gone(exc):
            return False
        raise
    kept.commands = [f"{c} --region {kept.region}" if c.startswith("aws ") else c for c in kept.commands]
    return found


# --- --delete-retained ---------------------------------------------------------------------------

def delete(session: Any, kept: Kept, wait: Callable[[str, Callable[[], bool]], None]) -> str:
    """Delete one kept resource (``--delete-retained``) and wait until it is gone (``wait(what, done)``); returns
    what it left instead (a final snapshot or backup, a key or secret pending deletion), or ""."""
    pid, t = kept.physical_id, kept.type
    if t == "AWS::S3::Bucket":
        s3 = session.client("s3")
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=pid):
            objects = [{"Key": o["Key"], "VersionId": o["VersionId"]}
                       for o in page.get("Versions", []) + page.get("DeleteMarkers", [])]
            if objects:
                s3.delete_objects(Bucket=pid, Delete={"Objects": objects, "Quiet": True})
        s3.delete_bucket(Bucket=pid)
        return ""
    if t == "AWS::Logs::LogGroup":
        session.client("logs").delete_log_group(logGroupName=pid)
        return ""
    if t == "AWS::KMS::Key":
        when = session.client("kms").schedule_key_deletion(KeyId=pid, PendingWindowInDays=7).get("DeletionDate")
        return f"key {pid} pending deletion until {when} (the shortest window KMS allows)"
    if t == "AWS::APS::Workspace":
        session.client("amp").delete_workspace(workspaceId=workspace_id(pid))
        return ""
    if t == "AWS::SecretsManager::Secret":
        session.client("secretsmanager").delete_secret(SecretId=pid, RecoveryWindowInDays=7)
        return f"secret {pid} recoverable for 7 days (restore-secret), then deleted"
    if t == "AWS::RDS::DBInstance":
        session.client("rds").delete_db_instance(DBInstanceIdentifier=pid)
        wait(f"DB instance {pid}", lambda: not _exists(session, kept))
        return ""
    if t == "AWS::RDS::DBCluster":
        rds = session.client("rds")
        rds.modify_db_cluster(DBClusterIdentifier=pid, DeletionProtection=False, ApplyImmediately=True)
        rds.delete_db_cluster(DBClusterIdentifier=pid, FinalDBSnapshotIdentifier=final_snapshot(pid))
        wait(f"DB cluster {pid}", lambda: not _exists(session, kept))
        return (f"final snapshot {final_snapshot(pid)} of {pid} (Aurora backup storage, by use; restore with "
                f"`aws rds restore-db-cluster-from-snapshot`, delete with `aws rds delete-db-cluster-snapshot "
                f"--db-cluster-snapshot-identifier {final_snapshot(pid)}`)")
    if t == "AWS::RDS::DBSubnetGroup":
        session.client("rds").delete_db_subnet_group(DBSubnetGroupName=pid)
        return ""
    if t == "AWS::RDS::DBClusterParameterGroup":
        session.client("rds").delete_db_cluster_parameter_group(DBClusterParameterGroupName=pid)
        return ""
    if t == "AWS::EC2::SecurityGroup":  # a deleted database's interfaces let go of it a little later
        wait(f"security group {pid}", lambda: _delete_group(session, pid))
        return ""
    if t == "AWS::FSx::DataRepositoryAssociation":
        session.client("fsx").delete_data_repository_association(AssociationId=pid, DeleteDataInFileSystem=False)
        wait(f"association {pid}", lambda: not _exists(session, kept))
        return ""
    if t == "AWS::FSx::FileSystem":
        session.client("fsx").delete_file_system(FileSystemId=pid, LustreConfiguration={"SkipFinalBackup": False})
        wait(f"file system {pid}", lambda: not _exists(session, kept))
        return f"the final backup of {pid} (FSx backup storage, by use: `aws fsx describe-backups`)"
    raise ValueError(f"fmcluster cannot delete {t} {pid}: delete it in the console")


def _delete_group(session: Any, group_id: str) -> bool:
    try:
        session.client("ec2").delete_security_group(GroupId=group_id)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "DependencyViolation":
            return False
        raise
    return True


def _exists(session: Any, kept: Kept) -> bool:
    probe = Kept(kept.stack, kept.logical_id, kept.type, kept.physical_id)
    try:
        return DESCRIBE[kept.type](session, probe)
    except ClientError as exc:
        if _gone(exc):
            return False
        raise


def poll(what: str, done: Callable[[], bool], *, timeout_s: float, every_s: float,
         progress: Callable[[str], None], sleep: Callable[[float], None] = time.sleep) -> None:
    """Wait until ``done()``, at most ``timeout_s``; say so every minute."""
    started = time.monotonic()
    said = started
    while not done():
        now = time.monotonic()
        if now - started > timeout_s:
            raise TimeoutError(f"{what} is still being deleted after {timeout_s / 60:.0f} min")
        if now - said >= 60:
            progress(f"  {what}: still deleting ({(now - started) / 60:.0f} min)")
            said = now
        sleep(every_s)
