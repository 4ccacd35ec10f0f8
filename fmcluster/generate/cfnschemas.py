"""The CloudFormation resource schemas cfn-lint ships, read without importing cfn-lint.

The replacement guard (:func:`fmcluster.guard.create_only_paths`) needs one thing of cfn-lint: a resource type's
schema, for its ``createOnlyProperties``. Importing ``cfnlint.schema`` runs ``cfnlint/__init__.py``, which loads every
lint rule: about 1.3 s of CPU in each `fmcluster deploy`, `plan --against` and `plan --diff`, for files it then reads
as JSON. This module reads the same files the way cfn-lint's ``ProviderSchemaManager`` finds them
(``cfnlint/schema/manager.py``: ``_resolve_schema_dirs``, ``_load_provider_module``, ``get_resource_schema``):

- the schema folder: cfn-lint's bundled ``data/schemas``, or the cache that ``cfn-lint --update-specs`` writes
  (``get_cache_dir`` in ``cfnlint/helpers.py``: ``$XDG_CACHE_HOME`` or ``~/.cache``, then ``aws/cfn-lint/schemas``
  on Linux; ``~/Library/Caches/aws/cfn-lint/schemas`` on macOS; ``%LOCALAPPDATA%\\aws\\cfn-lint\\schemas`` on
  Windows) where its ``version.json`` has the later ``schema_date``;
- ``providers/us-east-1.json`` (and ``providers/sam.json``) maps a resource type to its schema's hash;
  ``resources/HASH.json`` is the schema; a ``Custom::`` type is ``AWS::CloudFormation::CustomResource``.

Where that layout is not there (another cfn-lint, no schema folder yet) it asks cfn-lint itself, which answers or
raises as before. ``tests/test_cfnschemas.py`` compares the two readings.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

REGION = "us-east-1"


def cache_dir() -> Path:
    """Where `cfn-lint --update-specs` keeps newer schemas (cfn-lint's ``get_cache_dir``)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA", os.path.expanduser("~\\AppData\\Local"))
    elif sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    return Path(base, "aws", "cfn-lint", "schemas")


def _schema_date(folder: Path) -> str:
    try:
        return str(json.loads((folder / "version.json").read_text(encoding="utf-8")).get("schema_date", ""))
    except (OSError, ValueError):
        return ""


def schema_dirs() -> tuple[Path, Path] | None:
    """(providers, resources) folders cfn-lint reads (its ``_resolve_schema_dirs``), or None where none has schemas."""
    spec = importlib.util.find_spec("cfnlint")  # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        return None
    bundled, cached = Path(next(iter(spec.submodule_search_locations)), "data", "schemas"), cache_dir()
    has = {folder: any((folder / "providers").glob("*.json")) for folder in (bundled, cached)}
    if has[bundled] and has[cached]:
        folder = cached if _schema_date(cached) > _schema_date(bundled) else bundled
    elif has[bundled] or has[cached]:
        folder = bundled if has[bundled] else cached
    else:
        return None
    return folder / "providers", folder / "resources"


@cache
def _hashes(providers: Path) -> dict[str, str]:
    found: dict[str, str] = json.loads((providers / f"{REGION}.json").read_text(encoding="utf-8"))
    sam = providers / "sam.json"
    if sam.is_file():
        found.update(json.loads(sam.read_text(encoding="utf-8")))
    return found


@cache
def resource_schema(resource_type: str) -> dict[str, Any]:
    """The us-east-1 schema of ``resource_type`` as cfn-lint has it (treat it as read-only: it is shared)."""
    kind = "AWS::CloudFormation::CustomResource" if resource_type.startswith("Custom::") else resource_type
    dirs = schema_dirs()
    if dirs is not None:
        providers, resources = dirs
        digest = _hashes(providers).get(kind) if (providers / f"{REGION}.json").is_file() else None
        if digest and (resources / f"{digest}.json").is_file():
            return json.loads((resources / f"{digest}.json").read_text(encoding="utf-8"))
    # Heavy (cfn-lint loads every rule): only where its files are not where this module looks.
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    return PROVIDER_SCHEMA_MANAGER.get_resource_schema(REGION, resource_type).schema
