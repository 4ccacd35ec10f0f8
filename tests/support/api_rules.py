"""Would the AWS APIs accept these templates? A generic checker keyed by CloudFormation resource type.

Every literal string or number under a resource's ``Properties`` is mapped to the AWS API parameter it
becomes -- :data:`TABLE` names the create call per resource type, whose members mirror the CloudFormation
property names, plus the renames where they differ -- and checked against that parameter's constraints in
botocore's service model (``pattern`` as a full match, ``min``/``max`` length or value, ``enum``), loaded
offline with ``botocore.loaders``. Where the model states no constraint but the API's documentation does,
:data:`DOCUMENTED` adds the rule with its source; a rule quoting botocore's own documentation is checked
against that text (``tests/stacks/test_deployability.py``).

Skipped on purpose, and listed in each :class:`Report`: CloudFormation intrinsics (``Ref``, ``Fn::*``)
and dynamic references (``{{resolve:...}}``), whose values exist only at deploy time; subtrees in
:data:`NOT_API` (policy documents, ParallelCluster's own configuration), which other checks own.
A literal that maps to no API parameter is a coverage gap (:attr:`Report.unmapped`), never silently passed.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import regex  # botocore's patterns use \p{L}-style classes, which the standard re module lacks
from botocore.loaders import Loader
from botocore.model import ServiceModel, Shape


@dataclass(frozen=True)
class Param:
    """An API parameter, ``service:Operation.Member.Member``; with ``when``, only where the leaf's
    enclosing object has that key (a security-group rule's description depends on its source)."""

    api: str
    when: str | None = None


Target = str | tuple[Param, ...]


def _sg_rules(cfn: str, op: str, sources: dict[str, str]) -> dict[str, Target]:
    """A security-group rule (inline list item or its own resource): ports and protocol go into
    ``IpPermissions``; the description and the source into the member for that kind of source."""
    base = f"ec2:{op}.IpPermissions"
    rows: dict[str, Target] = {f"{cfn}{m}": f"{base}.{m}" for m in ("FromPort", "ToPort", "IpProtocol")}
    rows[f"{cfn}Description"] = tuple(Param(f"{base}.{member}.Description", when=key) for key, member in sources.items())
    targets = {"IpRanges": "CidrIp", "Ipv6Ranges": "CidrIpv6", "PrefixListIds": "PrefixListId",
               "UserIdGroupPairs": "GroupId"}
    rows.update({f"{cfn}{key}": f"{base}.{member}.{targets[member]}" for key, member in sources.items()})
    return rows


_INGRESS = {"CidrIp": "IpRanges", "CidrIpv6": "Ipv6Ranges", "SourcePrefixListId": "PrefixListIds",
            "SourceSecurityGroupId": "UserIdGroupPairs"}
_EGRESS = {"CidrIp": "IpRanges", "CidrIpv6": "Ipv6Ranges", "DestinationPrefixListId": "PrefixListIds",
           "DestinationSecurityGroupId": "UserIdGroupPairs"}
_EC2_TAGS: dict[str, Target] = {"Tags": "ec2:CreateTags.Tags"}
_S3_LIFECYCLE = "s3:PutBucketLifecycleConfiguration.LifecycleConfiguration.Rules"

TABLE: dict[str, tuple[str, dict[str, Target]]] = {
    # resource type: (the create call whose members mirror the properties, {CloudFormation path: API parameter})
    # A path ending in a list item is written with "[]"; the rest of a leaf's path below a row is matched
    # member by member (first letter's case ignored: PascalCase properties, camelCase APIs).
    "AWS::EC2::VPC": ("ec2:CreateVpc", _EC2_TAGS),
    "AWS::EC2::Subnet": ("ec2:CreateSubnet", _EC2_TAGS),
    "AWS::EC2::InternetGateway": ("ec2:CreateInternetGateway", _EC2_TAGS),
    "AWS::EC2::VPCGatewayAttachment": ("ec2:AttachInternetGateway", {}),
    "AWS::EC2::EIP": ("ec2:AllocateAddress", _EC2_TAGS),
    "AWS::EC2::NatGateway": ("ec2:CreateNatGateway", _EC2_TAGS),
    "AWS::EC2::RouteTable": ("ec2:CreateRouteTable", _EC2_TAGS),
    "AWS::EC2::Route": ("ec2:CreateRoute", {}),
    "AWS::EC2::SubnetRouteTableAssociation": ("ec2:AssociateRouteTable", {}),
    "AWS::EC2::VPCEndpoint": ("ec2:CreateVpcEndpoint", _EC2_TAGS),
    "AWS::EC2::FlowLog": ("ec2:CreateFlowLogs", {**_EC2_TAGS, "ResourceId": "ec2:CreateFlowLogs.ResourceIds"}),
    "AWS::EC2::PlacementGroup": ("ec2:CreatePlacementGroup", _EC2_TAGS),
    "AWS::EC2::SecurityGroup": ("ec2:CreateSecurityGroup", {
        **_EC2_TAGS, "GroupDescription": "ec2:CreateSecurityGroup.Description",
        **_sg_rules("SecurityGroupIngress[].", "AuthorizeSecurityGroupIngress", _INGRESS),
        **_sg_rules("SecurityGroupEgress[].", "AuthorizeSecurityGroupEgress", _EGRESS),
    }),
    "AWS::EC2::SecurityGroupIngress": ("ec2:AuthorizeSecurityGroupIngress",
                                       _sg_rules("", "AuthorizeSecurityGroupIngress", _INGRESS)),
    "AWS::EC2::SecurityGroupEgress": ("ec2:AuthorizeSecurityGroupEgress",
                                      _sg_rules("", "AuthorizeSecurityGroupEgress", _EGRESS)),
    "AWS::EC2::LaunchTemplate": ("ec2:CreateLaunchTemplate", {
        # CreateLaunchTemplate's member is a bare String; the same name in CreateLaunchTemplateVersion
        # carries the rule the API reference states for both (3-128 characters, [a-zA-Z0-9().-/_]).
        "LaunchTemplateName": "ec2:CreateLaunchTemplateVersion.LaunchTemplateName",
    }),
    "AWS::FSx::FileSystem": ("fsx:CreateFileSystem", {}),
    "AWS::FSx::DataRepositoryAssociation": ("fsx:CreateDataRepositoryAssociation", {}),
    "AWS::S3::Bucket": ("s3:CreateBucket", {
        "BucketName": "s3:CreateBucket.Bucket",
        "AccessControl": "s3:CreateBucket.ACL",
        "Tags": "s3:PutBucketTagging.Tagging.TagSet",
        "BucketEncryption.ServerSideEncryptionConfiguration[].BucketKeyEnabled":
            "s3:PutBucketEncryption.ServerSideEncryptionConfiguration.Rules.BucketKeyEnabled",
        "BucketEncryption.ServerSideEncryptionConfiguration[].ServerSideEncryptionByDefault":
            "s3:PutBucketEncryption.ServerSideEncryptionConfiguration.Rules.ApplyServerSideEncryptionByDefault",
        "LoggingConfiguration.DestinationBucketName": "s3:PutBucketLogging.BucketLoggingStatus.LoggingEnabled.TargetBucket",
        "LoggingConfiguration.LogFilePrefix": "s3:PutBucketLogging.BucketLoggingStatus.LoggingEnabled.TargetPrefix",
        "OwnershipControls": "s3:PutBucketOwnershipControls.OwnershipControls",
        "PublicAccessBlockConfiguration": "s3:PutPublicAccessBlock.PublicAccessBlockConfiguration",
        "VersioningConfiguration": "s3:PutBucketVersioning.VersioningConfiguration",
        "LifecycleConfiguration.Rules[].Id": f"{_S3_LIFECYCLE}.ID",
        "LifecycleConfiguration.Rules[].Status": f"{_S3_LIFECYCLE}.Status",
        "LifecycleConfiguration.Rules[].Prefix": f"{_S3_LIFECYCLE}.Filter.Prefix",
        "LifecycleConfiguration.Rules[].ExpirationInDays": f"{_S3_LIFECYCLE}.Expiration.Days",
        "LifecycleConfiguration.Rules[].NoncurrentVersionExpirationInDays":
            f"{_S3_LIFECYCLE}.NoncurrentVersionExpiration.NoncurrentDays",
        "LifecycleConfiguration.Rules[].NoncurrentVersionExpiration": f"{_S3_LIFECYCLE}.NoncurrentVersionExpiration",
        "LifecycleConfiguration.Rules[].AbortIncompleteMultipartUpload": f"{_S3_LIFECYCLE}.AbortIncompleteMultipartUpload",
    }),
    "AWS::S3::BucketPolicy": ("s3:PutBucketPolicy", {}),
    "AWS::Logs::LogGroup": ("logs:CreateLogGroup", {"RetentionInDays": "logs:PutRetentionPolicy.retentionInDays"}),
    "AWS::KMS::Key": ("kms:CreateKey", {
        "Tags[].Key": "kms:CreateKey.Tags.TagKey", "Tags[].Value": "kms:CreateKey.Tags.TagValue",
        "PendingWindowInDays": "kms:ScheduleKeyDeletion.PendingWindowInDays",
    }),
    "AWS::SNS::Topic": ("sns:CreateTopic", {
        "TopicName": "sns:CreateTopic.Name",
        "DisplayName": "sns:SetTopicAttributes.AttributeValue", "KmsMasterKeyId": "sns:SetTopicAttributes.AttributeValue",
    }),
    "AWS::SNS::Subscription": ("sns:Subscribe", {}),
    "AWS::SNS::TopicPolicy": ("sns:SetTopicAttributes", {"Topics": "sns:SetTopicAttributes.TopicArn"}),
    "AWS::IAM::Role": ("iam:CreateRole", {
        "Policies[].PolicyName": "iam:PutRolePolicy.PolicyName",
        "ManagedPolicyArns": "iam:AttachRolePolicy.PolicyArn",
    }),
    "AWS::IAM::Policy": ("iam:PutRolePolicy", {"Roles": "iam:PutRolePolicy.RoleName"}),
    "AWS::IAM::ManagedPolicy": ("iam:CreatePolicy", {
        "ManagedPolicyName": "iam:CreatePolicy.PolicyName", "Roles": "iam:AttachRolePolicy.RoleName"}),
    "AWS::IAM::InstanceProfile": ("iam:CreateInstanceProfile", {"Roles": "iam:AddRoleToInstanceProfile.RoleName"}),
    "AWS::APS::Workspace": ("amp:CreateWorkspace", {
        "LoggingConfiguration.LogGroupArn": "amp:CreateLoggingConfiguration.logGroupArn",
        "AlertManagerDefinition": "amp:CreateAlertManagerDefinition.data"}),
    "AWS::APS::RuleGroupsNamespace": ("amp:CreateRuleGroupsNamespace", {"Workspace": "amp:CreateRuleGroupsNamespace.workspaceId"}),
    "AWS::Grafana::Workspace": ("grafana:CreateWorkspace", {
        "Name": "grafana:CreateWorkspace.workspaceName", "Description": "grafana:CreateWorkspace.workspaceDescription",
        "RoleArn": "grafana:CreateWorkspace.workspaceRoleArn", "DataSources": "grafana:CreateWorkspace.workspaceDataSources",
        "NotificationDestinations": "grafana:CreateWorkspace.workspaceNotificationDestinations",
        "OrganizationalUnits": "grafana:CreateWorkspace.workspaceOrganizationalUnits",
    }),
    "AWS::SageMaker::Cluster": ("sagemaker:CreateCluster", {}),
    "AWS::CloudFormation::Stack": ("cloudformation:CreateStack", {}),
    "Custom::PclusterCluster": ("pcluster:CreateCluster", {
        "ClusterName": "pcluster:CreateCluster.clusterName", "DeletionPolicy": "pcluster:CustomResource.DeletionPolicy"}),
}

EXTERNAL_APIS = {"pcluster": "the ParallelCluster API and custom resource (not in botocore): DOCUMENTED rules only"}

NOT_API: dict[str, dict[str, str]] = {
    # resource type ("*" for every type): {property path: why its literals are not checked here}
    "*": {"PolicyDocument": "an IAM policy document: IAM's own grammar, checked by cfn-lint and cdk-nag",
          "AssumeRolePolicyDocument": "an IAM policy document: IAM's own grammar, checked by cfn-lint and cdk-nag",
          "Policies[].PolicyDocument": "an IAM policy document: IAM's own grammar, checked by cfn-lint and cdk-nag",
          "KeyPolicy": "a KMS key policy document: IAM's grammar, checked by cfn-lint and cdk-nag"},
    "Custom::PclusterCluster": {
        "ClusterConfiguration": "ParallelCluster's own schema checks it (tests/stacks/test_parallelcluster.py)",
        "ServiceToken": "the provider's Lambda ARN, a CloudFormation custom-resource field"},
    "AWS::CloudFormation::Stack": {
        "Parameters": "parameters of the nested template (ParallelCluster's provider), which declares their rules"},
}


# --- documented rules the models do not carry -------------------------------------------------------

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
        return None if _number(value) in allowed else f"{value!r} is not one of the documented {what}"
    return check


def _number(value: Any) -> Any:
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
    gib, step = _number(value), 3600 if deployment == "SCRATCH_1" else 2400
    return None if gib in (1200, 2400) or (isinstance(gib, int) and gib > 0 and gib % step == 0) else (
        f"{gib} GiB: {deployment} SSD takes 1200, 2400 or a multiple of {step} GiB")


def _efa_capacity(value: Any, _parent: dict, props: dict) -> str | None:
    throughput = props.get("LustreConfiguration", {}).get("PerUnitStorageThroughput")
    if not _efa(props) or is_intrinsic(throughput):
        return None
    step, gib = EFA_CAPACITY_STEP_GIB.get(_number(throughput)), _number(value)
    if step is None:
        return f"EFA-enabled at {throughput} MB/s/TiB: no documented capacity step (only {sorted(EFA_CAPACITY_STEP_GIB)})"
    return None if isinstance(gib, int) and gib > 0 and gib % step == 0 else (
        f"{gib} GiB: an EFA-enabled file system at {throughput} MB/s/TiB takes multiples of {step} GiB")


def _lustre_throughput(value: Any, parent: dict, props: dict) -> str | None:
    allowed = LUSTRE_THROUGHPUT.get((parent.get("DeploymentType"), props.get("StorageType", "SSD")))
    return None if allowed is None or _number(value) in allowed else (
        f"{value} MB/s/TiB: {parent.get('DeploymentType')} takes {sorted(allowed)}")


def _metadata_iops(value: Any, parent: dict, _props: dict) -> str | None:
    if parent.get("Mode") == "AUTOMATIC":
        return "Iops is set, but AUTOMATIC mode takes none"
    return None if _number(value) in METADATA_IOPS else f"{value}: not 1500, 3000, 6000 or a multiple of 12000 to 192000"


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
    size = _number(value)
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
    number = _number(value)
    return None if isinstance(number, int) and number > 0 else f"{value!r} is not a positive integer"


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
    "pcluster:CustomResource.DeletionPolicy": (Rule(
        "Retain or Delete", _one_of({"Retain", "Delete"}, "policies"),
        "ParallelCluster CloudFormation custom resource (Custom::PclusterCluster); FACTS.md section 5"),),
}


