"""The Slurm accounting database (``stacks/accounting.py``) in moto 5.2.5: patches 11 and 12 of ``moto_patched.py``.

Each makes moto do what AWS does; none deploys anything on moto's behalf.

11. CloudFormation models. moto's CloudFormation has none for ``AWS::RDS::DBCluster``,
    ``AWS::RDS::DBClusterParameterGroup`` or ``AWS::SecretsManager::Secret`` (``parsing.get_model_map()``), so the
    accounting stack's database was never created; its ``AWS::RDS::DBInstance`` model drops ``DBClusterIdentifier``
    (the writer became a lone MySQL instance) and names it ``STACK-LogicalId-SUFFIX``, which is over RDS's 63
    characters for ``NAME-accounting`` (``InvalidDBInstanceIdentifier``); its ``AWS::RDS::DBSubnetGroup`` has no
    physical ID (``Ref`` gave the Python object, ``ListStackResources`` an empty ID) and is stored under the mixed-case
    name while RDS lowercases it, so moto could not delete it again. The patch creates each through moto's own RDS and
    Secrets Manager backends (``create_db_cluster``, ``create_db_cluster_parameter_group``, ``create_db_instance``,
    ``create_secret``), with the identifiers CloudFormation gives them: the ``Ref`` value is the cluster or instance
    identifier, the group's name, the secret's ARN (CloudFormation User Guide, each type's "Return values"); the
    generated names are lowercase (RDS stores identifiers "as a lowercase string", botocore's rds model) and at most
    63 characters (CreateDBCluster/CreateDBInstance constraints). ``GetAtt`` answers the cluster's ``Endpoint.Address``,
    ``Endpoint.Port``, ``ReadEndpoint.Address``, ``DBClusterArn`` and ``DBClusterResourceId``. A generated secret is
    ``GenerateSecretString``'s password, or its ``SecretStringTemplate`` with the password under
    ``GenerateStringKey``. Not modelled: the ``{{resolve:secretsmanager:...}}`` dynamic reference in the cluster's
    ``MasterUserPassword`` reaches moto as written (no RDS call returns a password, so nothing can tell).
    moto's CloudFormation already leaves a ``DeletionPolicy: Retain`` resource in its backend on a stack delete
    (``ResourceMap.delete``); with these models the retained database, groups and secret are really there afterwards.
12. Refusals. AWS refuses to delete what a database still uses; moto deletes it:
    ``DeleteDBSubnetGroup`` of a group a DB cluster or instance uses -> ``InvalidDBSubnetGroupStateFault`` ("The DB
    subnet group cannot be deleted because it's in use.", botocore's rds model);
    ``DeleteDBClusterParameterGroup`` of one a cluster uses -> ``InvalidDBParameterGroupState`` (the model: "can't be
    associated with any DB clusters");
    ``DeleteSecurityGroup`` of a group on a DB instance's network interfaces (the instance's groups, for an Aurora
    instance its cluster's) -> ``DependencyViolation`` (EC2 API Reference, DeleteSecurityGroup: "associated with an
    instance or network interface ... fails with DependencyViolation");
    ``DeleteVpc`` while a security group other than the default one is in the VPC -> ``DependencyViolation`` (EC2 API
    Reference, DeleteVpc: "delete all security groups associated with the VPC (except the default one)"; moto checks
    only subnets, route tables and VPN gateways). This is what keeps ``NAME-network`` from being deleted under the
    retained database's security group.
"""

from __future__ import annotations

import json
import re
from typing import Any

from moto.cloudformation import parsing
from moto.cloudformation.utils import random_suffix
from moto.core.common_models import CloudFormationModel
from moto.core.utils import camelcase_to_underscores
from moto.ec2.exceptions import DependencyViolationError
from moto.ec2.models import ec2_backends
from moto.ec2.models.security_groups import SecurityGroupBackend
from moto.ec2.models.vpcs import VPCBackend
from moto.rds import models as rds
from moto.rds.exceptions import RDSClientError
from moto.secretsmanager.models import FakeSecret, secretsmanager_backends

