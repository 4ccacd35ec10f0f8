"""Offline schema checks for the Kubernetes objects fmcluster generates.

- Built-in kinds (``v1``, ``batch/v1``, ...): the ``kubernetes-validate`` package's copies of the Kubernetes
  OpenAPI schemas, ``strict=True`` (a property the schema does not name is an error).
- Custom resources (MPIJob, PyTorchJob, Kueue): the ``openAPIV3Schema`` of their CRDs in ``tests/kubernetes/crds``
  (copied from ``../shared/k8s-crds``; its README names each file's source), checked with ``jsonschema``. A CRD's
  structural schema prunes (drops) a field it does not name, unless ``x-kubernetes-preserve-unknown-fields`` says
  to keep it (Kubernetes docs, "Custom Resources", "Field pruning"): a pruned field is a setting the controller
  never sees, so here it is an error (``additionalProperties: false`` wherever the schema lists ``properties`` and
  does not preserve unknown fields). ``metadata`` is the object's ObjectMeta, checked against the built-in ``ObjectMeta`` schema through a
  ConfigMap stand-in, since CRDs describe it as a bare ``type: object``.

Not checked offline (FACTS.md section 5b): CEL rules (``x-kubernetes-validations``), webhooks, defaulting, RBAC.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

from support import ROOT

CRD_DIR = ROOT / "tests" / "kubernetes" / "crds"
KUBERNETES_VERSION = "1.33"
"""The schemas' Kubernetes version: the version AWS's HyperPod EKS Terraform uses (FACTS.md section 5b)."""


@cache
def _crds() -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> the served version's openAPIV3Schema, for every CRD in :data:`CRD_DIR`."""
    out = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for version in spec["versions"]:
                if version.get("served", True):
                    out[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = \
                        version["schema"]["openAPIV3Schema"]
    return out


def closed(schema: Any) -> Any:
    """``schema`` with unknown properties refused wherever the CRD would prune them."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def crd_kinds() -> list[tuple[str, str]]:
    return sorted(_crds())


def validate(obj: dict) -> list[str]:
    """Every schema error of one object, as ``path: message`` lines (empty: valid)."""
    key = (obj.get("apiVersion", ""), obj.get("kind", ""))
    crd = _crds().get(key)
    if crd is None:
        return _builtin(obj)
    errors = []
    body = {k: v for k, v in obj.items() if k != "metadata"}
    validator = jsonschema.Draft7Validator(closed(crd))
    for error in sorted(validator.iter_errors(body | {"metadata": {}}), key=lambda e: list(e.absolute_path)):
        errors.append(f"{'.'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}")
    stand_in = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": copy.deepcopy(obj.get("metadata", {}))}
    errors += [f"metadata: {e}" for e in _builtin(stand_in)]
    return errors


def _builtin(obj: dict) -> list[str]:
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{'.'.join(str(p) for p in exc.path) or '(root)'}: {exc.message}"]
    except kubernetes_validate.SchemaNotFoundError as exc:
        return [f"no schema for {obj.get('apiVersion')}/{obj.get('kind')}: {exc}"]
    return []


def validate_all(objects: list[dict]) -> dict[str, list[str]]:
    """``kind/name`` -> errors, for the objects that have any."""
    out = {}
    for obj in objects:
        errors = validate(obj)
        if errors:
            out[f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"] = errors
    return out
