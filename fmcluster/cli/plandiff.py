"""``plan --against OLD``: the verdict, then what changes in place and what is replaced.

The replacement guard (:mod:`fmcluster.guard`) judges the resources that hold data; this module lists
every other difference between the two synthesized projects, so a reader sees the safe changes too:
a resource whose changed properties are all updatable changes in place; one with a changed create-only
property (the CloudFormation resource schemas cfn-lint ships, :func:`fmcluster.guard.create_only_paths`)
is replaced by CloudFormation -- harmless for what holds no data (a launch template, a role).

A ParallelCluster cluster's configuration is compared key by key too (:mod:`fmcluster.generate.pcluster_update`,
ParallelCluster's own update policies): each change it applies only with the compute fleet (or the login nodes)
stopped, or not at all, is named with its policy, as ``fmcluster deploy`` will judge it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fmcluster import guard
from fmcluster.generate import pcluster_update

SHOWN = 8
"""Entries shown per list; the rest are counted ("and 5 more")."""

IGNORED_TYPES = ("AWS::CDK::Metadata",)


@dataclass(frozen=True)
class Change:
    stack: str
    logical_id: str
    type: str
    properties: tuple[str, ...] = ()

    def format(self) -> str:
        what = f": {', '.join(self.properties)}" if self.properties else ""
        return f"{self.stack}/{self.logical_id} ({self.type}){what}"


@dataclass
class Comparison:
    replacements: list[guard.Replacement]
    """What the guard refuses: data would be replaced, deleted, orphaned or an update refused."""
    in_place: list[Change] = field(default_factory=list)
    replaced: list[Change] = field(default_factory=list)
    """Replaced by CloudFormation, holding no data (the guard's own findings are in ``replacements``)."""
    added: list[Change] = field(default_factory=list)
    removed: list[Change] = field(default_factory=list)
    cluster_updates: list[pcluster_update.ClusterUpdate] = field(default_factory=list)
    """ParallelCluster changes that need the fleet or login nodes stopped, or a new cluster."""
    lifecycle: list[str] = field(default_factory=list)
    """Stacks whose HyperPod lifecycle scripts change: running nodes keep their old ones (:func:`lifecycle_changes`)."""

    def as_dict(self) -> dict:
        def items(changes: list[Change]) -> list[dict]:
            return [{"stack": c.stack, "logical_id": c.logical_id, "type": c.type, "properties": list(c.properties)}
                    for c in changes]
        return {"verdict": "refused" if self.replacements else "safe", "in_place": items(self.in_place),
                "replaced": items(self.replaced), "added": items(self.added), "removed": items(self.removed),
                "lifecycle_scripts_change": self.lifecycle,
                "cluster_updates": [{"cluster": u.cluster, "key": u.change.where, "change": u.change.describe(),
                                     "update_policy": u.change.policy, "needs": u.needs} for u in self.cluster_updates]}


def _changed(before: dict, after: dict) -> list[str]:
    """Top-level properties (and policies) that differ."""
    b, a = before.get("Properties", {}), after.get("Properties", {})
    names = [k for k in sorted(set(b) | set(a)) if b.get(k) != a.get(k)]
    names += [k for k in ("DeletionPolicy", "UpdateReplacePolicy", "DependsOn") if before.get(k) != after.get(k)]
    return names


def differences(old: dict[str, dict], new: dict[str, dict], judged: set[tuple[str, str]]) -> Comparison:
    """Every resource difference between two projects' templates, except those in ``judged`` (the guard's)."""
    out = Comparison(replacements=[])
    old_by_role = {guard.stack_role(name): (name, t) for name, t in old.items()}
    seen: set[tuple[str, str]] = set()
    for stack, template in sorted(new.items()):
        old_stack, old_template = old_by_role.get(guard.stack_role(stack), (stack, {}))
        before_all = old_template.get("Resources", {})
        for logical_id, after in sorted(template.get("Resources", {}).items()):
            if after["Type"] in IGNORED_TYPES:
                continue
            before = before_all.get(logical_id)
            seen.add((old_stack, logical_id))
            if (old_stack, logical_id) in judged:
                continue
            if before is None or before["Type"] != after["Type"]:
                out.added.append(Change(stack, logical_id, after["Type"]))
                continue
            props = _changed(before, after)
            if not props:
                continue
            props_before, props_after = before.get("Properties", {}), after.get("Properties", {})
            hit = tuple(path.removeprefix("/properties/") for path in guard.create_only_paths(after["Type"])
                        if guard.value_at(props_before, path) != guard.value_at(props_after, path))
            if hit:
                out.replaced.append(Change(stack, logical_id, after["Type"], hit))
            else:
                out.in_place.append(Change(stack, logical_id, after["Type"], tuple(props)))
    for stack, template in sorted(old.items()):
        for logical_id, before in sorted(template.get("Resources", {}).items()):
            if before["Type"] not in IGNORED_TYPES and (stack, logical_id) not in seen | judged:
                out.removed.append(Change(stack, logical_id, before["Type"]))
    return out


HYPERPOD_CLUSTER = "AWS::SageMaker::Cluster"
SCRIPTS_UPLOAD = "Custom::CDKBucketDeployment"
"""What uploads a HyperPod cluster's lifecycle scripts (``stacks/hyperpod.py``'s BucketDeployment, to a fixed prefix:
the cluster resource itself does not change when the scripts do)."""
LIFECYCLE_NOTE = ("HyperPod lifecycle scripts change in {stacks}: nodes already running keep the scripts they started "
                  "with until they are replaced; new nodes and new instance groups run the new ones. `aws sagemaker "
                  "update-cluster-software --cluster-name ARN` re-runs them on every node of each instance group, on a "
                  "new root volume (the nodes go down: drain them first)")
"""AWS's "Updating a cluster with new or updated lifecycle scripts" (SageMaker developer guide, HyperPod): UpdateCluster
runs the lifecycle scripts only for new instance groups; UpdateClusterSoftware re-runs them on the entire instance
group; update-cluster-software replaces the root volume (its CLI reference)."""


def lifecycle_changes(comparison: Comparison, new: dict[str, dict]) -> list[str]:
    """The stacks whose HyperPod cluster's lifecycle scripts change: their upload, or the cluster's ``LifeCycleConfig``
    (``InstanceGroups``), changes in place or is replaced."""
    clusters = {name for name, t in new.items()
                if any(r.get("Type") == HYPERPOD_CLUSTER for r in t.get("Resources", {}).values())}
    found = [c.stack for c in comparison.in_place + comparison.replaced if c.stack in clusters and (
        c.type == SCRIPTS_UPLOAD or (c.type == HYPERPOD_CLUSTER and "InstanceGroups" in c.properties))]
    return sorted(set(found))


def compare_files(new_ref: str | Path, old_ref: str | Path, synthesize: guard.Synthesize) -> Comparison:
    """Synthesize both files once: the guard's verdict and every other difference."""
    old, new, moved = guard.synthesize_both(new_ref, old_ref, synthesize)
    replacements = guard.compare(old, new, moved)
    if moved is not None:
        return Comparison(replacements=replacements)
    found = differences(old, new, {(r.stack, r.logical_id) for r in replacements})
    found.replacements = replacements
    found.cluster_updates = pcluster_update.template_updates(old, new)
    found.lifecycle = lifecycle_changes(found, new)
    return found


def impossible(updates: list[pcluster_update.ClusterUpdate]) -> list[pcluster_update.ClusterUpdate]:
    """The updates no fleet stop makes possible (a new cluster, or the login nodes stopped first): ``deploy`` refuses
    them, and so does ``plan --against`` (exit 3)."""
    return [u for u in updates if u.needs in (pcluster_update.NEVER, pcluster_update.LOGIN,
                                              pcluster_update.FLEET_AND_LOGIN)]


def summary(against: str, comparison: Comparison) -> list[str]:
    """The verdict, then short lists: what is refused, what changes in place, what is replaced, added, removed."""
    refused = comparison.replacements
    if refused:
        many = len(refused) != 1
        lines = [f"against {against}: REFUSED: deploying this would replace or lose {len(refused)} resource"
                 f"{'s that hold' if many else ' that holds'} data (exit 3; --allow-replace once the data is copied)"]
    else:
        lines = [f"against {against}: safe: no file system, association, bucket or workspace would be replaced"]
    sections = [("loses data", [r.format() for r in refused]),
                ("changes in place", [c.format() for c in comparison.in_place]),
                ("replaced, holds no data", [c.format() for c in comparison.replaced]),
                ("added", [c.format() for c in comparison.added]),
                ("removed", [c.format() for c in comparison.removed])]
    if not any(items for _, items in sections):
        lines.append("  nothing changes")
    for title, items in sections:
        if items:
            lines.append(f"  {title} ({len(items)}):")
            lines += [f"    {item}" for item in items[:SHOWN]]
            if len(items) > SHOWN:
                lines.append(f"    and {len(items) - SHOWN} more (plan -o json lists them all)")
    if comparison.lifecycle:
        lines.append(f"  {LIFECYCLE_NOTE.format(stacks=', '.join(comparison.lifecycle))}")
    updates = comparison.cluster_updates
    if updates:
        lines.append(f"  needs more than a ParallelCluster update ({len(updates)}):")
        lines += [f"    {u.format()}" for u in updates]
        if any(u.needs == pcluster_update.FLEET for u in updates):
            lines.append("    fmcluster deploy refuses a change that needs the compute fleet stopped while it runs; "
                         "--stop-fleet stops it around the deploy")
        if impossible(updates):
            lines.append("    fmcluster deploy refuses a change that needs a new cluster or the login nodes stopped: "
                         "ParallelCluster would refuse the update and CloudFormation roll the cluster stack back")
    return lines
