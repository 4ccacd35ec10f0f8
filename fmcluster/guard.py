"""The replacement guard: would deploying NEW over OLD replace a file system, association or bucket?

Both project files are synthesized (offline, cdk-nag off, by :func:`fmcluster.stacks.app.synthesize`)
and every stateful resource of OLD is compared with its namesake in NEW on its *create-only* properties, as the CloudFormation
resource schemas that cfn-lint ships declare them: a change there makes CloudFormation
create a new resource and leave (with our Retain policy) or delete the old one -- an empty
file system either way. A few replacing properties are missing from those schemas; they are
listed in :data:`SCHEMA_GAPS` with the page that documents them, and a test fails as soon as
the schemas cover them. A stateful resource that references a replaced resource through a
create-only property (an FSx file system in a subnet whose CIDR changes) is replaced too.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

Synthesize = Callable[[str | Path, Path], dict[str, dict]]
"""Project file, output folder -> templates by stack name."""

STATEFUL_TYPES = ("AWS::FSx::FileSystem", "AWS::FSx::DataRepositoryAssociation", "AWS::S3::Bucket", "AWS::APS::Workspace")

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
    """The schema's create-only property paths of ``resource_type``, plus :data:`SCHEMA_GAPS`."""
    # Heavy (every Region's resource schemas): loads only when a comparison runs.
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", resource_type).schema
    return list(schema.get("createOnlyProperties", [])) + list(SCHEMA_GAPS.get(resource_type, {}))


def _get(properties: dict[str, Any], path: str) -> Any:
    node: Any = {"properties": properties}
    for part in path.strip("/").split("/"):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _show(value: Any) -> str:
    return "(unset)" if value is None else json.dumps(value, sort_keys=True)


def _references(value: Any) -> set[tuple[str, str | None]]:
    """Logical IDs (``("local", id)``) and import names (``("import", name)``) a value points to."""
    found: set[tuple[str, str | None]] = set()
    if isinstance(value, dict):
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


def _exports(templates: dict[str, dict]) -> dict[str, tuple[str, str]]:
    """Export name -> (stack, logical ID of the resource the exported value comes from)."""
    out = {}
    for stack, template in templates.items():
        for output in template.get("Outputs", {}).values():
            name = output.get("Export", {}).get("Name")
            refs = [r for kind, r in _references(output.get("Value")) if kind == "local"]
            if name and refs:
                out[name] = (stack, refs[0])
    return out


def _role(stack_name: str) -> str:
    return stack_name.rsplit("-", 1)[-1]


def compare(old: dict[str, dict], new: dict[str, dict]) -> list[Replacement]:
    """Stateful resources of ``old`` (templates by stack name) that deploying ``new`` would replace."""
    new_by_role = {_role(name): (name, t) for name, t in new.items()}
    replaced: dict[tuple[str, str], str] = {}  # (old stack, logical id) -> why

    for stack, template in old.items():
        counterpart = new_by_role.get(_role(stack))
        new_resources = counterpart[1].get("Resources", {}) if counterpart else {}
        for logical_id, resource in template.get("Resources", {}).items():
            kind = resource["Type"]
            after = new_resources.get(logical_id)
            if after is None or after["Type"] != kind:
                if kind in STATEFUL_TYPES:
                    replaced[(stack, logical_id)] = "no longer in the new configuration (a new, empty one would take its place)"
                continue
            before_p, after_p = resource.get("Properties", {}), after.get("Properties", {})
            for path in create_only_paths(kind):
                a, b = _get(before_p, path), _get(after_p, path)
                if a != b:
                    prop = path.removeprefix("/properties/")
                    replaced[(stack, logical_id)] = f"{prop} changes from {_show(a)} to {_show(b)}"
                    break
            else:
                for (rtype, path), why in SHRINK_REPLACES.items():
                    a, b = _get(before_p, path), _get(after_p, path)
                    if kind == rtype and isinstance(a, int) and isinstance(b, int) and b < a:
                        replaced[(stack, logical_id)] = f"{path.removeprefix('/properties/')} shrinks from {a} to {b}: {why}"

    # Replacement spreads: a stateful resource whose create-only property points at a replaced one.
    exports = _exports(old)
    changed = True
    while changed:
        changed = False
        for stack, template in old.items():
            for logical_id, resource in template.get("Resources", {}).items():
                if resource["Type"] not in STATEFUL_TYPES or (stack, logical_id) in replaced:
                    continue
                for path in create_only_paths(resource["Type"]):
                    for kind, ref in _references(_get(resource.get("Properties", {}), path)):
                        target = (stack, ref) if kind == "local" else exports.get(ref or "")
                        if target in replaced:
                            prop = path.removeprefix("/properties/")
                            replaced[(stack, logical_id)] = (
                                f"{prop} refers to {target[0]}/{target[1]}, which is replaced ({replaced[target]})")
                            changed = True
                            break
                    if (stack, logical_id) in replaced:
                        break

    results = []
    for (stack, logical_id), why in sorted(replaced.items()):
        kind = old[stack]["Resources"][logical_id]["Type"]
        if kind in STATEFUL_TYPES:
            results.append(Replacement(stack, logical_id, kind, why))
    return results


def check(new_ref: str | Path, old_ref: str | Path, synthesize: Synthesize) -> list[Replacement]:
    """Synthesize both project files with ``synthesize`` (:func:`fmcluster.stacks.app.synthesize`) and compare."""
    with tempfile.TemporaryDirectory() as tmp:
        old = synthesize(old_ref, Path(tmp) / "old")
        new = synthesize(new_ref, Path(tmp) / "new")
    return compare(old, new)
