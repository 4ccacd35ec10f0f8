"""Helpers for the ParallelCluster tests: projects from dicts, configs with placeholder IDs."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import yaml

from fmcluster import config
from fmcluster.plan import make_plan

BASE: dict[str, Any] = {
    "name": "pc",
    "availability_zone_id": "use1-az6",
    "compute_groups": [{"name": "train", "instance_type": "p5.48xlarge", "count": 4}],
    "orchestrator": {"type": "parallelcluster"},
}


def project_dict(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    data.update(changes)
    return data


def load(data: dict[str, Any] | str, file: str = "pc.yaml") -> config.LoadedProject:
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    return config.parse(text, Path(file))


def generated(data: dict[str, Any] | config.LoadedProject, *, fsx: bool = True, metrics: bool = False,
              region: str | None = "us-east-1") -> dict[str, Any]:
    from fmcluster.contracts import StorageContract
    from fmcluster.parallelcluster import generate, placeholders

    loaded = data if isinstance(data, config.LoadedProject) else load(data)
    project = loaded.project
    plan = make_plan(project)
    storage = placeholders.storage(project, plan)
    if fsx and storage.fsx is None:
        from fmcluster.contracts import MountContract

        storage = StorageContract(storage.bucket_name, storage.bucket_arn,
                                  MountContract("fs-00000000000000000", "fs.example", "placeholder", "/fsx", False), None)
    if not fsx:
        storage = StorageContract(storage.bucket_name, storage.bucket_arn, None, None)
    return generate.cluster_config(
        project, plan, network=placeholders.NETWORK, storage=storage,
        bootstrap_uri=placeholders.bootstrap_uri(project), node_policy_arns=[placeholders.node_policy_arn(project)],
        region=region,
    )


def moto_instance_types() -> dict[str, dict[str, Any]]:
    """moto 5.2.5's bundled DescribeInstanceTypes records (a snapshot of real AWS answers)."""
    import moto

    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    with gzip.open(path) as fh:
        return json.load(fh)
