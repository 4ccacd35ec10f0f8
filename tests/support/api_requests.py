"""A resource's properties turned into the whole API request CloudFormation sends, and botocore's own
parameter validation run on it (``botocore.validate.ParamValidator``: required members, unknown members,
types, minimum lengths and values). :mod:`support.api_rules` checks each literal leaf (patterns, enums,
maximums); this checks the request as one object, so a missing required member or a value of the wrong
kind is caught too.

The mapping from CloudFormation properties to API members is written out in :data:`REQUESTS` for each resource
type: every top-level property is named (the API member it becomes, or why it is none), and the renamed members
below them. Any other nested key must be an API member of the same name (first letter's case ignored). A
property the mapping does not name, or a nested key the API lacks, is reported as unmapped: never passed
silently.

Intrinsics (``Ref``, ``Fn::*``) have values only at deploy time: each becomes a stand-in of the kind the API
member takes (so the request's shape is still checked) and is not judged itself.

AWS PCS (``AWS::PCS::*``): the CloudFormation schemas cfn-lint ships (``aws-pcs-cluster``, ``-computenodegroup``,
``-queue``) against botocore's ``pcs`` model (CreateCluster, CreateComputeNodeGroup, CreateQueue).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from botocore.loaders import Loader
from botocore.model import ServiceModel, Shape
from botocore.validate import ParamValidator

from support.api_documented import is_intrinsic


@dataclass(frozen=True)
class Request:
    """How one resource type becomes one API call."""

    operation: str
    """``service:Operation``."""
    top: dict[str, str]
    """Every writable CloudFormation property -> the API member it becomes."""
    renames: dict[str, str] = field(default_factory=dict)
    """Nested renames: CloudFormation path (lists as ``[]``) -> the API member name at that place."""
    not_api: dict[str, str] = field(default_factory=dict)
    """Writable properties that become no member of the call -> why."""
    generated: dict[str, str] = field(default_factory=dict)
    """API members CloudFormation fills in when the property is absent (a generated name) -> a stand-in value."""


REQUESTS: dict[str, Request] = {
    # https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-pcs-cluster.html;
    # without Name, CloudFormation generates one (the schema does not require it, the API does).
    "AWS::PCS::Cluster": Request(
        "pcs:CreateCluster",
        top={"Name": "clusterName", "Networking": "networking", "Scheduler": "scheduler", "Size": "size",
             "SlurmConfiguration": "slurmConfiguration", "Tags": "tags"},
        generated={"clusterName": "cfn-generated-name"},
    ),
    # aws-resource-pcs-computenodegroup.html: ClusterId is the API's clusterIdentifier (an id or a name), the
    # launch template's TemplateId its id.
    "AWS::PCS::ComputeNodeGroup": Request(
        "pcs:CreateComputeNodeGroup",
        top={"Name": "computeNodeGroupName", "ClusterId": "clusterIdentifier", "AmiId": "amiId",
             "IamInstanceProfileArn": "iamInstanceProfileArn", "SubnetIds": "subnetIds",
             "PurchaseOption": "purchaseOption", "CustomLaunchTemplate": "customLaunchTemplate",
             "InstanceConfigs": "instanceConfigs", "ScalingConfiguration": "scalingConfiguration",
             "SpotOptions": "spotOptions", "SlurmConfiguration": "slurmConfiguration",
             "NodeLifecycleActions": "nodeLifecycleActions", "Tags": "tags"},
        renames={"CustomLaunchTemplate.TemplateId": "id"},
        generated={"computeNodeGroupName": "cfn-generated"},
    ),
    # aws-resource-pcs-queue.html
    "AWS::PCS::Queue": Request(
        "pcs:CreateQueue",
        top={"Name": "queueName", "ClusterId": "clusterIdentifier",
             "ComputeNodeGroupConfigurations": "computeNodeGroupConfigurations",
             "SlurmConfiguration": "slurmConfiguration", "Tags": "tags"},
        generated={"queueName": "cfn-generated"},
    ),
    # HyperPod task governance: aws-resource-sagemaker-clusterschedulerconfig.html and -computequota.html; the
    # properties are the API's members by name (sagemaker CreateClusterSchedulerConfig, CreateComputeQuota).
    "AWS::SageMaker::ClusterSchedulerConfig": Request(
        "sagemaker:CreateClusterSchedulerConfig",
        top={"Name": "Name", "ClusterArn": "ClusterArn", "SchedulerConfig": "SchedulerConfig",
             "Description": "Description", "Tags": "Tags"},
    ),
    "AWS::SageMaker::ComputeQuota": Request(
        "sagemaker:CreateComputeQuota",
        top={"Name": "Name", "ClusterArn": "ClusterArn", "ComputeQuotaConfig": "ComputeQuotaConfig",
             "ComputeQuotaTarget": "ComputeQuotaTarget", "ActivationState": "ActivationState",
             "Description": "Description", "Tags": "Tags"},
    ),
    # HyperPod on EKS (stacks/hyperpod_eks.py). aws-resource-sagemaker-cluster.html: the properties are CreateCluster's
    # members by name; aws-resource-eks-cluster.html, -accessentry.html, -addon.html against eks CreateCluster,
    # CreateAccessEntry (its access policies are AssociateAccessPolicy calls after it) and CreateAddon.
    "AWS::SageMaker::Cluster": Request(
        "sagemaker:CreateCluster",
        top={k: k for k in ("ClusterName", "InstanceGroups", "RestrictedInstanceGroups", "VpcConfig", "Tags",
                            "Orchestrator", "NodeRecovery", "NodeProvisioningMode", "ClusterRole", "AutoScaling",
                            "TieredStorageConfig")},
    ),
    "AWS::EKS::Cluster": Request(
        "eks:CreateCluster",
        top={"Name": "name", "Version": "version", "RoleArn": "roleArn", "ResourcesVpcConfig": "resourcesVpcConfig",
             "KubernetesNetworkConfig": "kubernetesNetworkConfig",
             "EncryptionConfig": "encryptionConfig", "AccessConfig": "accessConfig",
             "UpgradePolicy": "upgradePolicy", "ZonalShiftConfig": "zonalShiftConfig",
             "ComputeConfig": "computeConfig", "StorageConfig": "storageConfig",
             "BootstrapSelfManagedAddons": "bootstrapSelfManagedAddons", "DeletionProtection": "deletionProtection"},
        not_api={"Logging": "CloudFormation's {ClusterLogging: {EnabledTypes: [{Type}]}} becomes the API's list of "
                            "{types, enabled}; each Type is checked against the API's enum by support.api_rules",
                 "Tags": "CloudFormation's tag list where CreateCluster takes a map; the project tag is checked on "
                         "the resources that take a list"},
        generated={"name": "cfn-generated"},
    ),
    "AWS::EKS::AccessEntry": Request(
        "eks:CreateAccessEntry",
        top={"ClusterName": "clusterName", "PrincipalArn": "principalArn", "KubernetesGroups": "kubernetesGroups",
             "Username": "username", "Type": "type"},
        not_api={"AccessPolicies": "AssociateAccessPolicy calls after the entry (checked leaf by leaf by "
                                   "support.api_rules)",
                 "Tags": "CloudFormation's tag list where the API takes a map"},
    ),
    "AWS::EKS::Addon": Request(
        "eks:CreateAddon",
        top={"ClusterName": "clusterName", "AddonName": "addonName", "AddonVersion": "addonVersion",
             "ServiceAccountRoleArn": "serviceAccountRoleArn", "ResolveConflicts": "resolveConflicts",
             "ConfigurationValues": "configurationValues", "PodIdentityAssociations": "podIdentityAssociations",
             "NamespaceConfig": "namespaceConfig"},
        not_api={"Tags": "CloudFormation's tag list where the API takes a map",
                 "PreserveOnDelete": "CloudFormation's own: whether DeleteAddon keeps the software (preserve)"},
    ),
}


@dataclass(frozen=True)
class Problem:
    path: str
    """The CloudFormation property path ('' for the request as a whole)."""
    message: str
    unmapped: bool = False


@cache
def _model(service: str) -> ServiceModel:
    return ServiceModel(Loader().load_service_model(service, "service-2"), service)


def input_shape(operation: str) -> Shape:
    service, _, name = operation.partition(":")
    return _model(service).operation_model(name).input_shape


def _stand_in(shape: Shape) -> Any:
    """A value of the kind ``shape`` takes, long or large enough for its minimum (for an intrinsic)."""
    kind, meta = shape.type_name, shape.metadata
    if kind == "list":
        return [_stand_in(shape.member)] * max(meta.get("min", 1), 1)
    if kind == "structure":
        return {name: _stand_in(member) for name, member in shape.members.items() if name in shape.required_members}
    if kind == "map":
        return {}
    if kind in ("integer", "long"):
        return max(meta.get("min", 1), 1)
    if kind in ("float", "double"):
        return float(max(meta.get("min", 1), 1))
    if kind == "boolean":
        return True
    enum = getattr(shape, "enum", None)
    return enum[0] if enum else "x" * max(meta.get("min", 1), 1)


def _member_named(shape: Shape, key: str) -> str | None:
    members = shape.members
    for candidate in (key, key[:1].lower() + key[1:], key[:1].upper() + key[1:]):
        if candidate in members:
            return candidate
    return None


def _convert(value: Any, shape: Shape, path: str, request: Request, problems: list[Problem]) -> Any:
    """The API form of a CloudFormation value at ``path`` for ``shape`` (member names mapped, numbers as given)."""
    if is_intrinsic(value):
        return _stand_in(shape)
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict):
        out = {}
        for key, child in value.items():
            where = f"{path}.{key}" if path else key
            name = request.renames.get(where) or _member_named(shape, key)
            if name is None or name not in shape.members:
                problems.append(Problem(where, f"{shape.name} has no member for {key!r} ({request.operation})",
                                        unmapped=True))
                continue
            out[name] = _convert(child, shape.members[name], where, request, problems)
        return out
    if kind == "list" and isinstance(value, list):
        return [_convert(child, shape.member, f"{path}[]", request, problems) for child in value]
    if kind == "map" and isinstance(value, dict):
        return {k: _convert(v, shape.value, f"{path}.{k}", request, problems) for k, v in value.items()}
    if kind in ("integer", "long") and isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)  # CloudFormation passes numbers written as strings on as numbers
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    return value


def build(resource_type: str, props: dict) -> tuple[dict, list[Problem]]:
    """The request CloudFormation would send for ``props``, and what could not be mapped."""
    request = REQUESTS[resource_type]
    shape = input_shape(request.operation)
    problems: list[Problem] = []
    params: dict[str, Any] = {}
    for key, value in props.items():
        if key in request.not_api:
            continue
        name = request.top.get(key)
        if name is None:
            problems.append(Problem(key, f"no API member named for {key!r} in REQUESTS ({request.operation})",
                                    unmapped=True))
            continue
        params[name] = _convert(value, shape.members[name], key, request, problems)
    for name, stand_in in request.generated.items():
        params.setdefault(name, stand_in)
    return params, problems


def validate(resource_type: str, props: dict) -> list[Problem]:
    """Unmapped properties, then botocore's parameter validation of the whole request (one problem per error)."""
    params, problems = build(resource_type, props)
    report = ParamValidator().validate(params, input_shape(REQUESTS[resource_type].operation))
    if report.has_errors():
        problems += [Problem("", line.strip()) for line in report.generate_report().splitlines() if line.strip()]
    return problems