# --- botocore -----------------------------------------------------------------------------------------

@cache
def _raw_model(service: str) -> dict:
    return Loader().load_service_model(service, "service-2")


@cache
def service_model(service: str) -> ServiceModel:
    return ServiceModel(_raw_model(service), service)


def _member(shape: Shape, name: str) -> tuple[str, Shape]:
    """A structure's member by name, the first letter's case ignored; a map's key or value for Key/Value."""
    if shape.type_name == "map" and name.lower() in ("key", "value"):
        return name.lower(), shape.key if name.lower() == "key" else shape.value
    members = getattr(shape, "members", {})
    for candidate in (name, name[:1].lower() + name[1:], name[:1].upper() + name[1:]):
        if candidate in members:
            return candidate, members[candidate]
    raise KeyError(f"{shape.name} has no member {name!r}")


def resolve(api: str, more: list[str] = ()) -> tuple[Shape | None, str]:
    """The shape an API parameter (plus further member names) lands in, and where: ``service:Owner.member``."""
    service, _, rest = api.partition(":")
    operation, *members = rest.split(".")
    if service in EXTERNAL_APIS:
        return None, api + "".join(f".{m}" for m in more)
    shape = service_model(service).operation_model(operation).input_shape
    owner = f"{service}:{shape.name}"
    for name in [*members, *more]:
        while shape.type_name == "list":
            shape = shape.member
        member, child = _member(shape, name)
        owner, shape = f"{service}:{shape.name}.{member}", child
    while shape.type_name == "list":
        shape = shape.member
    return shape, owner


