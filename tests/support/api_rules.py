"""Would the AWS APIs accept these templates? A generic checker keyed by CloudFormation resource type.

Every literal string or number under a resource's ``Properties`` is mapped to the AWS API parameter it
becomes -- :data:`TABLE` names the create call per resource type, whose members mirror the CloudFormation
property names, plus the renames where they differ -- and checked against that parameter's constraints in
botocore's service model (``pattern`` as a full match, ``min``/``max`` length or value, ``enum``), loaded
offline with ``botocore.loaders``. Where the model states no constraint but the API's documentation does,
:data:`DOCUMENTED` (:mod:`support.api_documented`) adds the rule with its source; a rule quoting botocore's
own documentation is checked against that text (``tests/stacks/test_deployability.py``).

Skipped on purpose, and listed in each :class:`Report`: CloudFormation intrinsics (``Ref``, ``Fn::*``)
and dynamic references (``{{resolve:...}}``), whose values exist only at deploy time; subtrees in
:data:`NOT_API` (policy documents, ParallelCluster's own configuration), which other checks own.
A literal that maps to no API parameter is a coverage gap (:attr:`Report.unmapped`), never silently passed.

Resource types in :data:`support.api_requests.REQUESTS` (AWS PCS) are also turned into their whole create request
and run through botocore's own parameter validation (required members, types), wherever a template has them.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import regex  # botocore's patterns use \p{L}-style classes, which the standard re module lacks
from botocore.loaders import Loader
from botocore.model import ServiceModel, Shape

from support import api_requests
from support.api_documented import DOCUMENTED, Rule, is_intrinsic, number

__all__ = ["DOCUMENTED", "EXTERNAL_APIS", "NOT_API", "TABLE", "Finding", "Param", "Report", "Rule", "check_resource",
           "check_template", "documentation", "is_intrinsic", "resolve", "shape_problem"]


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
    # HyperPod on EKS (stacks/hyperpod_eks.py): EKS's create calls, members by name (first letter's case aside)
    "AWS::EKS::Cluster": ("eks:CreateCluster", {
        "Logging.ClusterLogging.EnabledTypes[].Type": "eks:CreateCluster.logging.clusterLogging.types"}),
    "AWS::EKS::AccessEntry": ("eks:CreateAccessEntry", {
        "AccessPolicies[].PolicyArn": "eks:AssociateAccessPolicy.policyArn",
        "AccessPolicies[].AccessScope": "eks:AssociateAccessPolicy.accessScope"}),
    "AWS::EKS::Addon": ("eks:CreateAddon", {}),
    "Custom::AWSCDK-EKS-HelmChart": ("cdk:HelmChart", {}),
    # HyperPod task governance (fmcluster.kubernetes.governance): the API members by name
    "AWS::SageMaker::ClusterSchedulerConfig": ("sagemaker:CreateClusterSchedulerConfig", {}),
    "AWS::SageMaker::ComputeQuota": ("sagemaker:CreateComputeQuota", {}),
    "AWS::CloudFormation::Stack": ("cloudformation:CreateStack", {}),
    "AWS::Lambda::LayerVersion": ("lambda:PublishLayerVersion", {}),
    "AWS::Lambda::Function": ("lambda:CreateFunction", {
        "Tags[].Key": "lambda:CreateFunction.Tags.Key", "Tags[].Value": "lambda:CreateFunction.Tags.Value"}),
    "Custom::CDKBucketDeployment": ("cdk:BucketDeployment", {}),
    "Custom::PclusterCluster": ("pcluster:CreateCluster", {
        "ClusterName": "pcluster:CreateCluster.clusterName", "DeletionPolicy": "pcluster:CustomResource.DeletionPolicy"}),
    # AWS PCS: CloudFormation's names where the API's differ (support.api_requests.REQUESTS maps every property).
    "AWS::PCS::Cluster": ("pcs:CreateCluster", {"Name": "pcs:CreateCluster.clusterName"}),
    # the Slurm accounting database (stacks/accounting.py): RDS's create calls mirror the properties by name
    "AWS::RDS::DBSubnetGroup": ("rds:CreateDBSubnetGroup", {}),
    "AWS::RDS::DBClusterParameterGroup": ("rds:CreateDBClusterParameterGroup", {
        "Family": "rds:CreateDBClusterParameterGroup.DBParameterGroupFamily"}),
    "AWS::RDS::DBCluster": ("rds:CreateDBCluster", {}),
    "AWS::RDS::DBInstance": ("rds:CreateDBInstance", {}),
    "AWS::SecretsManager::Secret": ("secretsmanager:CreateSecret", {
        "GenerateSecretString.PasswordLength": "secretsmanager:GetRandomPassword.PasswordLength",
        "GenerateSecretString.ExcludePunctuation": "secretsmanager:GetRandomPassword.ExcludePunctuation"}),
    "AWS::PCS::ComputeNodeGroup": ("pcs:CreateComputeNodeGroup", {
        "Name": "pcs:CreateComputeNodeGroup.computeNodeGroupName",
        "ClusterId": "pcs:CreateComputeNodeGroup.clusterIdentifier",
        "CustomLaunchTemplate.TemplateId": "pcs:CreateComputeNodeGroup.customLaunchTemplate.id"}),
    "AWS::PCS::Queue": ("pcs:CreateQueue", {
        "Name": "pcs:CreateQueue.queueName", "ClusterId": "pcs:CreateQueue.clusterIdentifier"}),
    # ParallelCluster's bootstrap pointers (stacks/parallelcluster.py): PutParameter's members mirror the properties
    "AWS::SSM::Parameter": ("ssm:PutParameter", {}),
}

EXTERNAL_APIS = {"pcluster": "the ParallelCluster API and custom resource (not in botocore): DOCUMENTED rules only",
                 "cdk": "aws-cdk-lib's own custom resources (not in botocore): their handler reads the properties"}

NOT_API: dict[str, dict[str, str]] = {
    # resource type ("*" for every type): {property path: why its literals are not checked here}
    "*": {"PolicyDocument": "an IAM policy document: IAM's own grammar, checked by cfn-lint and cdk-nag",
          "AssumeRolePolicyDocument": "an IAM policy document: IAM's own grammar, checked by cfn-lint and cdk-nag",
          "Policies[].PolicyDocument": "an IAM policy document: IAM's own grammar, checked by cfn-lint and cdk-nag",
          "KeyPolicy": "a KMS key policy document: IAM's grammar, checked by cfn-lint and cdk-nag"},
    "AWS::RDS::DBClusterParameterGroup": {
        "Parameters": "a map of MySQL parameter names (rds:ModifyDBClusterParameterGroup takes them as a list)"},
    "AWS::SecretsManager::Secret": {
        "GenerateSecretString.SecretStringTemplate": "CloudFormation's own: the JSON the generated password goes into",
        "GenerateSecretString.GenerateStringKey": "CloudFormation's own: the key of that JSON the password goes to"},
    "Custom::PclusterCluster": {
        "ClusterConfiguration": "ParallelCluster's own schema checks it (tests/stacks/test_parallelcluster.py)",
        "ServiceToken": "the provider's Lambda ARN, a CloudFormation custom-resource field"},
    "AWS::Lambda::Function": {
        "Environment.Variables": "the function's own variable names (a map), set by aws-cdk-lib for its handler"},
    "AWS::SSM::Parameter": {
        "Tags": "CloudFormation's tag map (key: value) where ssm:AddTagsToResource takes a Tag list; the same project "
                "tag is checked on every other resource that carries it"},
    "Custom::CDKBucketDeployment": {
        key: "aws-cdk-lib's bucket-deployment handler reads it (CDK writes every one); its S3 calls use them as given"
        for key in ("DestinationBucketKeyPrefix", "DestinationBucketName", "OutputObjectKeys", "Prune", "RetainOnDelete",
                    "ServiceToken", "SourceBucketNames", "SourceObjectKeys", "WaitForDistributionInvalidation")},
    "AWS::SageMaker::Cluster": {
        "InstanceGroups[].KubernetesConfig.Labels": "a map keyed by Kubernetes label keys (dots and slashes); "
                                                    "fmcluster.config.hyperpod_eks checks keys and values"},
    "Custom::AWSCDK-EKS-HelmChart": {
        key: "aws-cdk-lib's kubectl handler reads it (helm upgrade --install arguments); no AWS API takes it"
        for key in ("ClusterName", "RoleArn", "Release", "ChartAssetURL", "Namespace", "Values", "Wait", "Timeout",
                    "CreateNamespace", "SkipCrds", "Atomic", "ServiceToken", "Chart", "Version", "Repository")},
    "AWS::CloudFormation::Stack": {
        "Parameters": "parameters of the nested template (ParallelCluster's provider), which declares their rules"},
}


# --- botocore -----------------------------------------------------------------------------------------

@cache
def _raw_model(service: str) -> dict:
    return Loader().load_service_model(service, "service-2")


@cache
def service_model(service: str) -> ServiceModel:
    return ServiceModel(_raw_model(service), service)


def _member(shape: Shape, name: str, keys: list[tuple[str, Shape]] | None = None) -> tuple[str, Shape]:
    """A structure's member by name, the first letter's case ignored; a map's key or value for Key/Value.

    With ``keys``, any other name under a map is one of its keys (a CloudFormation map property such as PCS's
    ``Tags``): the name is recorded there with the map's key shape, and the value's shape is returned."""
    if shape.type_name == "map" and name.lower() in ("key", "value"):
        return name.lower(), shape.key if name.lower() == "key" else shape.value
    if shape.type_name == "map" and keys is not None:
        keys.append((name, shape.key))
        return "value", shape.value
    members = getattr(shape, "members", {})
    for candidate in (name, name[:1].lower() + name[1:], name[:1].upper() + name[1:]):
        if candidate in members:
            return candidate, members[candidate]
    raise KeyError(f"{shape.name} has no member {name!r}")


def resolve(api: str, more: list[str] = (), keys: list[tuple[str, Shape]] | None = None) -> tuple[Shape | None, str]:
    """The shape an API parameter (plus further member names) lands in, and where: ``service:Owner.member``.
    With ``keys``, names in ``more`` under a map are its keys (see :func:`_member`)."""
    service, _, rest = api.partition(":")
    operation, *members = rest.split(".")
    if service in EXTERNAL_APIS:
        return None, api + "".join(f".{m}" for m in more)
    shape = service_model(service).operation_model(operation).input_shape
    owner = f"{service}:{shape.name}"
    for i, name in enumerate([*members, *more]):
        while shape.type_name == "list":
            shape = shape.member
        member, child = _member(shape, name, keys if i >= len(members) else None)
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
        n = number(value) if kind in ("integer", "long") else value
        if isinstance(n, bool) or not isinstance(n, (int, float)):
            return f"{value!r} is not a number"
        if "min" in meta and n < meta["min"]:
            return f"{n} is below the minimum {meta['min']}"
        if "max" in meta and n > meta["max"]:
            return f"{n} is above the maximum {meta['max']}"
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
        keys: list[tuple[str, Shape]] = []
        try:
            if target is None:
                raise KeyError(f"no row matches the keys {sorted(parent)}")
            shape, owner = resolve(*target, keys=keys)
        except KeyError as exc:
            if not isinstance(value, bool):  # a boolean carries no pattern or length: nothing to lose
                note(report.unmapped, path, "", f"{value!r}: {exc.args[0]}")
            continue
        report.checked += 1
        problems = [shape_problem(shape, value)] if shape is not None else []
        problems += [rule.check(value, parent, props) for rule in DOCUMENTED.get(owner, ())]
        problems += [f"map key: {p}" for key, key_shape in keys if (p := shape_problem(key_shape, key))]
        for problem in filter(None, problems):
            note(report.findings, path, owner, problem)
    if rtype in api_requests.REQUESTS:
        operation = api_requests.REQUESTS[rtype].operation
        for p in api_requests.validate(rtype, props):
            if p.unmapped:
                if not any(_under(f.prop, p.path) is not None for f in report.unmapped):  # said once per gap
                    note(report.unmapped, p.path, operation, p.message)
            else:
                note(report.findings, p.path, operation, f"botocore: {p.message}")
    return report


def check_template(stack: str, template: dict) -> Report:
    report = Report()
    for logical_id, resource in template.get("Resources", {}).items():
        report.extend(check_resource(stack, logical_id, resource))
    return report
