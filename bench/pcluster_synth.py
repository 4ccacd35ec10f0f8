#!/usr/bin/env python3
"""ParallelCluster's own synthesis of one cluster, offline: the reference ``bench/synth_bench.py`` compares ours with.

Runs INSIDE ``.venv-pcluster`` (ParallelCluster pins CDK v1 and jsii 1.85)::

    .venv-pcluster/bin/python bench/pcluster_synth.py --facts facts.json cluster.yaml OUTDIR

What `pcluster create-cluster` does to turn a configuration into its CloudFormation template, in one process:

1. ``ClusterSchema(cluster_name=...).load(dict)`` builds the cluster model from ``cluster.yaml`` (the
   package's own loader, as its tests do: ``tests/pcluster/templates/test_cluster_stack.py``);
2. ``CDKTemplateBuilder.build_cluster_template(cluster_config, bucket, stack_name)``
   (``pcluster/templates/cdk_builder.py``) imports CDK v1, builds ``ClusterCdkStack``
   (``pcluster/templates/cluster_stack.py``) and its nested stacks, ``app.synth()``, and reads the template
   and assets back (``CDKArtifactsManager``).

The cluster's validators (the other half of create-cluster, which calls AWS at length) do not run: this is
synthesis alone, as ours is.

Mocked, and nothing else: botocore's ``BaseClient._make_api_call`` (every AWS call the package makes goes
through it). It answers ``DescribeInstanceTypes``, ``DescribeSubnets`` and ``DescribeFileSystems`` from ``--facts``
(records in those calls' own response shapes), ``DescribeImages`` with one official ParallelCluster AMI named as the
package looks it up (``_official_image``), ``GetCallerIdentity`` with
account ``000000000000``, and accepts ``PutObject`` (the asset upload) without storing it; every other call is
refused (``NoCredentialsError``) and listed in the report. The network is blocked, credentials and config files
point at nothing, the Region is us-east-1. The cluster's S3 bucket is an ``S3Bucket`` named as the package's
tests name theirs (``dummy_cluster_bucket``).

Writes the template as ``OUTDIR/cluster.template.json`` and prints a JSON report (``calls``, ``refused``,
``resources``) on stdout; exit 1 when a call was refused or no template came out.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import pcluster_offline  # noqa: E402 (first: seals the process before botocore loads)

pcluster_offline.seal("pcluster_synth", "us-east-1")

import botocore.client  # noqa: E402
import botocore.exceptions  # noqa: E402

ACCOUNT = "000000000000"
FACTS: dict[str, Any] = {}
CALLS: list[str] = []
REFUSED: list[str] = []


def _found(params: dict[str, Any], key: str, facts: str) -> list[dict[str, Any]] | None:
    wanted = params.get(key) or []
    found = [FACTS[facts][k] for k in wanted if k in FACTS[facts]]
    return found if wanted and len(found) == len(wanted) else None


def _answer(self: Any, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    CALLS.append(operation)
    answers = {
        "DescribeInstanceTypes": lambda: {"InstanceTypes": _found(params, "InstanceTypes", "instance_types")},
        "DescribeSubnets": lambda: {"Subnets": _found(params, "SubnetIds", "subnets")},
        "DescribeFileSystems": lambda: {"FileSystems": _found(params, "FileSystemIds", "file_systems")},
        "DescribeImages": lambda: {"Images": FACTS["images"]},
        "GetCallerIdentity": lambda: {"Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/bench", "UserId": "b"},
        "PutObject": lambda: {"ETag": '"0"'},
    }
    answer = answers[operation]() if operation in answers else None
    if answer is None or None in answer.values():
        REFUSED.append(operation)
        raise botocore.exceptions.NoCredentialsError()
    return answer


botocore.client.BaseClient._make_api_call = _answer  # type: ignore[method-assign]


def _official_image(os_name: str, arch: str) -> dict[str, Any]:
    """The official ParallelCluster AMI the package looks up for the head node and queues (DescribeImages)."""
    from pcluster import utils
    from pcluster.constants import OS_TO_IMAGE_NAME_PART_MAP

    name = f"aws-parallelcluster-{utils.get_installed_version()}-{OS_TO_IMAGE_NAME_PART_MAP[os_name]}-{arch}-bench"
    device = "/dev/xvda" if os_name.startswith("alinux") else "/dev/sda1"
    return {"ImageId": "ami-00000000000000000", "Name": name, "Architecture": arch, "State": "available",
            "OwnerId": ACCOUNT, "CreationDate": "2026-01-01T00:00:00.000Z", "RootDeviceName": device,
            "RootDeviceType": "ebs", "Tags": [],
            "BlockDeviceMappings": [{"DeviceName": device, "Ebs": {"VolumeSize": 40, "VolumeType": "gp3",
                                                                    "SnapshotId": "snap-00000000000000000"}}]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", required=True, type=Path)
    parser.add_argument("--name", default="default-slurm", help="the cluster's name (its stack name)")
    parser.add_argument("config", type=Path)
    parser.add_argument("outdir", type=Path)
    args = parser.parse_args()
    logging.disable(logging.WARNING)

    import yaml
    from pcluster.models.s3_bucket import S3Bucket
    from pcluster.schemas.cluster_schema import ClusterSchema
    from pcluster.templates.cdk_builder import CDKTemplateBuilder

    FACTS.update(json.loads(args.facts.read_text(encoding="utf-8")))
    config = yaml.safe_load(args.config.read_text(encoding="utf-8"))
    archs = {FACTS["instance_types"][config["HeadNode"]["InstanceType"]]["ProcessorInfo"]["SupportedArchitectures"][0]}
    FACTS["images"] = [_official_image(config["Image"]["Os"], arch) for arch in sorted(archs)]
    cluster = ClusterSchema(cluster_name=args.name).load(config)
    bucket = S3Bucket(name="parallelcluster-a69601b5ee1fc2f2-v1-do-not-delete",
                      stack_name=f"parallelcluster-{args.name}",
                      service_name=args.name, artifact_directory=f"parallelcluster/clusters/{args.name}-bench")
    template, assets = CDKTemplateBuilder().build_cluster_template(cluster_config=cluster, bucket=bucket,
                                                                  stack_name=args.name)
    args.outdir.mkdir(parents=True, exist_ok=True)
    (args.outdir / "cluster.template.json").write_text(json.dumps(template, indent=1, default=str))
    report = {"calls": sorted(set(CALLS)), "refused": sorted(set(REFUSED)),
              "resources": len(template.get("Resources", {})), "assets": len(assets)}
    print(json.dumps(report))
    sys.exit(1 if REFUSED or not report["resources"] else 0)


if __name__ == "__main__":
    main()
