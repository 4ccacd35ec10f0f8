"""The monitoring artefacts the nodes' bundles list, staged at deploy in the deployment's asset bucket
(:mod:`fmcluster.bootstrap.staging`): one CDK file asset per tarball whose source is ``fmcluster artefact stage``, run
by the CDK CLI's asset publisher only when the object is not there yet; its key is the tarball's sha256."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from fmcluster.bootstrap import staging
from fmcluster.bootstrap.versions import BootstrapError
from fmcluster.stacks.tokens import AWS


@dataclass(frozen=True)
class Staged:
    """Where the stack's staged artefacts are: the bucket, and each object's ARN (what a node role may read)."""

    bucket_name: str | None
    read_arns: tuple[str, ...]


NONE = Staged(None, ())


def staged_of(stack: Stack) -> Staged:
    """What the cluster stack staged (:class:`fmcluster.stacks.cluster.ClusterStack`'s ``staged``); nothing in any
    other stack (a construct built alone in a test's stack)."""
    return getattr(stack, "staged", NONE)


def grant_staged(stack: Stack, role: iam.IRole) -> None:
    """``role`` may read ``stack``'s staged artefacts: exactly those objects, no wildcard on the shared asset bucket."""
    arns = staged_of(stack).read_arns
    if arns:
        role.add_to_principal_policy(iam.PolicyStatement(sid="ReadStagedArtefacts", actions=["s3:GetObject"],
                                                         resources=list(arns)))


def stage(stack: Stack, artefacts: Sequence[dict[str, str]]) -> Staged:
    """Add one asset per artefact to ``stack``; none when there are none."""
    if not artefacts:
        return NONE
    synthesizer = stack.synthesizer
    locations = [synthesizer.add_file_asset(source_hash=a["sha256"], executable=staging.stage_command(a))
                 for a in artefacts]
    for artefact, location in zip(artefacts, locations, strict=True):
        # the nodes look for s3://BUCKET/SHA256 (templates/bootstrap/exporters.sh.j2, fmc_download_staged)
        if location.object_key != artefact["sha256"]:
            raise BootstrapError(f"the asset of {artefact['name']} is at key {location.object_key}, not its sha256: "
                                 "the stack synthesizer adds a prefix the nodes do not know")
    bucket = locations[0].bucket_name
    return Staged(bucket, tuple(f"arn:{AWS.PARTITION}:s3:::{bucket}/{loc.object_key}" for loc in locations))