def documentation(owner: str) -> str:
    """botocore's documentation of a member and of the shape it points to, tags stripped."""
    service, _, rest = owner.partition(":")
    structure, _, member = rest.partition(".")
    shapes = _raw_model(service)["shapes"]
    outer = shapes[structure]
    ref = outer[member] if outer["type"] == "map" else outer["members"][member]
    text = ref.get("documentation", "") + " " + shapes[ref["shape"]].get("documentation", "")
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def shape_problem(shape: Shape, value: Any) -> str | None:
    """What botocore's model says is wrong with ``value`` for ``shape`` (None: nothing)."""
    meta, kind = shape.metadata, shape.type_name
    if kind == "boolean":
        return None if value in (True, False, "true", "false") else f"{value!r} is not a boolean"
    if kind in ("integer", "long", "float", "double"):
        number = _number(value) if kind in ("integer", "long") else value
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            return f"{value!r} is not a number"
        if "min" in meta and number < meta["min"]:
            return f"{number} is below the minimum {meta['min']}"
        if "max" in meta and number > meta["max"]:
            return f"{number} is above the maximum {meta['max']}"
        return None
    if kind in ("string", "blob", "timestamp"):
        text = str(value).lower() if isinstance(value, bool) else str(value)
        enum = getattr(shape, "enum", None) or []
        if enum and text not in enum:
            return f"{text!r} is not one of {enum if len(enum) <= 12 else f'the {len(enum)} values of {shape.name}'}"
        if len(text) < meta.get("min", 0) or len(text) > meta.get("max", len(text)):
            return f"{len(text)} characters, outside {meta.get('min', 0)}..{meta.get('max', 'any')}"
        if kind == "string" and "pattern" in meta and not regex.fullmatch(meta["pattern"], text):
            return f"{text!r} does not match {meta['pattern']}"
        return None
    return f"a literal where the API takes a {kind} ({shape.name})"


