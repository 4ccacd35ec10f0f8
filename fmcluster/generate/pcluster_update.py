"""What ParallelCluster needs before it applies a configuration change: nothing, the compute fleet stopped, the
login nodes stopped, or a new cluster.

The ``Custom::PclusterCluster`` resource in ``NAME-cluster`` hands its ``ClusterConfiguration`` to ParallelCluster's
``update_cluster`` without ``force_update`` (the provider's Lambda, ``cloudformation/custom_resource/cluster.yaml``
in aws-parallelcluster): ParallelCluster diffs the deployed configuration against the new one key by key
(``pcluster/config/config_patch.py``), checks each change against its key's update policy
(``pcluster/config/update_policy.py``) and refuses the whole update when one check fails ("Update failure"); the
provider raises and CloudFormation rolls ``NAME-cluster`` back. A new cluster's fleet is RUNNING even with no node
up (``has_running_capacity`` reads the fleet status, not the instances), so a change whose policy needs the fleet
stopped -- ``SlurmSettings.Database``, accounting turned on or changed, is COMPUTE_FLEET_STOP -- always fails on a
running cluster.

:func:`changes` walks two configurations as ``ConfigPatch._compare_section`` does, with the policies of
:mod:`fmcluster.pcluster_update_policies` (generated from the package). :func:`needs` mirrors each policy's condition
checker, reading only what the two configurations say (the fleet's actual status is the deploy's to read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fmcluster.pcluster_update_policies import KEYS

NOTHING = "nothing"
FLEET = "fleet"
"""The compute fleet must be STOPPED (``pcluster update-compute-fleet --status STOP_REQUESTED``)."""
LOGIN = "login"
"""The login nodes must be stopped (ParallelCluster: "set Count parameter to 0 and update the cluster")."""
FLEET_AND_LOGIN = "fleet and login"
NEVER = "never"
"""ParallelCluster does not apply the change at all: keep the deployed value, or make a new cluster."""

NEEDS_TEXT = {
    FLEET: "the compute fleet stopped",
    LOGIN: "the login nodes stopped",
    FLEET_AND_LOGIN: "the compute fleet and the login nodes stopped",
    NEVER: "a new cluster: ParallelCluster does not update it",
}

POLICIES = {
    # policy name -> what a change under it needs when its condition checker cannot pass with the fleet running
    # (pcluster/config/update_policy.py, 3.16.1); the conditional ones are worked out in `needs`
    "IGNORED": NOTHING, "SUPPORTED": NOTHING,
    "SUPPORTED_UNLESS_ADC": NOTHING,  # refused only in us-iso* Regions, where fmcluster's catalog has no instance
    "QUEUE_UPDATE_STRATEGY": FLEET, "RESIZE_UPDATE_STRATEGY_ON_REMOVE": FLEET, "MANAGED_PLACEMENT_GROUP": FLEET,
    "MANAGED_FSX": FLEET, "SHARED_STORAGE_UPDATE_POLICY": FLEET, "COMPUTE_FLEET_STOP_ON_REMOVE": FLEET,
    "COMPUTE_FLEET_STOP": FLEET,
    "LOGIN_NODES_STOP": LOGIN, "LOGIN_NODES_POOL_STOP": LOGIN, "LOGIN_NODES_POOLS_UPDATE_POLICY": LOGIN,
    "COMPUTE_AND_LOGIN_NODES_STOP": FLEET_AND_LOGIN,
    "HEAD_NODE_STOP": NEVER,  # the head node stopped: nothing a deploy can do around the update
    "EXTRA_CHEF_ATTRIBUTES": NEVER,  # only three DevSettings fields may change; fmcluster writes none
    "READ_ONLY_RESOURCE_BUCKET": NEVER, "UNSUPPORTED": NEVER, "UNKNOWN": NEVER,
}
"""Every policy name of :data:`KEYS` (a test fails on one missing here)."""

DEFAULT_STRATEGY = "COMPUTE_FLEET_STOP"
"""``QueueUpdateStrategy`` when unset (``is_queue_update_strategy_set``)."""
DEFAULT_MIN_COUNT, DEFAULT_MAX_COUNT = 0, 10
"""``pcluster.constants.DEFAULT_MIN_COUNT`` / ``DEFAULT_MAX_COUNT``."""
EXTERNAL_STORAGE_KEYS = ("VolumeId", "FileSystemId", "FileCacheId")
"""``pcluster.config.update_policy_utils.EXTERNAL_STORAGE_KEYS``: shared storage the cluster did not create."""
LIVE_UPDATE_STORAGE = ("Efs", "FsxLustre", "FsxOntap", "FsxOpenZfs", "FileCache")
"""``pcluster.constants.STORAGE_TYPES_SUPPORTING_LIVE_UPDATES``."""


@dataclass(frozen=True)
class Change:
    path: tuple[str, ...]
    """Where, as ParallelCluster names it: ``("Scheduling", "SlurmQueues[train]")``."""
    key: str
    old: Any
    new: Any
    policy: str
    is_list: bool = False

    @property
    def where(self) -> str:
        return ".".join((*self.path, self.key))

    def describe(self) -> str:
        if self.is_list:
            item = self.new if self.old is None else self.old
            name = item.get("Name", "") if isinstance(item, dict) else ""
            return f"{self.where}[{name}] {'added' if self.old is None else 'removed'}"
        if self.old in (None, "-"):
            return f"{self.where} added"
        if self.new in (None, "-"):
            return f"{self.where} removed"
        return f"{self.where} changes"


@dataclass(frozen=True)
class ClusterUpdate:
    """One change and what ParallelCluster needs to apply it."""

    cluster: str
    change: Change
    needs: str

    def format(self) -> str:
        return (f"{self.cluster}: {self.change.describe()} (update policy {self.change.policy}: needs "
                f"{NEEDS_TEXT.get(self.needs, self.needs)})")


def _children() -> dict[str, list[tuple[str, str, str, str]]]:
    """Schema path of a section -> (data key, its schema path, policy, kind) of each of its keys."""
    out: dict[str, list[tuple[str, str, str, str]]] = {}
    for path, (policy, kind) in KEYS.items():
        parent, _, key = path.rpartition(".")
        out.setdefault(parent, []).append((key.removesuffix("[]"), path, policy, kind))
    return out


CHILDREN = _children()


def changes(base: dict, target: dict) -> list[Change]:
    """Every change from ``base`` to ``target`` (two ClusterConfigurations), as ``ConfigPatch`` lists them."""
    found: list[Change] = []
    _section(base, target, "", [], found)
    return found


def _section(base: dict | None, target: dict | None, schema: str, path: list[str], found: list[Change]) -> None:
    base, target = base if isinstance(base, dict) else {}, target if isinstance(target, dict) else {}
    for key, schema_path, policy, kind in CHILDREN.get(schema, []):
        before, after = base.get(key), target.get(key)
        if kind.startswith("list:"):
            _list(before or [], after or [], kind.removeprefix("list:"), key, schema_path, policy, path, found)
        elif kind == "section":
            if before and after:
                _section(before, after, schema_path, [*path, key], found)
            elif before or after:
                if policy == "IGNORED":  # ConfigPatch walks into an added or removed IGNORED section
                    _section(before, after, schema_path, [*path, key], found)
                else:
                    found.append(Change(tuple(path), key, before or "-", after or "-", policy))
        elif before != after:
            found.append(Change(tuple(path), key, before, after, policy))


def _list(before: list, after: list, update_key: str, key: str, schema: str, policy: str, path: list[str],
          found: list[Change]) -> None:
    matched: set[int] = set()
    for item in after:
        name = item.get(update_key) if isinstance(item, dict) else None
        old = next((i for i, b in enumerate(before) if isinstance(b, dict) and b.get(update_key) == name), None)
        if old is None:
            found.append(Change(tuple(path), key, None, item, policy, is_list=True))
        else:
            matched.add(old)
            _section(before[old], item, schema, [*path, f"{key}[{name}]"], found)
    found.extend(Change(tuple(path), key, item, None, policy, is_list=True)
                 for i, item in enumerate(before) if i not in matched)


def _strategy(config: dict) -> str:
    return (config.get("Scheduling") or {}).get("SlurmSettings", {}).get("QueueUpdateStrategy", DEFAULT_STRATEGY)


def _in_queues(change: Change) -> bool:
    return any(p.startswith("SlurmQueues[") for p in change.path)


def _named(items: Any, name: str) -> dict:
    return next((i for i in items or [] if isinstance(i, dict) and i.get("Name") == name), {})


def _item(config: dict, change: Change, kind: str) -> dict:
    """The queue (``kind`` SlurmQueues) or compute resource (ComputeResources) the change is under, in ``config``."""
    queue = next((p[12:-1] for p in change.path if p.startswith("SlurmQueues[")), None)
    found = _named((config.get("Scheduling") or {}).get("SlurmQueues"), queue) if queue else {}
    if kind == "ComputeResources":
        resource = next((p[17:-1] for p in change.path if p.startswith("ComputeResources[")), None)
        found = _named(found.get("ComputeResources"), resource) if resource else {}
    return found


def _managed_group(queue: dict, resource: dict) -> bool:
    chosen = (resource.get("Networking") or {}).get("PlacementGroup") or (queue.get("Networking") or {}).get(
        "PlacementGroup")
    return bool(chosen and chosen.get("Enabled") and not (chosen.get("Name") or chosen.get("Id")))


def _count(value: Any, default: int) -> int:
    return int(value) if value is not None else default


def _login_running(base: dict) -> bool:
    """Login nodes run when the deployed configuration asks for any (``has_running_login_nodes`` counts them)."""
    return any(_count(p.get("Count"), 1) > 0 for p in (base.get("LoginNodes") or {}).get("Pools", []) or [])


def needs(change: Change, base: dict, target: dict, others: list[Change] = ()) -> str:
    """What applying ``change`` needs, by its policy's condition checker, with the fleet and login nodes running
    (``others``: the patch's other changes, for MinCount beside MaxCount)."""
    policy, strategy_set = change.policy, _strategy(target) != DEFAULT_STRATEGY
    fleet_or_strategy = NOTHING if _in_queues(change) and strategy_set else FLEET
    if policy == "QUEUE_UPDATE_STRATEGY":
        return fleet_or_strategy
    if policy == "COMPUTE_FLEET_STOP_ON_REMOVE":
        added = change.is_list and (_in_queues(change) or change.key == "SlurmQueues") and change.old is None
        return NOTHING if added else FLEET
    if policy == "RESIZE_UPDATE_STRATEGY_ON_REMOVE":
        if (_in_queues(change) or change.key == "SlurmQueues") and (
                _strategy(target) == "TERMINATE" or (change.is_list and change.old is None)):
            return NOTHING
        if change.key == "MaxCount":
            grows = _count(change.new, DEFAULT_MAX_COUNT) >= _count(change.old, DEFAULT_MAX_COUNT)
            return NOTHING if grows else FLEET
        if change.key == "MinCount":
            partner = next((c for c in others if c.path == change.path and c.key == "MaxCount"), None)
            if partner is not None:
                more_max = _count(partner.new, DEFAULT_MAX_COUNT) - _count(partner.old, DEFAULT_MAX_COUNT)
                more_min = _count(change.new, DEFAULT_MIN_COUNT) - _count(change.old, DEFAULT_MIN_COUNT)
                return NOTHING if more_max >= more_min else FLEET
        return FLEET
    if policy == "MANAGED_PLACEMENT_GROUP":
        deleted = _managed_group(_item(base, change, "SlurmQueues"), _item(base, change, "ComputeResources")) and not \
            _managed_group(_item(target, change, "SlurmQueues"), _item(target, change, "ComputeResources"))
        return FLEET if deleted else fleet_or_strategy
    if policy == "MANAGED_FSX":
        def managed(config: dict) -> set:
            return {s.get("Name") for s in config.get("SharedStorage") or []
                    if s.get("StorageType") == "FsxLustre" and "FileSystemId" not in (s.get("FsxLustreSettings") or {})}
        if managed(base) & managed(target):
            return NEVER  # "cannot be updated when a managed FSx for Lustre file system is configured"
        old, new = change.old, change.new
        grows = isinstance(old, list) and isinstance(new, list) and all(v in new for v in old)
        return NOTHING if _in_queues(change) and (strategy_set or grows) else FLEET
    if policy == "SHARED_STORAGE_UPDATE_POLICY":
        item = change.new if change.new is not None else change.old
        if change.key == "SharedStorage" and isinstance(item, dict) and item.get("MountDir") in ("home", "/home"):
            return NEVER  # "The /home directory cannot be changed during an update"
        live = isinstance(item, dict) and item.get("StorageType") in LIVE_UPDATE_STORAGE and any(
            k in (item.get(f"{item.get('StorageType')}Settings") or {}) for k in EXTERNAL_STORAGE_KEYS)
        login = not live and _login_running(base)
        fleet = not live and not strategy_set
        return FLEET_AND_LOGIN if fleet and login else FLEET if fleet else LOGIN if login else NOTHING
    if policy == "LOGIN_NODES_POOLS_UPDATE_POLICY" and change.is_list and change.key == "Pools" and change.old is None:
        return NOTHING  # a pool may be added with login nodes running
    need = POLICIES.get(policy, NEVER)
    if need in (LOGIN, FLEET_AND_LOGIN) and not _login_running(base):
        return NOTHING if need == LOGIN else FLEET
    return need


def updates(cluster: str, base: dict, target: dict) -> list[ClusterUpdate]:
    """The changes from ``base`` to ``target`` that need something before ParallelCluster applies them."""
    found = changes(base, target)
    out = [ClusterUpdate(cluster, c, needs(c, base, target, found)) for c in found]
    return [u for u in out if u.needs != NOTHING]


CLUSTER_TYPE = "Custom::PclusterCluster"


def template_updates(old: dict[str, dict], new: dict[str, dict]) -> list[ClusterUpdate]:
    """Every ParallelCluster cluster in both sets of templates (by stack role and logical ID): its updates."""
    def clusters(templates: dict[str, dict]) -> dict[tuple[str, str], dict]:
        return {(stack.rsplit("-", 1)[-1], lid): r.get("Properties", {}) for stack, t in templates.items()
                for lid, r in t.get("Resources", {}).items() if r.get("Type") == CLUSTER_TYPE}

    before, out = clusters(old), []
    for key, after in sorted(clusters(new).items()):
        if key in before:
            name = str(after.get("ClusterName") or before[key].get("ClusterName"))
            if before[key].get("ClusterName") != after.get("ClusterName"):  # the provider refuses a rename outright
                out.append(ClusterUpdate(name, Change((), "ClusterName", before[key].get("ClusterName"),
                                                      after.get("ClusterName"), "UNSUPPORTED"), NEVER))
                continue
            out += updates(name, before[key].get("ClusterConfiguration") or {}, after.get("ClusterConfiguration") or {})
    return out
