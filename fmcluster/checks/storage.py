"""Storage checks: data repository associations and the checkpoint target."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.config.storage import S3_URI
from fmcluster.plan import Plan


@check("association-paths", "error")
def _association_paths(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    fsx = loaded.project.storage.fsx
    seen: list[tuple[int, str]] = []
    for i, assoc in enumerate(fsx.associations):
        path = assoc.file_system_path
        for j, other in seen:
            if path == other or path.startswith(other + "/") or other.startswith(path + "/"):
                yield Finding(("storage", "fsx", "associations", i, "file_system_path"),
                    f"{path} overlaps association {j} ({other}); FSx does not allow nested or repeated paths",
                    "give each association its own top-level directory, e.g. /datasets and /checkpoints",
                )
        seen.append((i, path))


@check("association-bucket", "error")
def _association_bucket(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    storage = loaded.project.storage
    own = storage.bucket.existing_name
    for i, assoc in enumerate(storage.fsx.associations):
        if assoc.data_repository_path is None:
            continue
        bucket = S3_URI.match(assoc.data_repository_path).group("bucket")  # type: ignore[union-attr]
        if bucket != own and bucket not in storage.external_buckets:
            yield Finding(("storage", "fsx", "associations", i, "data_repository_path"),
                f"s3://{bucket}/ is not the project's bucket; FSx would read and write it",
                f"leave data_repository_path out to use the project bucket, or allow it: external_buckets: [{bucket}]",
            )


@check("checkpoint-target-reachable", "error")
def _checkpoint_unreachable(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if plan.storage.unreachable:
        yield Finding(("storage", "checkpoint", "target_write_seconds"),
            f"no valid FSx for Lustre size meets the target: {plan.storage.unreachable}",
            "allow a longer target_write_seconds, shard checkpoints to local NVMe first, or raise fsx.max_capacity_gib",
        )


@check("checkpoint-target-missed", "warning")
def _checkpoint_missed(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    st = plan.storage
    if st.meets_target is False and not st.unreachable:
        yield Finding(("storage", "fsx"),
            f"a checkpoint takes {st.write_seconds:,.0f} s to write at {st.aggregate_mb_s / 1000:,.1f} GB/s "
            f"({st.capacity_gib:,} GiB), over the {st.target_write_seconds:g} s target",
            "raise storage_capacity_gib or throughput_per_tib, or leave them out and let the planner size FSx",
        )