# --- the checker --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Finding:
    stack: str
    logical_id: str
    prop: str
    api: str
    message: str

    @property
    def key(self) -> tuple[str, str, str]:
        return self.stack, self.logical_id, self.prop

    def __str__(self) -> str:
        return f"{self.stack} {self.logical_id} {self.prop} -> {self.api}: {self.message}"


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    unmapped: list[Finding] = field(default_factory=list)
    skipped: list[Finding] = field(default_factory=list)
    checked: int = 0

    def extend(self, other: Report) -> None:
        self.findings += other.findings
        self.unmapped += other.unmapped
        self.skipped += other.skipped
        self.checked += other.checked


def is_intrinsic(value: Any) -> bool:
    """A value CloudFormation computes at deploy time: Ref, Fn::*, or a {{resolve:...}} dynamic reference."""
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        return key == "Ref" or key.startswith("Fn::")
    return isinstance(value, str) and "{{resolve:" in value


def _leaves(value: Any, path: str, parent: dict) -> Iterator[tuple[str, Any, dict]]:
    """(path, value, enclosing object) for every literal and every intrinsic, which ends a branch."""
    if is_intrinsic(value) or not isinstance(value, (dict, list)):
        yield path, value, parent
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from _leaves(child, f"{path}.{key}" if path else key, value)
    else:
        for child in value:
            yield from _leaves(child, f"{path}[]", parent)