CLUSTER, INSTANCE = "AWS::RDS::DBCluster", "AWS::RDS::DBInstance"
SUBNET_GROUP, CLUSTER_PARAMETERS = "AWS::RDS::DBSubnetGroup", "AWS::RDS::DBClusterParameterGroup"
SECRET = "AWS::SecretsManager::Secret"
RDS_NAMED = {CLUSTER, INSTANCE, SUBNET_GROUP, CLUSTER_PARAMETERS}

# --- 11. models ----------------------------------------------------------------------------------

_generate_resource_name = parsing.generate_resource_name


def generate_resource_name(resource_type: str, stack_name: str, logical_id: str) -> str:
    """CloudFormation's name for an unnamed RDS resource: lowercase, within the 63 characters of an identifier, no
    double hyphen; the Secrets Manager secret's LOGICALID-SUFFIX."""
    if resource_type in RDS_NAMED:
        suffix = random_suffix().lower()
        head = re.sub(r"-+", "-", f"{stack_name}-{logical_id}".lower())[:63 - len(suffix) - 1].strip("-")
        return f"{head}-{suffix}"
    if resource_type == SECRET:
        return f"{logical_id}-{random_suffix()}"
    return _generate_resource_name(resource_type, stack_name, logical_id)


def _rds(account_id: str, region_name: str) -> rds.RDSBackend:
    return rds.rds_backends[account_id][region_name]


def _name(value: Any) -> Any:
    """A ``Ref`` of a resource moto models without a physical ID gives the object: its name."""
    return getattr(value, "name", value)


def _kwargs(properties: dict[str, Any]) -> dict[str, Any]:
    """CloudFormation's properties are the API's parameters: moto's backend takes them in snake case."""
    return {camelcase_to_underscores(key): _name(value) for key, value in properties.items()}


class AuroraClusterModel(CloudFormationModel):
    """``AWS::RDS::DBCluster``: the model map's entry; the resource is moto's own ``DBCluster``."""

    __module__ = "moto.rds.rehearsal"  # moto's model registry files each model under its service: moto.SERVICE.*

    ATTRIBUTES = ("Endpoint.Address", "Endpoint.Port", "ReadEndpoint.Address", "DBClusterArn", "DBClusterResourceId")

    @staticmethod
    def cloudformation_name_type() -> str:
        return "DBClusterIdentifier"

    @staticmethod
    def cloudformation_type() -> str:
        return CLUSTER

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in cls.ATTRIBUTES

    @classmethod
    def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                        account_id: str, region_name: str, **kwargs: Any) -> rds.DBCluster:
        args = _kwargs(cloudformation_json.get("Properties", {}))
        args["db_cluster_identifier"] = str(resource_name).lower()
        return _rds(account_id, region_name).create_db_cluster(args)

    @classmethod
    def delete_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                        account_id: str, region_name: str) -> None:
        _rds(account_id, region_name).delete_db_cluster(resource_name)


def _cluster_attribute(self: rds.DBCluster, attribute: str) -> Any:
    from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

    values = {"Endpoint.Address": self.endpoint, "Endpoint.Port": str(self.port),
              "ReadEndpoint.Address": self.reader_endpoint, "DBClusterArn": self.db_cluster_arn,
              "DBClusterResourceId": self.db_cluster_resource_id}
    if attribute not in values:
        raise UnformattedGetAttTemplateException()
    return values[attribute]


