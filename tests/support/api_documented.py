"""Rules the AWS APIs state in their documentation but not in botocore's models (see :mod:`support.api_rules`).

:data:`DOCUMENTED` is keyed by where a value lands in the model, ``service:Structure.member``. A rule whose
source is botocore's own documentation of that parameter carries a ``quote`` that the tests find there;
any other rule names its document (AWS user guides, ParallelCluster's source, FACTS.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import regex  # botocore's patterns use \p{L}-style classes, which the standard re module lacks


def is_intrinsic(value: Any) -> bool:
    """A value CloudFormation computes at deploy time: Ref, Fn::*, or a {{resolve:...}} dynamic reference."""
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        return key == "Ref" or key.startswith("Fn::")
    return isinstance(value, str) and "{{resolve:" in value


@dataclass(frozen=True)
class Rule:
    """A constraint the API documents in prose. ``check(value, parent, props)`` returns a message or None;
    ``parent`` is the object holding the value, ``props`` the resource's properties. With ``quote``,
    the source is botocore's documentation of that parameter and must contain the quote."""

    says: str
    check: Callable[[Any, dict, dict], str | None]
    source: str
    quote: str | None = None


def _chars(allowed: str, max_len: int) -> Callable[[Any, dict, dict], str | None]:
    pattern = re.compile(f"[a-zA-Z0-9 {re.escape(allowed)}]{{0,{max_len}}}")

    def check(value: Any, _parent: dict, _props: dict) -> str | None:
        if pattern.fullmatch(str(value)):
            return None
        bad = sorted({c for c in str(value) if not pattern.fullmatch(c)})
        return f"{len(str(value))} characters, not allowed: {''.join(bad)!r}" if bad else f"longer than {max_len}"
    return check


def _one_of(allowed: set, what: str) -> Callable[[Any, dict, dict], str | None]:
    def check(value: Any, _parent: dict, _props: dict) -> str | None:
        return None if number(value) in allowed else f"{value!r} is not one of the documented {what}"
    return check