def _under(path: str, prefix: str) -> str | None:
    """The rest of ``path`` below ``prefix`` ('' for the prefix itself), or None."""
    if path == prefix:
        return ""
    for sep in (".", "[]"):
        if path.startswith(prefix + sep):
            return path[len(prefix):]
    return None


def _target(resource_type: str, path: str, parent: dict) -> tuple[str, list[str]] | None:
    base, rows = TABLE[resource_type]
    for prefix in sorted(rows, key=len, reverse=True):
        rest = _under(path, prefix)
        if rest is None:
            continue
        target = rows[prefix]
        params = (Param(target),) if isinstance(target, str) else target
        api = next((p.api for p in params if p.when is None or p.when in parent), None)
        return (api, _names(rest)) if api else None
    return base, _names(path)


def _names(path: str) -> list[str]:
    return [part for part in path.replace("[]", "").split(".") if part]


def check_resource(stack: str, logical_id: str, resource: dict) -> Report:
    report, rtype, props = Report(), resource["Type"], resource.get("Properties", {})
    excluded = {**NOT_API["*"], **NOT_API.get(rtype, {})}

    def note(kind: list[Finding], path: str, api: str, message: str) -> None:
        kind.append(Finding(stack, logical_id, path, api, message))

    if rtype not in TABLE:
        note(report.unmapped, "", "", f"no row in TABLE for {rtype}")
        return report
    for path, value, parent in _leaves(props, "", props):
        if any(_under(path, prefix) is not None for prefix in excluded):
            continue
        if is_intrinsic(value):
            note(report.skipped, path, "", "intrinsic: known only at deploy time")
            continue
        target = _target(rtype, path, parent)
        try:
            if target is None:
                raise KeyError(f"no row matches the keys {sorted(parent)}")
            shape, owner = resolve(*target)
        except KeyError as exc:
            if not isinstance(value, bool):  # a boolean carries no pattern or length: nothing to lose
                note(report.unmapped, path, "", f"{value!r}: {exc.args[0]}")
            continue
        report.checked += 1
        problems = [shape_problem(shape, value)] if shape is not None else []
        problems += [rule.check(value, parent, props) for rule in DOCUMENTED.get(owner, ())]
        for problem in filter(None, problems):
            note(report.findings, path, owner, problem)
    return report


def check_template(stack: str, template: dict) -> Report:
    report = Report()
    for logical_id, resource in template.get("Resources", {}).items():
        report.extend(check_resource(stack, logical_id, resource))
    return report