class SecretModel(CloudFormationModel):
    """``AWS::SecretsManager::Secret``: the model map's entry; the resource is moto's own ``FakeSecret``."""

    __module__ = "moto.secretsmanager.rehearsal"

    @staticmethod
    def cloudformation_name_type() -> str:
        return "Name"

    @staticmethod
    def cloudformation_type() -> str:
        return SECRET

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr == "Id"

    @classmethod
    def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                        account_id: str, region_name: str, **kwargs: Any) -> FakeSecret:
        props = cloudformation_json.get("Properties", {})
        backend = secretsmanager_backends[account_id][region_name]
        value = props.get("SecretString")
        generate = props.get("GenerateSecretString")
        if value is None and generate is not None:
            password = json.loads(backend.get_random_password(
                password_length=int(generate.get("PasswordLength", 32)),
                exclude_characters=generate.get("ExcludeCharacters", ""),
                exclude_numbers=bool(generate.get("ExcludeNumbers")),
                exclude_punctuation=bool(generate.get("ExcludePunctuation")),
                exclude_uppercase=bool(generate.get("ExcludeUppercase")),
                exclude_lowercase=bool(generate.get("ExcludeLowercase")),
                include_space=bool(generate.get("IncludeSpace")),
                require_each_included_type=bool(generate.get("RequireEachIncludedType", True))))["RandomPassword"]
            if generate.get("SecretStringTemplate"):
                value = json.dumps({**json.loads(generate["SecretStringTemplate"]),
                                    generate["GenerateStringKey"]: password})
            else:
                value = password
        secret, _ = backend._add_secret(resource_name, secret_string=value, description=props.get("Description"),
                                        tags=props.get("Tags"), kms_key_id=props.get("KmsKeyId"))
        return secret

    @classmethod
    def delete_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                        account_id: str, region_name: str) -> None:
        # the service's default recovery window (30 days); never exercised here: the accounting secret is retained
        secretsmanager_backends[account_id][region_name].delete_secret(
            resource_name, recovery_window_in_days=30, force_delete_without_recovery=False)


_instance_from_cfn = rds.DBInstance.create_from_cloudformation_json.__func__


def instance_from_cfn(cls: type, resource_name: str, cloudformation_json: dict[str, Any], account_id: str,
                      region_name: str, **kwargs: Any) -> rds.DBInstance:
    props = cloudformation_json.get("Properties", {})
    if not props.get("DBClusterIdentifier"):
        return _instance_from_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
    args = _kwargs(props)  # an Aurora instance: its cluster holds storage, engine version, groups and credentials
    args["db_instance_identifier"] = str(resource_name).lower()
    return _rds(account_id, region_name).create_db_instance(args)


def subnet_group_from_cfn(cls: type, resource_name: str, cloudformation_json: dict[str, Any], account_id: str,
                          region_name: str, **kwargs: Any) -> rds.DBSubnetGroup:
    props = cloudformation_json["Properties"]
    subnets = [ec2_backends[account_id][region_name].get_subnet(s) for s in props["SubnetIds"]]
    return _rds(account_id, region_name).create_subnet_group(str(resource_name).lower(),
                                                             props["DBSubnetGroupDescription"], subnets,
                                                             props.get("Tags"))


def parameter_group_from_cfn(cls: type, resource_name: str, cloudformation_json: dict[str, Any], account_id: str,
                             region_name: str, **kwargs: Any) -> rds.DBClusterParameterGroup:
    props = cloudformation_json["Properties"]
    backend = _rds(account_id, region_name)
    group = backend.create_db_cluster_parameter_group(str(resource_name).lower(), props["Family"],
                                                      props["Description"], props.get("Tags"))
    group.update_cluster_parameters([{"ParameterName": k, "ParameterValue": str(v), "ApplyMethod": "pending-reboot"}
                                     for k, v in (props.get("Parameters") or {}).items()])
    return group


def _install_models() -> None:
    parsing.generate_resource_name = generate_resource_name
    rds.DBInstance.create_from_cloudformation_json = classmethod(instance_from_cfn)
    rds.DBSubnetGroup.create_from_cloudformation_json = classmethod(subnet_group_from_cfn)
    rds.DBSubnetGroup.physical_resource_id = property(lambda self: self.name)
    rds.DBClusterParameterGroup.cloudformation_type = staticmethod(lambda: CLUSTER_PARAMETERS)
    rds.DBClusterParameterGroup.cloudformation_name_type = staticmethod(lambda: "DBClusterParameterGroupName")
    rds.DBClusterParameterGroup.create_from_cloudformation_json = classmethod(parameter_group_from_cfn)
    rds.DBClusterParameterGroup.physical_resource_id = property(lambda self: self.name)
    rds.DBClusterParameterGroup.delete = lambda self, a, r: _rds(a, r).delete_db_cluster_parameter_group(self.name)
    rds.DBCluster.physical_resource_id = property(lambda self: self.db_cluster_identifier)
    rds.DBCluster.get_cfn_attribute = _cluster_attribute
    rds.DBCluster.is_created = lambda self: True
    rds.DBCluster.delete = lambda self, a, r: _rds(a, r).delete_db_cluster(self.db_cluster_identifier)
    FakeSecret.physical_resource_id = property(lambda self: self.arn)
    FakeSecret.is_created = lambda self: True
    for cache in (parsing.get_model_list, parsing.get_model_map, parsing.get_name_type_map):
        cache.cache_clear()  # the model map is CloudFormationModel's subclasses, read once


