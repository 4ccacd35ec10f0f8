"""``moto_server`` for the deploy rehearsal, with gaps of moto 5.2.5 closed (its CloudFormation, and what the
accounting database needs of its RDS and EC2).

Run as ``python tests/rehearsal/moto_patched.py -H 127.0.0.1 -p PORT``. Each patch makes moto do
what CloudFormation does; none of them deploys anything on moto's behalf:

1. ``ExecuteChangeSet`` (the CDK CLI's default deploy method) never builds the stack's Outputs or
   registers its Exports: ``ChangeSet.apply`` updates the resource map but the stack keeps the
   output map of its empty creation template, so ``DescribeStacks`` shows no Outputs and
   ``ListExports`` nothing (``create_stack`` does both). It also ignores ``StackName`` and takes the
   last change set of that name in the Region -- the CLI names every change set
   ``cdk-deploy-change-set``. The patch executes the named stack's change set, then builds the
   outputs and exports as ``create_stack`` does; a change-set stack also sees the Region's exports
   (``Fn::ImportValue``).
2. ``AWS::KMS::Key``: moto hands CloudFormation's ``Key``/``Value`` tags to the KMS tagger, which
   wants ``TagKey``/``TagValue`` -> ``KeyError: 'TagKey'``, a 500 on every stack with a tagged key
   (CDK tags every key with the project's tags); and it stores ``KeyPolicy`` as the template's
   object where the KMS API keeps a JSON string, so ``DescribeKey`` of that key is a 500.
3. ``Fn::GetStackOutput`` (CDK's weak cross-stack references, ``@aws-cdk/core:defaultCrossStackReferences:
   weak`` in cdk.json) is not in moto's ``clean_json``: the intrinsic reached the resources as a
   literal dict. The patch reads the named output of the named stack in the named Region, and
   fails like CloudFormation when the stack or output does not exist. An output whose value moto
   could not compute (it references a resource type moto skips) stays unresolved, as before.
4. ``Fn::GetAtt`` of a resource whose type moto skips fails the whole stack ("references undefined
   resource"), so a stack whose other resources moto can create never deploys. The patch answers
   with a marked placeholder: ``arn:aws:moto-skipped:REGION:ACCOUNT:LOGICAL_ID/ATTRIBUTE`` for an
   ``Arn`` attribute (IAM policies in moto must name ARNs), ``moto-skipped:LOGICAL_ID.ATTRIBUTE``
   otherwise. ``Ref`` of such a resource keeps moto's answer (no value). The rehearsal names every
   output that reads a skipped resource instead of checking its value.
6. ``Fn::ImportValue`` (the cluster stack's strong references to the network and storage stacks) of an export
   whose value reads a resource moto skipped: moto registers the export with no value and then reports it
   missing. The patch answers with a marked placeholder, ``moto-skipped:export/NAME``, as patch 4 does for
   ``Fn::GetAtt``; an export that does not exist still fails, as in CloudFormation.
7. Exports in use: CloudFormation refuses to delete a stack whose export another stack imports ("Export X
   cannot be deleted as it is in use by Y") and to update a stack so that such an export goes away ("Cannot
   update export X as it is in use by Y") -- the protection strong references give (AWS CloudFormation User
   Guide, "Referencing exported outputs": you can't delete a stack or modify an output value that another
   stack imports). moto checks neither; the patch refuses both. (A changed value of an export in use, as when
   the resource behind it is replaced, is not checked: moto's update does not tell.)
8. Change sets by stack: ``DescribeChangeSet`` and ``DeleteChangeSet`` ignore ``StackName`` and take the
   first change set of that name in the Region (the CLI names every one ``cdk-deploy-change-set``), and an
   unknown one is a ``ValidationError``. A second deploy deletes the stack's old change set and waits for
   ``ChangeSetNotFound`` (botocore's CloudFormation model: ``ChangeSetNotFoundException``, code
   ``ChangeSetNotFound``), so it never ends. The patch finds the named stack's change set and answers
   ``ChangeSetNotFound`` for one that does not exist (``DeleteChangeSet`` of one that does not exist, which
   the CLI sends "if it exists" and whose documented errors have no not-found, does nothing).
9. An update that keeps an SSM-typed parameter (``UsePreviousValue``, as the CLI sends CDK's
   ``BootstrapVersion``) hands moto the parameter's last *value*, which moto then looks up as an SSM
   parameter name: ``AttributeError`` (a 500) on every second deploy. CloudFormation resolves the parameter
   again from its name; the patch gives moto the name back (the template's default).
10. Termination protection: moto has no ``UpdateTerminationProtection`` (the CDK CLI calls it for every protected
   stack) and deletes a protected stack anyway; CloudFormation refuses. ``moto_teardown.py`` adds both, explained
   there (the unit tests of ``fmcluster destroy`` install the same patch in process).
11. The accounting stack's database (``moto_rds.py``, explained there): CloudFormation models for the Aurora cluster,
   its cluster parameter group and the secret; the writer keeps its cluster; RDS identifiers as CloudFormation
   generates them; the subnet group's physical ID.
12. The refusals AWS makes that moto does not (``moto_rds.py``): deleting a DB subnet group, cluster parameter group or
   security group a database uses, and a VPC that still holds a security group other than its default one.
13. A stack whose resources will not all delete ends ``DELETE_FAILED`` with each resource's reason, as in
   CloudFormation, instead of a ``DeleteStack`` error and a stack that vanished (``moto_teardown.py``).
14. ``ListStackResources`` of a deleted stack lists what the delete left (``DELETE_COMPLETE``, ``DELETE_SKIPPED`` for a
   retained resource) instead of creating every deleted resource again (``moto_teardown.py``).
15. Speed, no answer changed (``moto_speed.py``, explained there): templates read as JSON first, the list of moto's
   backends read once, one botocore loader, each template's imports walked once.
16. Concurrent writes of one S3 key (the CLI publishes assets in parallel; two projects share a bundle's hash, so
   two PutObjects of one key can overlap): moto's ``put_object`` replaces the key and disposes the one it replaced,
   whose buffer the first request is still reading for its ETag -> ``ValueError: I/O operation on closed file``, a
   500 (the CLI retries it). S3 takes the last write of a key. The patch serializes moto's object-level S3 requests
   (they hold the GIL anyway) so none reads a key another one disposed.
5. Stack deletion: moto's CloudFormation models of the route table, its routes and subnet association, the
   internet gateway and its attachment, the NAT gateway, the VPC endpoint and the Elastic IP have
   no ``delete``, so ``DeleteStack`` leaves them and the VPC then refuses to go ("has dependencies")
   -- every ``cdk destroy`` of a network stack fails. The patch deletes each through moto's own EC2
   API, as CloudFormation deletes each resource; moto's delete loop already retries in dependency order.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

from moto.cloudformation import models as cfn
from moto.cloudformation import parsing
from moto.cloudformation import responses
from moto.cloudformation.exceptions import CloudFormationError, ValidationError
from moto.ec2.models import ec2_backends
from moto.ec2.models.elastic_ip_addresses import ElasticAddress
from moto.ec2.models.internet_gateways import InternetGateway
from moto.ec2.models.nat_gateways import NatGateway
from moto.ec2.models.route_tables import Route, RouteTable
from moto.ec2.models.subnets import SubnetRouteTableAssociation
from moto.ec2.models.vpcs import VPCEndPoint
from moto.ec2.models.vpn_gateway import VPCGatewayAttachment
from moto.kms import models as kms
from moto.s3 import responses as s3_responses
from moto.ssm.models import ssm_backends
from moto_rds import install as model_accounting  # beside this file: the script's folder is on sys.path
from moto_speed import imports_cached
from moto_speed import install as spend_less
from moto_teardown import install as protect_stacks
from moto_teardown import install_deletes

model_accounting()  # --- 11. and 12.
spend_less()  # --- 15.
install_deletes()  # --- 13. and 14., under the checks of 7. and 10. below

# --- 1. change sets ------------------------------------------------------------------------------

_create_change_set = cfn.CloudFormationBackend.create_change_set
_execute_change_set = cfn.CloudFormationBackend.execute_change_set


def create_change_set(self: cfn.CloudFormationBackend, *args: Any, **kwargs: Any) -> tuple[str, str]:
    change_set_id, stack_id = _create_change_set(self, *args, **kwargs)
    change_set = self.change_sets[change_set_id]
    ssm = ssm_backends[self.account_id][self.region_name]
    for key, slot in (change_set.template_dict.get("Parameters") or {}).items():  # --- 9. SSM parameters, again
        value = change_set.parameters.get(key)
        if str(slot.get("Type", "")).startswith("AWS::SSM::Parameter::") and value and ssm.get_parameter(value) is None:
            change_set.parameters[key] = slot.get("Default", value)  # the parameter's name, not its last value
    stack = self.stacks[stack_id]
    stack.cross_stack_resources = self.exports
    stack.resource_map.cross_stack_resources = self.exports
    return change_set_id, stack_id


def execute_change_set(self: cfn.CloudFormationBackend, change_set_name: str, stack_name: str | None = None) -> None:
    change_set = self.change_sets.get(change_set_name)
    if change_set is None:
        named = [cs for cs in self.change_sets.values() if cs.change_set_name == change_set_name
                 and (stack_name is None or stack_name in (cs.stack_name, cs.stack_id))]
        if not named:
            raise ValidationError(stack_name)
        change_set = named[-1]
    stack = self.stacks[change_set.stack_id]
    kept = {spec["Export"]["Name"] for spec in (change_set.template_dict.get("Outputs") or {}).values()
            if isinstance(spec, dict) and isinstance(spec.get("Export", {}).get("Name"), str)}
    for name in sorted({e.name for e in stack.exports} - kept):  # --- 7. an export in use may not go away
        users = _importers(self, name, stack.stack_id)
        if users:
            raise ValidationError(message=f"Cannot update export {name} as it is in use by {', '.join(users)}")
    for export in stack.exports:  # an update re-registers the stack's own exports
        self.exports.pop(export.name, None)
    _execute_change_set(self, change_set.change_set_id, stack_name)
    stack._parse_template()
    stack.output_map = stack._create_output_map()
    self._validate_export_uniqueness(stack)
    for export in stack.exports:
        self.exports[export.name] = export


def _importers(backend: cfn.CloudFormationBackend, export: str, exporter: str) -> list[str]:
    """Live stacks (other than ``exporter``) whose template imports ``export``."""
    return sorted(s.name for s in backend.stacks.values()
                  if s.stack_id != exporter and s.status != "DELETE_COMPLETE"
                  and export in _imports(getattr(s, "template_dict", {}) or {}))


def _walk_imports(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["Fn::ImportValue"]} if isinstance(node.get("Fn::ImportValue"), str) else set()
        return found.union(*(_walk_imports(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_walk_imports(v) for v in node))
    return set()


_imports = imports_cached(_walk_imports)  # --- 15. d.


_delete_stack = cfn.CloudFormationBackend.delete_stack


def delete_stack(self: cfn.CloudFormationBackend, name_or_stack_id: str) -> None:
    for stack in [s for s in self.stacks.values() if name_or_stack_id in (s.name, s.stack_id)]:
        for export in stack.exports:
            users = _importers(self, export.name, stack.stack_id)
            if users:
                raise ValidationError(message=f"Export {export.name} cannot be deleted as it is in use by "
                                              f"{', '.join(users)}")
    _delete_stack(self, name_or_stack_id)


cfn.CloudFormationBackend.delete_stack = delete_stack
protect_stacks()  # --- 10. termination protection, checked before the exports in use


cfn.CloudFormationBackend.create_change_set = create_change_set
cfn.CloudFormationBackend.execute_change_set = execute_change_set

# --- 8. change sets by stack ---------------------------------------------------------------------


class ChangeSetNotFound(CloudFormationError):
    code = "ChangeSetNotFound"

    def __init__(self, name: str) -> None:
        super().__init__(f"ChangeSet [{name}] does not exist")


def _change_set(backend: cfn.CloudFormationBackend, name: str, stack: str | None) -> cfn.ChangeSet:
    if name in backend.change_sets:  # an ARN
        return backend.change_sets[name]
    found = [cs for cs in backend.change_sets.values() if cs.change_set_name == name
             and (not stack or stack in (cs.stack_name, cs.stack_id))]
    if not found:
        raise ChangeSetNotFound(name)
    return found[-1]


def _describe_change_set(self: responses.CloudFormationResponse) -> Any:
    change_set = _change_set(self.cloudformation_backend, self._get_param("ChangeSetName"), self._get_param("StackName"))
    return responses.ActionResult(change_set)


def _delete_change_set(self: responses.CloudFormationResponse) -> Any:
    backend = self.cloudformation_backend
    try:
        change_set = _change_set(backend, self._get_param("ChangeSetName"), self._get_param("StackName"))
    except ChangeSetNotFound:  # the CLI deletes "if it exists"; DeleteChangeSet documents no not-found error
        return responses.EmptyResult()
    del backend.change_sets[change_set.change_set_id]
    return responses.EmptyResult()


responses.CloudFormationResponse.describe_change_set = _describe_change_set
responses.CloudFormationResponse.delete_change_set = _delete_change_set

# --- 2. KMS key tags -----------------------------------------------------------------------------

_key_from_cfn = kms.Key.create_from_cloudformation_json.__func__


def key_from_cfn(cls: type, resource_name: str, cloudformation_json: dict, account_id: str, region_name: str,
                 **kwargs: Any) -> kms.Key:
    properties = dict(cloudformation_json.get("Properties", {}))
    properties["Tags"] = [{"TagKey": t["Key"], "TagValue": t["Value"]} for t in properties.get("Tags", [])]
    if not isinstance(properties.get("KeyPolicy"), str):
        properties["KeyPolicy"] = json.dumps(properties.get("KeyPolicy"))
    return _key_from_cfn(cls, resource_name, {**cloudformation_json, "Properties": properties},
                         account_id, region_name, **kwargs)


kms.Key.create_from_cloudformation_json = classmethod(key_from_cfn)

# --- 3. Fn::GetStackOutput -----------------------------------------------------------------------

_clean_json = parsing.clean_json


def clean_json(resource_json: Any, resources_map: parsing.ResourceMap) -> Any:
    if isinstance(resource_json, dict) and "Fn::GetStackOutput" in resource_json:
        args = _clean_json(resource_json["Fn::GetStackOutput"], resources_map)
        region = args.get("Region") or resources_map._region_name
        backend = cfn.cloudformation_backends[resources_map._account_id][region]
        stacks = [s for s in backend.stacks.values() if s.name == args["StackName"] and s.status != "DELETE_COMPLETE"]
        if not stacks:
            raise ValidationError(message=f"Stack {args['StackName']} does not exist in {region}")
        outputs = stacks[-1].output_map
        if args["OutputName"] not in outputs.outputs:
            raise ValidationError(message=f"Stack {args['StackName']} has no output {args['OutputName']}")
        output = outputs[args["OutputName"]]
        return resource_json if output is None or output.value is None else output.value
    if isinstance(resource_json, dict) and isinstance(resource_json.get("Fn::ImportValue"), str):
        name = resource_json["Fn::ImportValue"]  # --- 6. an export whose value moto could not compute
        backend = cfn.cloudformation_backends[resources_map._account_id][resources_map._region_name]
        export = backend.exports.get(name)
        if export is not None and not isinstance(export.value, str):
            return f"moto-skipped:export/{name}"
    if isinstance(resource_json, dict) and "Fn::GetAtt" in resource_json:
        logical_id = resource_json["Fn::GetAtt"][0]
        declared = resources_map._resource_json_map.get(logical_id)
        if declared is not None and parsing.resource_class_from_type(declared["Type"]) is None:
            attribute = resource_json["Fn::GetAtt"][1]  # --- 4. a resource moto skipped: a marked placeholder
            if attribute.endswith("Arn"):
                return (f"arn:aws:moto-skipped:{resources_map._region_name}:{resources_map._account_id}:"
                        f"{logical_id}/{attribute}")
            return f"moto-skipped:{logical_id}.{attribute}"
    return _clean_json(resource_json, resources_map)


parsing.clean_json = clean_json

# --- 5. deletes ----------------------------------------------------------------------------------


def _disassociate(self: SubnetRouteTableAssociation, account_id: str, region_name: str) -> None:
    ec2 = ec2_backends[account_id][region_name]
    table = ec2.route_tables.get(self.route_table_id)
    for association_id, subnet_id in list(table._associations.items() if table else ()):
        if subnet_id == self.subnet_id:
            ec2.disassociate_route_table(association_id)


def _detach(self: VPCGatewayAttachment, account_id: str, region_name: str) -> None:
    if self.gateway_id and self.gateway_id.startswith("igw-"):
        ec2_backends[account_id][region_name].detach_internet_gateway(self.gateway_id, self.vpc_id)


def _delete_endpoint(self: VPCEndPoint, account_id: str, region_name: str) -> None:
    ec2 = ec2_backends[account_id][region_name]
    # moto's loop ignores dependencies: a gateway endpoint's tables may be gone already (with their routes)
    self.route_table_ids = [t for t in self.route_table_ids or [] if t in ec2.route_tables]
    ec2.delete_vpc_endpoints([self.id])


def _delete_route(self: Route, account_id: str, region_name: str) -> None:
    ec2 = ec2_backends[account_id][region_name]
    if self.route_table.id in ec2.route_tables:  # else it went with its table
        ec2.delete_route(self.route_table.id, self.destination_cidr_block, self.destination_ipv6_cidr_block,
                         self.destination_prefix_list.id if self.destination_prefix_list else None)


SubnetRouteTableAssociation.delete = _disassociate
Route.delete = _delete_route
VPCGatewayAttachment.delete = _detach
RouteTable.delete = lambda self, a, r: ec2_backends[a][r].delete_route_table(self.id)
InternetGateway.delete = lambda self, a, r: ec2_backends[a][r].delete_internet_gateway(self.id)
NatGateway.delete = lambda self, a, r: ec2_backends[a][r].delete_nat_gateway(self.id)
VPCEndPoint.delete = _delete_endpoint
ElasticAddress.delete = lambda self, a, r: ec2_backends[a][r].release_address(allocation_id=self.allocation_id)


# --- 16. one S3 object request at a time ---------------------------------------------------------

_key_response = s3_responses.S3Response.key_response
_s3_objects = threading.Lock()


def _key_response_serialized(self: s3_responses.S3Response, *args: Any, **kwargs: Any) -> Any:
    with _s3_objects:
        return _key_response(self, *args, **kwargs)


s3_responses.S3Response.key_response = _key_response_serialized


def _exit_with_parent() -> None:
    """Stop when the test that started this server is gone (killed pytest, crashed worker)."""
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(0)


if __name__ == "__main__":
    from moto.server import main

    threading.Thread(target=_exit_with_parent, daemon=True).start()
    sys.exit(main(sys.argv[1:]))
