"""The replacement guard: would deploying NEW over OLD replace a file system, association or bucket?

Both project files are synthesized (offline, cdk-nag off, by :func:`fmcluster.stacks.app.synthesize`)
and every stateful resource of OLD is compared with its namesake in NEW on its *create-only* properties, as the CloudFormation
resource schemas that cfn-lint ships declare them: a change there makes CloudFormation
create a new resource and leave (with our Retain policy) or delete the old one -- an empty
file system either way. A few replacing properties are missing from those schemas; they are
listed in :data:`SCHEMA_GAPS` with the page that documents them, and a test fails as soon as
the schemas cover them. A stateful resource that references a replaced resource through a
create-only property (an FSx file system in a subnet whose CIDR changes) is replaced too; references
are followed in every form CDK writes: ``Ref``, ``Fn::GetAtt``, ``Fn::ImportValue`` and the weak
``Fn::GetStackOutput`` that cdk.json's ``defaultCrossStackReferences: weak`` makes.

A replaced resource whose custom name (:data:`CUSTOM_NAMES`) stays the same is reported whatever its type:
CloudFormation cannot replace it, the update fails and the stack rolls back (a name built from a replaced
resource's ID, like the HyperPod cluster's, changes with it and is no obstacle).

It also reports what is not a replacement but loses or strands data: a stateful resource NEW no
longer has (retained and orphaned under our Retain policy, deleted otherwise), an update the
service refuses (:data:`UPDATE_REFUSED`), and a NEW that deploys to other stacks (a rename, another
Region or account): every stateful resource then gets a second, empty copy beside the old one.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from fmcluster import config
from fmcluster.config.project import Project
from fmcluster.generate import cfnschemas

Synthesize = Callable[[str | Path, Path], dict[str, dict]]
"""Project file, output folder -> templates by stack name."""

STATEFUL_TYPES = ("AWS::FSx::FileSystem", "AWS::FSx::DataRepositoryAssociation", "AWS::S3::Bucket", "AWS::APS::Workspace",
                  "AWS::SageMaker::Cluster", "AWS::PCS::Cluster", "AWS::RDS::DBCluster", "AWS::RDS::DBInstance",
                  "AWS::EKS::Cluster")
"""What the guard judges. A HyperPod or PCS cluster holds no data, but replacing it (HyperPod: ClusterName, VpcConfig;
PCS: Name, Networking, Size; create-only in cfn-lint's schemas, so no SCHEMA_GAPS entry) ends every running job, the
Slurm queue and every node's local state; an EKS cluster's replacement (Name, RoleArn ... create-only) replaces the
HyperPod cluster it orchestrates (Orchestrator/Eks is create-only) and every pod on it. The Slurm accounting
database (``stacks/accounting.py``) holds every job's
record: a new cluster starts with none (StorageEncrypted, DBSubnetGroupName, KmsKeyId ... are create-only in cfn-lint's
schema)."""

SCHEMA_GAPS: dict[str, dict[str, str]] = {
    # type -> {property path: where the replacement is documented}
    "AWS::FSx::FileSystem": {
        "/properties/LustreConfiguration/DeploymentType":
            "AWS CloudFormation User Guide, AWS::FSx::FileSystem LustreConfiguration: DeploymentType, "
            "'Update requires: Replacement'",
        "/properties/LustreConfiguration/EfaEnabled":
            "FACTS.md section 3 (FSx CreateFileSystem API): EfaEnabled is set at creation only",
        "/properties/StorageType":
            "AWS CloudFormation User Guide, AWS::FSx::FileSystem: StorageType, 'Update requires: Replacement'",
    },
}

UPDATE_REFUSED: dict[tuple[str, str], tuple[str, str]] = {
    # (type, property changed) -> (property that must be true in OLD, why the update fails)
    ("AWS::FSx::FileSystem", "/properties/LustreConfiguration/PerUnitStorageThroughput"): (
        "/properties/LustreConfiguration/EfaEnabled",
        "FSx does not change the throughput of an EFA-enabled file system (EfaEnabled \"prevents changes to "
        "PerUnitStorageThroughput\": FSx CreateFileSystem, LustreConfiguration EfaEnabled); the update would fail "
        "and the stack roll back"),
}
"""Changes CloudFormation would try as an update that the service refuses."""

REMOVAL_REFUSED: dict[tuple[str, str], str] = {
    # (type, property that OLD has and NEW drops) -> why the update fails
    ("AWS::SageMaker::Cluster", "/properties/Orchestrator/Slurm/AccountingDatabase"):
        "HyperPod cannot take an external accounting database away: \"After you attach an external accounting "
        "database to a cluster, you cannot revert that cluster to the internal MariaDB database\" (SageMaker "
        "developer guide, \"Using an external accounting database with SageMaker HyperPod Slurm clusters\")",
    ("AWS::PCS::Cluster", "/properties/SlurmConfiguration/Accounting"):
        "AWS PCS cannot turn Slurm accounting off on a cluster that has it: the cluster must be deleted, and its "
        "accounting records go with it (AWS PCS user guide, \"Slurm accounting in AWS PCS\"; FACTS.md section 5)",
}
"""Properties a service lets you set but never remove: dropping one (or setting its ``Mode`` to ``NONE``) is an update
it refuses."""

CUSTOM_NAMES: dict[str, str] = {
    # type -> the property that names it (its physical name): every type fmcluster names, audited against
    # cfn-lint's create-only lists (tests/test_guard.py checks each entry is a property of its type's schema)
    "AWS::SageMaker::Cluster": "/properties/ClusterName",
    "AWS::S3::Bucket": "/properties/BucketName",
    "AWS::Logs::LogGroup": "/properties/LogGroupName",
    "AWS::IAM::ManagedPolicy": "/properties/ManagedPolicyName",
    "AWS::IAM::Role": "/properties/RoleName",
    "AWS::EC2::LaunchTemplate": "/properties/LaunchTemplateName",
    "AWS::EC2::SecurityGroup": "/properties/GroupName",
    "AWS::APS::RuleGroupsNamespace": "/properties/Name",
    "AWS::PCS::Cluster": "/properties/Name",
    "AWS::PCS::ComputeNodeGroup": "/properties/Name",
    "AWS::PCS::Queue": "/properties/Name",
    "AWS::SSM::Parameter": "/properties/Name",  # the ParallelCluster nodes' bootstrap pointers
    "AWS::SageMaker::ClusterSchedulerConfig": "/properties/Name",  # task governance (stacks/hyperpod_eks.py)
    "AWS::SageMaker::ComputeQuota": "/properties/Name",
    "AWS::EKS::Addon": "/properties/AddonName",  # unique within its cluster (NAME_SCOPES)
}
"""CloudFormation cannot replace a resource whose custom name stays the same: the update fails ("cannot update a
stack when a custom-named resource requires replacing. Rename ... and update the stack again") and rolls back
(AWS CloudFormation User Guide, "Update behaviors of stack resources"; FACTS.md section 5)."""

RETAINED = ("Retain", "RetainExceptOnCreate")

SHRINK_REPLACES = {("AWS::FSx::FileSystem", "/properties/StorageCapacity"):
                   "FSx for Lustre capacity can only grow (UpdateFileSystem); a smaller size means a new file system"}


@dataclass(frozen=True)
class Replacement:
    stack: str
    logical_id: str
    type: str
    reason: str

    def format(self) -> str:
        return f"{self.stack}/{self.logical_id} ({self.type}): {self.reason}"


def create_only_paths(resource_type: str) -> list[str]:
    """The schema's create-only property paths of ``resource_type`` (cfn-lint's us-east-1 schema, read by
    :mod:`fmcluster.generate.cfnschemas` without importing cfn-lint), plus :data:`SCHEMA_GAPS`."""
    schema = cfnschemas.resource_schema(resource_type)
    return list(schema.get("createOnlyProperties", [])) + list(SCHEMA_GAPS.get(resource_type, {}))


def value_at(properties: dict[str, Any], path: str) -> Any:
    """The value at a schema path (``/properties/A/B``) of a resource's properties, or None."""
    node: Any = {"properties": properties}
    for part in path.strip("/").split("/"):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _show(value: Any) -> str:
    return "(unset)" if value is None else json.dumps(value, sort_keys=True)


def _references(value: Any) -> set[tuple[str, Any]]:
    """What a value points to: ``("local", logical ID)``, ``("import", export name)`` (``Fn::ImportValue``,
    CDK's strong cross-stack references) and ``("output", (stack, output ID))`` (``Fn::GetStackOutput``, the
    weak references ``@aws-cdk/core:defaultCrossStackReferences: weak`` in cdk.json makes)."""
    found: set[tuple[str, Any]] = set()
    if isinstance(value, dict):
        weak = value.get("Fn::GetStackOutput")
        if isinstance(weak, dict) and isinstance(weak.get("StackName"), str) and isinstance(weak.get("OutputName"), str):
            found.add(("output", (weak["StackName"], weak["OutputName"])))
        if "Ref" in value:
            found.add(("local", value["Ref"]))
        if "Fn::GetAtt" in value:
            target = value["Fn::GetAtt"]
            found.add(("local", target[0] if isinstance(target, list) else str(target).split(".")[0]))
        if "Fn::ImportValue" in value and isinstance(value["Fn::ImportValue"], str):
            found.add(("import", value["Fn::ImportValue"]))
        for child in value.values():
            found |= _references(child)
    elif isinstance(value, list):
        for child in value:
            found |= _references(child)
    return found


def _exports(templates: dict[str, dict]) -> dict[tuple[str, Any], tuple[str, str]]:
    """``("import", export name)`` and ``("output", (stack, output ID))`` -> (stack, logical ID of the resource
    the value comes from)."""
    out: dict[tuple[str, Any], tuple[str, str]] = {}
    for stack, template in templates.items():
        for output_id, output in template.get("Outputs", {}).items():
            refs = sorted(r for kind, r in _references(output.get("Value")) if kind == "local")
            if not refs:
                continue
            out[("output", (stack, output_id))] = (stack, refs[0])
            name = output.get("Export", {}).get("Name")
            if isinstance(name, str):
                out[("import", name)] = (stack, refs[0])
    return out


def stack_role(stack_name: str) -> str:
    """``NAME-storage`` -> ``storage``: what a stack is, whatever the project is called."""
    return stack_name.rsplit("-", 1)[-1]


def _removed(resource: dict) -> str:
    """What CloudFormation does with a stateful resource the new template no longer has."""
    if resource.get("DeletionPolicy") in RETAINED:
        return (f"no longer in the new configuration: CloudFormation takes it out of the stack but keeps it "
                f"(DeletionPolicy {resource['DeletionPolicy']}): retained and orphaned, with its data, and no "
                "longer managed; adding it back later creates a second one beside it")
    return "no longer in the new configuration: CloudFormation deletes it, and its data with it"


def _off(value: Any) -> bool:
    """A setting that is not there, or there as ``Mode: NONE`` (PCS's ``Accounting``: STANDARD or NONE)."""
    return value is None or (isinstance(value, dict) and value.get("Mode") == "NONE")


def _copies(old: dict[str, dict], moved: str) -> list[Replacement]:
    """Every stateful resource of ``old`` when NEW deploys to other stacks (a rename, another Region or account)."""
    return [Replacement(stack, logical_id, resource["Type"],
                        f"{moved}: `cdk deploy` creates new stacks beside the old ones, so this one stays as it is "
                        f"(with its data, still in {stack}) and a second, empty one is created")
            for stack, template in sorted(old.items())
            for logical_id, resource in sorted(template.get("Resources", {}).items())
            if resource["Type"] in STATEFUL_TYPES]


def _dropped_imports(stack: str, template: dict, old: dict[str, dict], new: dict[str, dict]) -> str | None:
    """Why a deployed stack the project no longer builds blocks the deploy: it imports exports that a stack of the
    new deployment stops exporting, and CloudFormation refuses to remove an export in use ("Cannot delete export
    ... as it is in use by ..."), so that stack's update fails. None when it imports nothing the deploy removes."""
    def exported(templates: dict[str, dict]) -> dict[str, str]:
        return {o["Export"]["Name"]: name for name, t in templates.items() for o in t.get("Outputs", {}).values()
                if isinstance(o.get("Export", {}).get("Name"), str)}

    updated = exported({name: t for name, t in old.items() if name in new})  # exports of the stacks deployed again
    still = exported(new)
    dropped = sorted({name for kind, name in _references(template.get("Resources", {}))
                      if kind == "import" and name in updated and name not in still})
    if not dropped:
        return None
    owners = ", ".join(sorted({updated[name] for name in dropped}))
    return (f"{stack} is deployed but the project no longer builds it, and it imports {', '.join(dropped)}, which "
            f"the new {owners} no longer exports: CloudFormation refuses to remove an export in use, so the deploy "
            f"would fail. Delete {stack} first (lift its termination protection; retained resources such as this one "
            "stay, with their data), then deploy")


def compare(old: dict[str, dict], new: dict[str, dict], moved: str | None = None) -> list[Replacement]:
    """Stateful resources of ``old`` (templates by stack name) that deploying ``new`` would replace, delete,
    orphan or fail to update. ``moved`` says why NEW goes to other stacks (then each one gets a second copy)."""
    if moved is not None:
        return _copies(old, moved)
    new_by_role = {stack_role(name): (name, t) for name, t in new.items()}
    replaced: dict[tuple[str, str], str] = {}  # (old stack, logical id) -> why
    refused: dict[tuple[str, str], str] = {}  # updates the service refuses: nothing is replaced, nothing spreads

    for stack, template in old.items():
        counterpart = new_by_role.get(stack_role(stack))
        if counterpart is None:
            # `cdk deploy` never deletes a stack the app no longer has: it stays, with its data, as it is; but its
            # imports still pin the exports it reads (the accounting database, after accounting is turned off)
            why = _dropped_imports(stack, template, old, new) or (
                f"{stack} is deployed but the project no longer builds it: `cdk deploy` leaves that stack as it is, "
                "with this resource and its data; delete the stack yourself to remove them (lift its termination "
                "protection first; retained resources stay)")
            refused.update({(stack, lid): why for lid, r in template.get("Resources", {}).items()
                            if r["Type"] in STATEFUL_TYPES})
            continue
        new_resources = counterpart[1].get("Resources", {})
        for logical_id, resource in template.get("Resources", {}).items():
            kind = resource["Type"]
            after = new_resources.get(logical_id)
            if after is None or after["Type"] != kind:
                if kind in STATEFUL_TYPES:
                    replaced[(stack, logical_id)] = _removed(resource)
                continue
            before_p, after_p = resource.get("Properties", {}), after.get("Properties", {})
            for path in create_only_paths(kind):
                a, b = value_at(before_p, path), value_at(after_p, path)
                if a != b:
                    prop = path.removeprefix("/properties/")
                    replaced[(stack, logical_id)] = f"{prop} changes from {_show(a)} to {_show(b)}"
                    break
            else:
                for (rtype, path), (condition, why) in UPDATE_REFUSED.items():
                    a, b = value_at(before_p, path), value_at(after_p, path)
                    if kind == rtype and a != b and value_at(before_p, condition) is True:
                        refused[(stack, logical_id)] = (
                            f"{path.removeprefix('/properties/')} changes from {_show(a)} to {_show(b)}: {why}")
                for (rtype, path), why in REMOVAL_REFUSED.items():
                    a, b = value_at(before_p, path), value_at(after_p, path)
                    if kind == rtype and a is not None and _off(b) and not _off(a):
                        refused[(stack, logical_id)] = f"{path.removeprefix('/properties/')} is removed: {why}"
                for (rtype, path), why in SHRINK_REPLACES.items():
                    a, b = value_at(before_p, path), value_at(after_p, path)
                    if kind == rtype and isinstance(a, int) and isinstance(b, int) and b < a:
                        replaced[(stack, logical_id)] = f"{path.removeprefix('/properties/')} shrinks from {a} to {b}: {why}"

    # Replacement spreads: a stateful or custom-named resource whose create-only property points at a replaced one.
    exports = _exports(old)
    changed = True
    while changed:
        changed = False
        for stack, template in old.items():
            for logical_id, resource in template.get("Resources", {}).items():
                judged = resource["Type"] in STATEFUL_TYPES or resource["Type"] in CUSTOM_NAMES
                if not judged or (stack, logical_id) in replaced:
                    continue
                for path in create_only_paths(resource["Type"]):
                    for kind, ref in _references(value_at(resource.get("Properties", {}), path)):
                        target = (stack, ref) if kind == "local" else exports.get((kind, ref))
                        if target in replaced:
                            prop = path.removeprefix("/properties/")
                            replaced[(stack, logical_id)] = (
                                f"{prop} refers to {target[0]}/{target[1]}, which is replaced ({replaced[target]})")
                            changed = True
                            break
                    if (stack, logical_id) in replaced:
                        break

    wedged = _custom_named(old, new_by_role, replaced, exports)
    results = []
    for (stack, logical_id), why in sorted((refused | replaced).items()):
        kind = old[stack]["Resources"][logical_id]["Type"]
        if (stack, logical_id) in wedged:
            results.append(Replacement(stack, logical_id, kind, f"{why}; {wedged[(stack, logical_id)]}"))
        elif kind in STATEFUL_TYPES:
            results.append(Replacement(stack, logical_id, kind, why))
    return results


NAME_SCOPES: dict[str, str] = {
    # type -> the create-only property of the parent its name is unique in
    "AWS::PCS::ComputeNodeGroup": "/properties/ClusterId",
    "AWS::PCS::Queue": "/properties/ClusterId",
    "AWS::EKS::Addon": "/properties/ClusterName",  # one add-on of a name per cluster (EKS API reference, CreateAddon)
}
"""Names unique only inside a parent (PCS: a node group's or queue's name within its cluster, PCS API reference
CreateComputeNodeGroup/CreateQueue): replaced together with that parent, the resource lands where its name is free."""


def _custom_named(old: dict[str, dict], new_by_role: dict[str, tuple[str, dict]], replaced: dict[tuple[str, str], str],
                  exports: dict[tuple[str, Any], tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Replaced resources that keep their custom name (:data:`CUSTOM_NAMES`): CloudFormation refuses those updates.
    A name that reads a replaced resource (the HyperPod cluster's, built from the compute subnet's ID) changes with it."""
    wedged = {}
    for (stack, logical_id) in replaced:
        resource = old[stack]["Resources"][logical_id]
        path = CUSTOM_NAMES.get(resource["Type"])
        counterpart = new_by_role.get(stack_role(stack))
        after = counterpart[1].get("Resources", {}).get(logical_id) if counterpart else None
        if path is None or after is None or after["Type"] != resource["Type"]:
            continue
        name, new_name = value_at(resource.get("Properties", {}), path), value_at(after.get("Properties", {}), path)
        if name is None or name != new_name:
            continue
        scope = NAME_SCOPES.get(resource["Type"])
        moves = any(((stack, ref) if kind == "local" else exports.get((kind, ref))) in replaced
                    for value in (name, value_at(after.get("Properties", {}), scope) if scope else None)
                    for kind, ref in _references(value))
        if not moves:
            prop = path.removeprefix("/properties/")
            wedged[(stack, logical_id)] = (
                f"its custom name ({prop} {_show(name)}) stays the same, and CloudFormation cannot replace a "
                "custom-named resource: the update fails and the stack rolls back")
    return wedged


def moved(old: Project, new: Project) -> str | None:
    """Why NEW's stacks are not OLD's: another project name (stack names), Region or account; None if they are."""
    if old.name != new.name:
        return f"the project is renamed from {old.name!r} to {new.name!r}"
    for field in ("region", "account"):
        a, b = getattr(old, field), getattr(new, field)
        if a != b:
            return f"the {field} changes from {a or '(the CLI default)'} to {b or '(the CLI default)'}"
    return None


def synthesize_both(new_ref: str | Path, old_ref: str | Path,
                    synthesize: Synthesize) -> tuple[dict[str, dict], dict[str, dict], str | None]:
    """OLD's and NEW's templates, each project file synthesized once with ``synthesize``
    (:func:`fmcluster.stacks.app.synthesize`), and :func:`moved`: what :func:`compare` takes. `fmcluster plan
    --against` (:func:`fmcluster.cli.plandiff.compare_files`) compares them for the guard and for every other
    difference."""
    with tempfile.TemporaryDirectory() as tmp:
        old = synthesize(old_ref, Path(tmp) / "old")
        new = synthesize(new_ref, Path(tmp) / "new")
    return old, new, moved(config.load(old_ref).project, config.load(new_ref).project)
