#!/usr/bin/env python3
"""Validate ParallelCluster cluster configurations offline with the real ``aws-parallelcluster`` package.

Runs INSIDE ``.venv-pcluster`` (``make pcluster-venv``): ParallelCluster pins CDK v1 and jsii 1.85,
so it cannot share fmcluster's environment. For each config (JSON or YAML; the cluster name is the
file's stem) it

1. loads it with ``pcluster.schemas.cluster_schema.ClusterSchema(cluster_name=...).load(dict)``
   (structure: every schema error is reported), then
2. walks the loaded resource tree, registers each resource's own validators and runs every one
   that works without AWS. The network is blocked and botocore is stubbed: DescribeInstanceTypes
   and DescribeSubnets are answered from ``--facts`` (records in the DescribeInstanceTypes /
   DescribeSubnets shape, e.g. from moto's bundled data), every other AWS call is refused; a
   validator that tried one is reported under ``skipped`` with the calls it wanted, never as a result.

Prints one JSON report on stdout: ``package`` (the constants fmcluster mirrors in
``fmcluster/pcluster_facts.py``) and ``configs`` {path: {schema_errors, failures, ran,
skipped, registration_incomplete}}. Exit code 0 when nothing failed at ERROR level, 1 otherwise.

    .venv-pcluster/bin/python tools/pcluster_validate.py --facts facts.json cluster-a.yaml cluster-b.json
    .venv-pcluster/bin/python tools/pcluster_validate.py --package-facts
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import pcluster_offline  # noqa: E402 (first: seals the process before botocore loads)

pcluster_offline.seal("pcluster_validate", os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))

import botocore.client  # noqa: E402
import botocore.exceptions  # noqa: E402

REFUSED: list[str] = []
"""AWS operations refused since the last reset: a validator that adds to it needs AWS."""

FACTS: dict[str, Any] = {"instance_types": {}, "subnets": {}, "file_systems": {}, "images": []}
ANSWERED: set[str] = set()
"""Operations answered from facts or placeholders (listed in the report: their validators saw stand-ins)."""


def _filter_value(params: dict[str, Any], name: str) -> list[str]:
    return next((f["Values"] for f in params.get("Filters") or [] if f["Name"] == name), [])


def _images(params: dict[str, Any]) -> list[dict[str, Any]] | None:
    import fnmatch

    ids = params.get("ImageIds") or []
    names = _filter_value(params, "name")
    found = [i for i in FACTS["images"]
             if (not ids or i["ImageId"] in ids) and (not names or any(fnmatch.fnmatch(i["Name"], n) for n in names))]
    return found or None


def _answer(self: Any, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    if operation == "DescribeInstanceTypes":
        wanted = params.get("InstanceTypes") or []
        found = [FACTS["instance_types"][t] for t in wanted if t in FACTS["instance_types"]]
        if wanted and len(found) == len(wanted):
            ANSWERED.add(operation)
            return {"InstanceTypes": found}
    if operation == "DescribeSubnets":
        wanted = params.get("SubnetIds") or []
        found = [FACTS["subnets"][s] for s in wanted if s in FACTS["subnets"]]
        if wanted and len(found) == len(wanted):
            ANSWERED.add(operation)
            return {"Subnets": found}
    if operation == "DescribeFileSystems":
        wanted = params.get("FileSystemIds") or []
        found = [FACTS["file_systems"][f] for f in wanted if f in FACTS["file_systems"]]
        if wanted and len(found) == len(wanted):
            ANSWERED.add(operation)
            return {"FileSystems": found}
    if operation == "DescribeImages":
        found = _images(params)
        if found:
            ANSWERED.add(operation)
            return {"Images": found}
    REFUSED.append(operation)
    raise botocore.exceptions.NoCredentialsError()


botocore.client.BaseClient._make_api_call = _answer  # type: ignore[method-assign]
logging.disable(logging.CRITICAL)  # pcluster logs every refused call at ERROR


def package_facts() -> dict[str, Any]:
    import pcluster
    from pcluster import constants as c
    from pcluster.validators import cluster_validators as cv

    return {
        "version": getattr(pcluster, "__version__", None) or _dist_version(),
        "SUPPORTED_OSES": c.SUPPORTED_OSES,
        "SUPPORTED_OSES_FOR_P6E_GB200": sorted(c.SUPPORTED_OSES_FOR_P6E_GB200),
        "SUPPORTED_OSES_FOR_P6_B300": sorted(c.SUPPORTED_OSES_FOR_P6_B300),
        "ULTRASERVER_CAPACITY_BLOCK_ALLOWED_SIZE_DICT": c.ULTRASERVER_CAPACITY_BLOCK_ALLOWED_SIZE_DICT,
        "INSTANCE_TYPES_WITH_FIRST_INTERFACE_ENA": c.INSTANCE_TYPES_WITH_FIRST_INTERFACE_ENA,
        "NAME_REGEX": cv.NAME_REGEX,
        "NAME_MAX_LENGTH": cv.NAME_MAX_LENGTH,
        "PCLUSTER_NAME_REGEX": c.PCLUSTER_NAME_REGEX % (c.PCLUSTER_NAME_MAX_LENGTH - 1),
        "PCLUSTER_NAME_MAX_LENGTH_SLURM_ACCOUNTING": c.PCLUSTER_NAME_MAX_LENGTH_SLURM_ACCOUNTING,
        "PCLUSTER_TAG_VALUE_REGEX": c.PCLUSTER_TAG_VALUE_REGEX,
        "MAX_NUMBER_OF_QUEUES": c.MAX_NUMBER_OF_QUEUES,
        "MAX_COMPUTE_RESOURCES_PER_QUEUE": c.MAX_COMPUTE_RESOURCES_PER_QUEUE,
        "MAX_NUMBER_OF_COMPUTE_RESOURCES_PER_CLUSTER": c.MAX_NUMBER_OF_COMPUTE_RESOURCES_PER_CLUSTER,
        "MAX_NUMBER_OF_LOGIN_NODE_POOLS": c.MAX_NUMBER_OF_LOGIN_NODE_POOLS,
    }


def placeholder_official_images() -> list[dict[str, Any]]:
    """One stand-in for each official ParallelCluster AMI (OS x architecture), named as the package
    looks them up. Registration asks for the head node's and queues' images before it registers the
    cluster-level validators (placement group, EFA, capacity). Root volume 1 GiB: any size is larger."""
    import hashlib

    from pcluster import utils
    from pcluster.constants import (
        OS_TO_IMAGE_NAME_PART_MAP,
        SUPPORTED_ARCHITECTURES,
        SUPPORTED_OSES,
    )

    images = []
    for os_name in SUPPORTED_OSES:
        for arch in SUPPORTED_ARCHITECTURES:
            name = f"aws-parallelcluster-{utils.get_installed_version()}-{OS_TO_IMAGE_NAME_PART_MAP[os_name]}-{arch}-placeholder"
            device = "/dev/xvda" if os_name.startswith("alinux") else "/dev/sda1"
            images.append({
                "ImageId": "ami-" + hashlib.sha256(name.encode()).hexdigest()[:17],
                "Name": name, "Architecture": arch, "State": "available", "OwnerId": "000000000000",
                "CreationDate": "2026-01-01T00:00:00.000Z", "RootDeviceName": device, "RootDeviceType": "ebs",
                "BlockDeviceMappings": [{"DeviceName": device, "Ebs": {"VolumeSize": 1, "VolumeType": "gp3",
                                                                        "SnapshotId": "snap-00000000000000000"}}],
                "Tags": [],
            })
    return images


def _dist_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("aws-parallelcluster")
    except PackageNotFoundError:
        return None


def _read(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    import yaml

    return yaml.safe_load(text)


def _walk(resource: Any, path: str):
    yield resource, path
    for child in resource._nested_resources():
        name = getattr(child, "name", None)
        label = type(child).__name__ + (f"[{name}]" if isinstance(name, str) else "")
        yield from _walk(child, f"{path}/{label}")


def _run(cls: type, args: dict[str, Any]) -> list[Any]:
    from pcluster.validators.common import AsyncValidator

    validator = cls()
    if issubclass(cls, AsyncValidator):
        return asyncio.run(validator.execute_async(**args))
    return validator.execute(**args)


def validate(path: Path) -> dict[str, Any]:
    from marshmallow import ValidationError
    from pcluster.schemas.cluster_schema import ClusterSchema
    from pcluster.validators.common import ValidatorContext

    report: dict[str, Any] = {
        "cluster_name": path.stem, "schema_errors": None, "failures": [], "ran": [], "skipped": {},
        "registration_incomplete": {},
    }
    data = _read(path)
    region = data.get("Region")
    if region:
        os.environ["AWS_DEFAULT_REGION"] = region
    REFUSED.clear()
    try:
        config = ClusterSchema(cluster_name=path.stem).load(data)
    except ValidationError as exc:
        report["schema_errors"] = exc.messages
        return report
    context = ValidatorContext()
    for resource, where in _walk(config, type(config).__name__):
        resource._validators.clear()
        REFUSED.clear()
        try:
            resource._register_validators(context)
        except Exception as exc:  # noqa: BLE001 -- an argument needed AWS; keep what was registered
            report["registration_incomplete"][where] = {
                "error": f"{type(exc).__name__}: {exc}", "aws_calls": sorted(set(REFUSED))}
        for cls, args in list(resource._validators):
            REFUSED.clear()
            try:
                results = _run(cls, args)
                crashed = None
            except Exception as exc:  # noqa: BLE001
                results, crashed = [], f"{type(exc).__name__}: {exc}"
            key = f"{where}:{cls.__name__}"
            if REFUSED or (crashed and _aws_error(crashed)):
                report["skipped"][key] = sorted(set(REFUSED)) or [crashed]
                continue
            if crashed:
                report["failures"].append({"validator": cls.__name__, "where": where, "level": "ERROR",
                                           "message": f"validator crashed: {crashed}"})
                continue
            report["ran"].append(key)
            for result in results or []:
                report["failures"].append({"validator": result.validator_type, "where": where,
                                           "level": str(result.level), "message": result.message})
    return report


def _aws_error(message: str) -> bool:
    """A crash caused by a refused AWS call whose result an earlier validator had already cached."""
    return message.startswith(("NoCredentialsError", "AWSClientError")) or "Unable to locate credentials" in message


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", type=Path, help="cluster configs (.json, .yaml)")
    parser.add_argument("--facts", type=Path,
                        help="JSON: {instance_types: {type: record}, subnets: {id: record}, file_systems: {id: record}, "
                             "images: [record]} in the shapes of EC2/FSx Describe* responses")
    parser.add_argument("--package-facts", action="store_true", help="only print the package's constants")
    args = parser.parse_args(argv)
    out: dict[str, Any] = {"package": package_facts()}
    if args.package_facts:
        print(json.dumps(out, indent=2, sort_keys=True))
        return 0
    if args.facts:
        FACTS.update(json.loads(args.facts.read_text(encoding="utf-8")))
    FACTS["images"] = list(FACTS.get("images") or []) + placeholder_official_images()
    out["configs"] = {str(p): validate(p) for p in args.configs}
    out["answered_from_facts"] = sorted(ANSWERED)
    print(json.dumps(out, indent=2, sort_keys=True, default=str))
    bad = any(r["schema_errors"] or any(f["level"] == "ERROR" for f in r["failures"]) for r in out["configs"].values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