# --- 12. refusals --------------------------------------------------------------------------------


class InvalidDBSubnetGroupStateFault(RDSClientError):
    def __init__(self, name: str) -> None:
        super().__init__("InvalidDBSubnetGroupStateFault",
                         f"The DB subnet group cannot be deleted because it's in use. ({name})")


class InvalidDBParameterGroupState(RDSClientError):
    def __init__(self, name: str, cluster: str) -> None:
        super().__init__("InvalidDBParameterGroupState",
                         f"One or more database clusters are still members of this parameter group {name} ({cluster})")


def _subnet_groups_in_use(backend: rds.RDSBackend) -> set[str]:
    """The subnet groups of the backend's DB clusters and instances (moto pops a deleted one; an instance keeps its
    group in ``_db_subnet_group_name``, ``db_subnet_group_name`` is write-only)."""
    used = [c.db_subnet_group_name for c in backend.clusters.values()]
    used += [getattr(db, "_db_subnet_group_name", None) for db in backend.databases.values()]
    return {str(name).lower() for name in used if name}


_delete_subnet_group = rds.RDSBackend.delete_subnet_group
_delete_cluster_parameters = rds.RDSBackend.delete_db_cluster_parameter_group
_delete_security_group = SecurityGroupBackend.delete_security_group
_delete_vpc = VPCBackend.delete_vpc


def delete_subnet_group(self: rds.RDSBackend, subnet_name: str) -> Any:
    if subnet_name.lower() in _subnet_groups_in_use(self):
        raise InvalidDBSubnetGroupStateFault(subnet_name)
    return _delete_subnet_group(self, subnet_name)


def delete_cluster_parameters(self: rds.RDSBackend, db_cluster_parameter_group_name: str) -> None:
    users = [c.db_cluster_identifier for c in self.clusters.values()
             if str(c.parameter_group).lower() == db_cluster_parameter_group_name.lower()]
    if users:
        raise InvalidDBParameterGroupState(db_cluster_parameter_group_name, ", ".join(users))
    return _delete_cluster_parameters(self, db_cluster_parameter_group_name)


def delete_security_group(self: Any, name: str | None = None, group_id: str | None = None) -> None:
    backend = rds.rds_backends[self.account_id][self.region_name]
    users = [db.db_instance_identifier for db in backend.databases.values()
             if group_id and group_id in (db.vpc_security_group_ids or [])]
    if users:
        raise DependencyViolationError(f"resource {group_id} has a dependent object (the network interfaces of DB "
                                       f"instance {', '.join(users)})")
    return _delete_security_group(self, name=name, group_id=group_id)


def delete_vpc(self: Any, vpc_id: str) -> Any:
    others = [g.id for g in self.groups.get(vpc_id, {}).values() if g.name != "default"]
    if others:
        raise DependencyViolationError(f"The vpc '{vpc_id}' has dependencies and cannot be deleted. "
                                       f"(security groups {', '.join(sorted(others))})")
    return _delete_vpc(self, vpc_id)


def _install_refusals() -> None:
    rds.RDSBackend.delete_subnet_group = delete_subnet_group
    rds.RDSBackend.delete_db_cluster_parameter_group = delete_cluster_parameters
    SecurityGroupBackend.delete_security_group = delete_security_group
    VPCBackend.delete_vpc = delete_vpc


def install() -> None:
    """Apply patches 11 and 12."""
    _install_models()
    _install_refusals()