def number(value: Any) -> Any:
    """An int where the value reads as one (CloudFormation accepts numbers as strings); else the value."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


SG_CHARS, SG_CHARS_NO_AMP = "._-:/()#,@[]+=&;{}!$*", "._-:/()#,@[]+=;{}!$*"
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922,
                      3288, 3653)
EFA_CAPACITY_STEP_GIB = {1000: 4800, 500: 9600, 250: 19200, 125: 38400}
"""EFA-enabled FSx for Lustre: storage grows in these steps per throughput tier (MB/s/TiB -> GiB)."""
LUSTRE_THROUGHPUT = {("PERSISTENT_1", "SSD"): {50, 100, 200}, ("PERSISTENT_1", "HDD"): {12, 40},
                     ("PERSISTENT_2", "SSD"): {125, 250, 500, 1000}}
METADATA_IOPS = {1500, 3000, 6000} | set(range(12000, 192001, 12000))


def _efa(props: dict) -> bool:
    return props.get("LustreConfiguration", {}).get("EfaEnabled") in (True, "true")


def _lustre_capacity(value: Any, _parent: dict, props: dict) -> str | None:
    lustre = props.get("LustreConfiguration", {})
    deployment, storage = lustre.get("DeploymentType"), props.get("StorageType", "SSD")
    if props.get("FileSystemType") != "LUSTRE" or _efa(props) or storage != "SSD" or any(
            map(is_intrinsic, (deployment, storage))):
        return None
    gib, step = number(value), 3600 if deployment == "SCRATCH_1" else 2400
    return None if gib in (1200, 2400) or (isinstance(gib, int) and gib > 0 and gib % step == 0) else (
        f"{gib} GiB: {deployment} SSD takes 1200, 2400 or a multiple of {step} GiB")


def _efa_capacity(value: Any, _parent: dict, props: dict) -> str | None:
    throughput = props.get("LustreConfiguration", {}).get("PerUnitStorageThroughput")
    if not _efa(props) or is_intrinsic(throughput):
        return None
    step, gib = EFA_CAPACITY_STEP_GIB.get(number(throughput)), number(value)
    if step is None:
        return f"EFA-enabled at {throughput} MB/s/TiB: no documented capacity step (only {sorted(EFA_CAPACITY_STEP_GIB)})"
    return None if isinstance(gib, int) and gib > 0 and gib % step == 0 else (
        f"{gib} GiB: an EFA-enabled file system at {throughput} MB/s/TiB takes multiples of {step} GiB")


def _lustre_throughput(value: Any, parent: dict, props: dict) -> str | None:
    allowed = LUSTRE_THROUGHPUT.get((parent.get("DeploymentType"), props.get("StorageType", "SSD")))
    return None if allowed is None or number(value) in allowed else (
        f"{value} MB/s/TiB: {parent.get('DeploymentType')} takes {sorted(allowed)}")


def _metadata_iops(value: Any, parent: dict, _props: dict) -> str | None:
    if parent.get("Mode") == "AUTOMATIC":
        return "Iops is set, but AUTOMATIC mode takes none"
    return None if number(value) in METADATA_IOPS else f"{value}: not 1500, 3000, 6000 or a multiple of 12000 to 192000"


def _efa_file_system(value: Any, parent: dict, _props: dict) -> str | None:
    if value not in (True, "true"):
        return None
    missing = [w for w, ok in (("PERSISTENT_2", parent.get("DeploymentType") == "PERSISTENT_2"),
                               ("a MetadataConfiguration", "MetadataConfiguration" in parent)) if not ok]
    return f"EfaEnabled needs {' and '.join(missing)}" if missing else None


def _bucket_name(value: Any, _parent: dict, _props: dict) -> str | None:
    name = str(value)
    ok = re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", name) and ".." not in name
    return None if ok else f"{name!r}: 3-63 of a-z 0-9 . -, starting and ending with a letter or digit, no '..'"


EBS_SIZE_GIB = {"gp2": (1, 16384), "gp3": (1, 65536), "io1": (4, 16384), "io2": (4, 65536), "st1": (125, 16384),
                "sc1": (125, 16384), "standard": (1, 1024)}


def _ebs_size(value: Any, parent: dict, _props: dict) -> str | None:
    low, high = EBS_SIZE_GIB.get(parent.get("VolumeType", "gp2"), (1, 65536))
    size = number(value)
    return None if isinstance(size, int) and low <= size <= high else f"{value} GiB outside {low}-{high} for {parent.get('VolumeType', 'gp2')}"


def _efa_only(value: Any, parent: dict, _props: dict) -> str | None:
    if value not in ("interface", "efa", "efa-only"):
        return f"{value!r} is not interface, efa or efa-only"
    addressed = [k for k in ("PrivateIpAddress", "PrivateIpAddresses", "SecondaryPrivateIpAddressCount", "Ipv4Prefixes",
                             "Ipv4PrefixCount", "Ipv6AddressCount", "Ipv6Addresses") if k in parent]
    if parent.get("AssociatePublicIpAddress") in (True, "true"):
        addressed.append("AssociatePublicIpAddress")
    return f"efa-only with {addressed}" if value == "efa-only" and addressed else None


def _lustre_version(value: Any, parent: dict, props: dict) -> str | None:
    version = str(value)
    if version not in ("2.10", "2.12", "2.15"):
        return f"{version!r} is not 2.10, 2.12 or 2.15"
    lustre = props.get("LustreConfiguration", {})
    if version == "2.12" and lustre.get("DeploymentType") == "PERSISTENT_2" and "MetadataConfiguration" in lustre:
        return "2.12 does not support PERSISTENT_2 with a metadata configuration"
    return None


def _positive(value: Any, _parent: dict, _props: dict) -> str | None:
    n = number(value)
    return None if isinstance(n, int) and n > 0 else f"{value!r} is not a positive integer"


def _no_aws_prefix(value: Any, _parent: dict, _props: dict) -> str | None:
    return "starts with aws:" if str(value).lower().startswith("aws:") else None


def _kms_key_needs_kms(value: Any, parent: dict, _props: dict) -> str | None:
    algorithm = parent.get("SSEAlgorithm")
    return None if is_intrinsic(algorithm) or algorithm in ("aws:kms", "aws:kms:dsse") else (
        f"a KMS key with SSEAlgorithm {algorithm!r}")


_FSX_GUIDE = ("FSx for Lustre user guide, 'Increasing storage capacity' "
              "(docs.aws.amazon.com/fsx/latest/LustreGuide/increase-storage-capacity.html) and 'Getting started' "
              "step 7; FACTS.md section 3")
_PCLUSTER = "aws-parallelcluster 3.16 pcluster/constants.py PCLUSTER_NAME_REGEX / PCLUSTER_NAME_MAX_LENGTH"
_botocore = "botocore {} documentation".format


def pcs_slurm_versions() -> list[str]:
    """The Slurm versions botocore's pcs model documents for ``SchedulerRequest.version`` ("Valid Values: 24.11 |
    25.05 | ..."); PCS user guide, "Slurm versions in PCS" (https://docs.aws.amazon.com/pcs/latest/userguide/
    slurm-versions.html). Read from the model, so a botocore that lists a new version accepts it."""
    from botocore.loaders import Loader

    raw = Loader().load_service_model("pcs", "service-2")["shapes"]["SchedulerRequest"]["members"]["version"]
    text = re.sub(r"<[^>]+>", " ", raw.get("documentation", ""))
    found = re.search(r"Valid Values:\s*([0-9.|\s]+)", text)
    return [v.strip() for v in found.group(1).split("|") if v.strip()] if found else []


def _pcs_slurm_version(value: Any, _parent: dict, _props: dict) -> str | None:
    versions = pcs_slurm_versions()
    return None if str(value) in versions else f"{value!r} is not one of the Slurm versions PCS offers {versions}"


DOCUMENTED: dict[str, tuple[Rule, ...]] = {
    # "service:Structure.member" (where the value lands in the model): rules from the API's documentation
    **{key: (Rule("up to 255 of a-zA-Z0-9, space and " + SG_CHARS, _chars(SG_CHARS, 255), _botocore(key),
                  "Up to 255 characters in length. Allowed characters are a-z, A-Z, 0-9, spaces, and " + SG_CHARS),)
       for key in ("ec2:IpRange.Description", "ec2:Ipv6Range.Description")},
    **{key: (Rule("up to 255 of a-zA-Z0-9, space and " + SG_CHARS_NO_AMP, _chars(SG_CHARS_NO_AMP, 255), _botocore(key),
                  "Up to 255 characters in length. Allowed characters are a-z, A-Z, 0-9, spaces, and " + SG_CHARS_NO_AMP),)
       for key in ("ec2:UserIdGroupPair.Description", "ec2:PrefixListId.Description")},
    "ec2:CreateSecurityGroupRequest.Description": (Rule(
        "up to 255 of a-zA-Z0-9, space and " + SG_CHARS, _chars(SG_CHARS, 255),
        _botocore("ec2 CreateSecurityGroup Description"),
        "Up to 255 characters in length Valid characters: a-z, A-Z, 0-9, spaces, and " + SG_CHARS),),
    "ec2:CreateSecurityGroupRequest.GroupName": (Rule(
        "up to 255 of a-zA-Z0-9, space and " + SG_CHARS + "; not sg-*",
        lambda v, p, r: "starts with sg-" if str(v).startswith("sg-") else _chars(SG_CHARS, 255)(v, p, r),
        _botocore("ec2 CreateSecurityGroup GroupName"),
        "Up to 255 characters in length. Can't start with sg- . Valid characters: a-z, A-Z, 0-9, spaces, and " + SG_CHARS),),
    "ec2:Tag.Key": (Rule("at most 127 characters, not aws:*",
                         lambda v, p, r: "starts with aws:" if str(v).lower().startswith("aws:") else (
                             None if len(str(v)) <= 127 else "longer than 127 characters"),
                         _botocore("ec2 Tag Key"), "accept a maximum of 127 Unicode characters. May not begin with aws:"),),
    "ec2:Tag.Value": (Rule("at most 256 characters", lambda v, p, r: None if len(str(v)) <= 256 else "longer than 256",
                           _botocore("ec2 Tag Value"), "accept a maximum of 256 Unicode characters"),),
    "fsx:CreateFileSystemRequest.StorageCapacity": (
        Rule("Lustre SSD: 1200, 2400, then steps of 2400 GiB (SCRATCH_1: 3600)", _lustre_capacity,
             _botocore("fsx CreateFileSystem StorageCapacity"),
             "For SCRATCH_2 , PERSISTENT_2 , and PERSISTENT_1 deployment types using SSD storage type, the valid "
             "values are 1200 GiB, 2400 GiB, and increments of 2400 GiB."),
        Rule("EFA-enabled: multiples of 4800/9600/19200/38400 GiB at 1000/500/250/125 MB/s/TiB", _efa_capacity,
             _FSX_GUIDE)),
    "fsx:CreateFileSystemLustreConfiguration.PerUnitStorageThroughput": (Rule(
        "PERSISTENT_1 SSD 50/100/200, HDD 12/40; PERSISTENT_2 125/250/500/1000", _lustre_throughput,
        _botocore("fsx LustreConfiguration PerUnitStorageThroughput"),
        "For PERSISTENT_2 SSD storage: 125, 250, 500, 1000 MB/s/TiB."),),
    "fsx:CreateFileSystemLustreConfiguration.EfaEnabled": (Rule(
        "EFA needs PERSISTENT_2 and a MetadataConfiguration", _efa_file_system, _FSX_GUIDE),),
    "fsx:CreateFileSystemLustreMetadataConfiguration.Iops": (Rule(
        "USER_PROVISIONED only; 1500, 3000, 6000, 12000, multiples of 12000 to 192000", _metadata_iops,
        _botocore("fsx MetadataConfiguration Iops"),
        "valid values are 1500 , 3000 , 6000 , 12000 , and multiples of 12000 up to a maximum of 192000 ."),),
    "grafana:CreateWorkspaceRequest.permissionType": (Rule(
        "CUSTOMER_MANAGED through the API and CloudFormation",
        lambda v, p, r: None if v == "CUSTOMER_MANAGED" else f"{v!r}: only the console may use SERVICE_MANAGED",
        _botocore("grafana CreateWorkspace permissionType"),
        "Use only the CUSTOMER_MANAGED permission type when creating a workspace with the API, CLI or Amazon Web "
        "Services CloudFormation."),),
    "grafana:CreateWorkspaceRequest.workspaceDataSources": (Rule(
        "not to be set", lambda v, p, r: f"{v!r} set: the parameter is for AWS's internal use",
        _botocore("grafana CreateWorkspace workspaceDataSources"),
        "This parameter is for internal use only, and should not be used."),),
    "logs:PutRetentionPolicyRequest.retentionInDays": (Rule(
        "one of the documented retention periods", _one_of(set(LOG_RETENTION_DAYS), "retention periods"),
        _botocore("logs Days"),
        "Possible values are: " + ", ".join(map(str, LOG_RETENTION_DAYS[:-1])) + f", and {LOG_RETENTION_DAYS[-1]}."),),
    "sns:CreateTopicInput.Name": (Rule(
        "1-256 of A-Za-z0-9 _ - (.fifo suffix for FIFO topics)",
        lambda v, p, r: None if re.fullmatch(r"[A-Za-z0-9_-]{1,256}(\.fifo)?", str(v)) else f"{v!r}",
        _botocore("sns CreateTopic Name"),
        "Topic names must be made up of only uppercase and lowercase ASCII letters, numbers, underscores, and "
        "hyphens, and must be between 1 and 256 characters long."),),
    "s3:CreateBucketRequest.Bucket": (Rule(
        "S3 general purpose bucket naming rules", _bucket_name,
        "Amazon S3 user guide, 'General purpose bucket naming rules' (docs.aws.amazon.com/AmazonS3/latest/userguide/"
        "bucketnamingrules.html)"),),
    "ec2:LaunchTemplateInstanceNetworkInterfaceSpecificationRequest.InterfaceType": (Rule(
        "interface | efa | efa-only; an efa-only interface takes no IP address", _efa_only,
        _botocore("ec2 LaunchTemplate NetworkInterface InterfaceType"),
        "If you specify efa-only , do not assign any IP addresses to the network interface. EFA-only network "
        "interfaces do not support IP addresses. Valid values: interface | efa | efa-only"),),
    "ec2:LaunchTemplateEbsBlockDeviceRequest.VolumeSize": (Rule(
        "the size range of the volume type", _ebs_size, _botocore("ec2 LaunchTemplate Ebs VolumeSize"),
        "gp2 : 1 - 16,384 GiB gp3 : 1 - 65,536 GiB io1 : 4 - 16,384 GiB io2 : 4 - 65,536 GiB st1 and sc1 : "
        "125 - 16,384 GiB standard : 1 - 1024 GiB"),),
    "fsx:CreateFileSystemRequest.FileSystemTypeVersion": (Rule(
        "2.10, 2.12 or 2.15; not 2.12 with PERSISTENT_2 and a metadata configuration", _lustre_version,
        _botocore("fsx CreateFileSystem FileSystemTypeVersion"),
        "2.12 is supported by all Lustre deployment types, except for PERSISTENT_2 with a metadata configuration "
        "mode."),),
    "grafana:CreateWorkspaceRequest.workspaceDescription": (Rule(
        "letters, separators, digits and punctuation", lambda v, p, r: None if regex.fullmatch(
            r"[\p{L}\p{Z}\p{N}\p{P}]{0,2048}", str(v)) else f"{v!r}",
        _botocore("grafana CreateWorkspace workspaceDescription"), r"Pattern: ^[\\p{L}\\p{Z}\\p{N}\\p{P}]{0,2048}$"),),
    "s3:LifecycleRule.ID": (Rule("at most 255 characters", lambda v, p, r: None if len(str(v)) <= 255 else "too long",
                                 _botocore("s3 LifecycleRule ID"), "The value cannot be longer than 255 characters."),),
    **{key: (Rule("a positive integer", _positive, _botocore(key), "The value must be a non-zero positive integer."),)
       for key in ("s3:LifecycleExpiration.Days", "s3:NoncurrentVersionExpiration.NoncurrentDays")},
    "s3:ServerSideEncryptionByDefault.KMSMasterKeyID": (Rule(
        "only with SSEAlgorithm aws:kms or aws:kms:dsse", _kms_key_needs_kms,
        _botocore("s3 ServerSideEncryptionByDefault KMSMasterKeyID"),
        "This parameter is allowed if and only if SSEAlgorithm is set to aws:kms or aws:kms:dsse ."),),
    "amp:TagMap.key": (Rule("not aws:*", _no_aws_prefix, _botocore("amp TagMap key"), "Must not begin with aws: ."),),
    "cloudformation:Tag.Key": (Rule("not aws:*", _no_aws_prefix, _botocore("cloudformation Tag Key"),
                                    "Tags owned by Amazon Web Services have the reserved prefix: aws: ."),),
    "pcluster:CreateCluster.clusterName": (Rule(
        "a letter, then letters, digits or hyphens; at most 60 characters (40 with Slurm accounting)",
        lambda v, p, r: None if re.fullmatch(r"[a-zA-Z][a-zA-Z0-9-]{0,59}", str(v)) else f"{v!r}", _PCLUSTER),),
    "pcs:SchedulerRequest.version": (Rule(
        "a Slurm version PCS offers (the Valid Values botocore's documentation lists)", _pcs_slurm_version,
        _botocore("pcs CreateCluster scheduler version"), "Valid Values:"),),
    "pcluster:CustomResource.DeletionPolicy": (Rule(
        "Retain or Delete", _one_of({"Retain", "Delete"}, "policies"),
        "ParallelCluster CloudFormation custom resource (Custom::PclusterCluster); FACTS.md section 5"),),
}
