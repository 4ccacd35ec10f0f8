#!/usr/bin/env python3
"""Write ``fmcluster/pcluster_update_policies.py``: ParallelCluster's update policy of every configuration key.

Runs INSIDE ``.venv-pcluster`` (``make pcluster-venv``): ParallelCluster pins CDK v1 and jsii 1.85, so it cannot
share fmcluster's environment. It walks ``pcluster.schemas.cluster_schema.ClusterSchema`` as
``pcluster.config.config_patch.ConfigPatch._compare_section`` does when ``pcluster update-cluster`` (or the
CloudFormation provider's update) diffs two configurations: each declared field by its ``data_key``, its
``update_policy`` metadata (``UpdatePolicy.UNSUPPORTED`` when a field names none, as ConfigPatch assumes), a nested
field as a section, a nested ``many`` field as a list whose items are matched by ``update_key`` (``Name`` when
unset). Every key of the schema is written, so whatever fmcluster (or a project's own settings) writes has its row;
``tests/generate/test_pcluster_update_policies.py`` runs this and fails when the module differs.

    .venv-pcluster/bin/python tools/pcluster_update_policies.py > fmcluster/pcluster_update_policies.py

``--check BASE TARGET [BASE TARGET ...]`` (pairs of configurations as JSON files) runs ParallelCluster's own
``ConfigPatch`` on each pair, for a cluster whose compute fleet is RUNNING and whose login nodes run when BASE asks for
any, and prints, as one JSON list with an entry per pair in the order given, each pair's changes (``where``,
``policy``, ``is_list``, ``result`` SUCCEEDED / ACTION NEEDED / FAILED): the reference the tests hold
``fmcluster.generate.pcluster_update`` to. Several pairs share one start of ParallelCluster (about a second each).
"""

from __future__ import annotations

import os
import sys
from typing import Any

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")  # ClusterSchema reads a Region; nothing calls AWS

HEADER = '''"""ParallelCluster's update policy for every cluster configuration key (generated: do not edit).

Written by ``tools/pcluster_update_policies.py`` from the ``aws-parallelcluster`` {version} package
(``pcluster/schemas/cluster_schema.py`` field metadata ``update_policy``, ``pcluster/config/update_policy.py``),
walked as ``pcluster/config/config_patch.py`` compares two configurations. Regenerate with
``.venv-pcluster/bin/python tools/pcluster_update_policies.py > fmcluster/pcluster_update_policies.py``.

``KEYS``: key path -> (policy name, kind). A path joins ``data_key``s with dots; ``[]`` marks the items of a list
of sections. Kind ``value``: compared as a whole; ``section``: its keys are compared one by one (added or removed as
a whole, it is one change under the section's own policy unless that policy is IGNORED); ``list:KEY``: items are
matched by KEY, an added or removed item is one change under the list's policy.
"""

PCLUSTER_VERSION = {version!r}

KEYS: dict[str, tuple[str, str]] = {{
'''


def rows() -> list[tuple[str, str, str]]:
    from pcluster.config.update_policy import UpdatePolicy
    from pcluster.schemas.cluster_schema import ClusterSchema

    found: list[tuple[str, str, str]] = []

    def walk(schema: Any, path: str, seen: tuple[type, ...]) -> None:
        for field in schema.declared_fields.values():
            policy = field.metadata.get("update_policy", UpdatePolicy.UNSUPPORTED)
            nested = hasattr(field, "nested")
            many = nested and bool(getattr(field, "many", False))
            key = f"{path}{field.data_key}{'[]' if many else ''}"
            if many:
                kind = f"list:{field.metadata.get('update_key') or 'Name'}"
            else:
                kind = "section" if nested else "value"
            found.append((key, policy.name, kind))
            if nested and type(field.schema) not in seen:  # a schema that contains itself is walked once
                walk(field.schema, key + ".", (*seen, type(field.schema)))

    walk(ClusterSchema(cluster_name="generator"), "", ())
    return found


class _RunningCluster:
    """What ``ConfigPatch`` and the condition checkers ask of a cluster: its name, and whether compute (always) and
    login nodes (when the base configuration has a pool with a count) are running."""

    def __init__(self, base: dict[str, Any]) -> None:
        self.name = "checked"
        self._pools = {p.get("Name"): int(p.get("Count", 1)) for p in (base.get("LoginNodes") or {}).get("Pools", [])}

    def has_running_capacity(self, updated_value: bool = False) -> bool:
        return True

    def has_running_login_nodes(self, updated_value: bool = False, pool_name: str | None = None) -> bool:
        counts = [c for name, c in self._pools.items() if pool_name in (None, "", name)]
        return sum(counts) > 0


def check(base_file: str, target_file: str) -> list[dict[str, Any]]:
    import json

    from pcluster.config.config_patch import ConfigPatch

    with open(base_file, encoding="utf-8") as fh:
        base = json.load(fh)
    with open(target_file, encoding="utf-8") as fh:
        target = json.load(fh)
    patch = ConfigPatch(_RunningCluster(base), base, target)
    out = []
    for change in patch.changes:
        result, *_ = change.update_policy.check(change, patch)
        out.append({"where": ".".join([*change.path, change.key]), "policy": change.update_policy.name,
                    "is_list": bool(change.is_list), "result": result.value})
    return out


def main() -> int:
    from importlib.metadata import version

    if sys.argv[1:2] == ["--check"]:
        import json

        files = sys.argv[2:]
        if not files or len(files) % 2:
            sys.exit("usage: pcluster_update_policies.py --check BASE TARGET [BASE TARGET ...]")
        json.dump([check(base, target) for base, target in zip(files[::2], files[1::2])], sys.stdout, indent=1)
        return 0

    out = [HEADER.format(version=version("aws-parallelcluster"))]
    for key, policy, kind in rows():
        row = f"    {key!r}: ({policy!r}, {kind!r}),\n"
        out.append(row if len(row) <= 121 else f"    {key!r}:\n        ({policy!r}, {kind!r}),\n")  # 120 columns
    out.append("}\n")
    sys.stdout.write("".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
