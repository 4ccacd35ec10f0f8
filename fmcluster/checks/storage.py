"""Storage checks: data repository associations, the checkpoint target, EFA connections to FSx."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.config.storage import S3_URI
from fmcluster.facts import FSX_EFA_CONNECTIONS
from fmcluster.plan import Plan
from fmcluster.plan.storage import TB, duration_text


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


@check("fsx-throughput-low", "warning")
def _throughput_low(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Without a checkpoint section: the bound from GPU memory writes too slowly, or each GPU gets too little."""
    bound = plan.checkpoint_bound
    if bound is None or not (bound.too_slow or bound.per_gpu_low):
        return
    st = plan.storage
    found = []
    if bound.too_slow:
        found.append(f"a checkpoint of all {plan.gpus:,} GPUs' memory ({bound.bytes / TB:,.2f} TB, an upper bound) "
                     f"would take up to {duration_text(bound.write_seconds)} to write, over {duration_text(bound.limit_seconds)}")
    if bound.per_gpu_low:
        found.append(f"each GPU gets {bound.per_gpu_mb_s:,.1f} MB/s when all read at once, under "
                     f"{bound.per_gpu_floor_mb_s:g} MB/s")
    tier = "" if st.throughput_per_tib is None else f" at {st.throughput_per_tib} MB/s per TiB"
    if bound.suggestion_unreachable:
        fix = (f"; no file system up to fsx.max_capacity_gib meets both ({bound.suggestion_unreachable}): "
               "shard checkpoints to local NVMe first")
    else:
        size = f"storage_capacity_gib: {bound.suggested_capacity_gib}"
        if bound.suggested_throughput_per_tib is not None:
            size += f" and throughput_per_tib: {bound.suggested_throughput_per_tib}"
        fix = f", or set fsx {size} (the smallest that meets both)"
    yield Finding(("storage", "fsx"),
        f"FSx for Lustre ({st.capacity_gib:,} GiB{tier}, {st.aggregate_mb_s / 1000:,.2f} GB/s) is slow for this "
        f"cluster: " + "; ".join(found),
        f"describe the model in storage.checkpoint to size FSx for it{fix}",
    )



@check("fsx-efa-connections", "warning")
def _efa_connections(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Every GPU node mounts an EFA-enabled file system over the FSx guide's number of EFA interfaces."""
    field = plan.storage.efa_field
    if field is None:
        return
    per_group = [(g, g.fsx_efa_client_interfaces) for g in plan.groups if g.efa_interfaces]
    total = sum(g.count * n for g, n in per_group)
    if total <= FSX_EFA_CONNECTIONS:
        return
    detail = ", ".join(f"{g.name}: {g.count} x {n}" for g, n in per_group)
    yield Finding(field,
        f"the GPU nodes would open {total:,} EFA connections to the file system ({detail} interfaces per node, "
        f"the FSx guide's figure per instance type); one file system accepts {FSX_EFA_CONNECTIONS:,} over all "
        "clients, so the nodes past that get no EFA path to it",
        "split the nodes over several EFA-enabled file systems, or set efa_enabled: false (Lustre over TCP)",
    )


@check("checkpoint-interval-needs-fsx", "error")
def _interval_without_fsx(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """interval_minutes is read against the planned file system's throughput; without one it would be ignored."""
    ckpt = loaded.project.storage.checkpoint
    if ckpt is not None and ckpt.interval_minutes is not None and plan.goodput is None:
        where = "an existing file system, whose throughput" if plan.storage.fsx else "no FSx for Lustre, whose time"
        yield Finding(("storage", "checkpoint", "interval_minutes"),
            f"the checkpoint share of wall time is planned from the FSx the project creates; this project has "
            f"{where} fmcluster does not know",
            "remove interval_minutes (and node_failures_per_1000_node_days), or let the project create the file system",
        )


@check("checkpoint-time-share", "warning")
def _time_share(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Writing (and restoring) checkpoints takes more than TIME_SHARE_LIMIT of the wall time (fmcluster.plan.goodput)."""
    g = plan.goodput
    if g is None or not g.over_limit:
        return
    restoring = "" if g.restore_share is None else f" and {g.restore_share:.1%} restoring after failures"
    if g.suggestion_unreachable:
        fix = f"no file system up to fsx.max_capacity_gib brings it to {g.limit:.0%} ({g.suggestion_unreachable})"
    else:
        tier = f" at {g.suggested_throughput_per_tib} MB/s per TiB" if g.suggested_throughput_per_tib else ""
        fix = f"FSx of {g.suggested_capacity_gib:,} GiB{tier} would bring it to {g.limit:.0%} or under"
    if g.write_share >= 1:  # the next checkpoint would start before this one is written
        found = (f"a checkpoint takes {duration_text(g.write_seconds)} to write, longer than the "
                 f"{duration_text(g.interval_seconds)} between checkpoints: training would never run")
    else:
        found = (f"checkpoints take {g.share:.1%} of the cluster's wall time, over {g.limit:.0%}: "
                 f"{g.write_share:.1%} writing ({duration_text(g.write_seconds)} every "
                 f"{duration_text(g.interval_seconds)}){restoring}")
    yield Finding(("storage", "checkpoint", "interval_minutes"), f"{found}; {fix}",
        "give FSx that size (storage_capacity_gib, throughput_per_tib), checkpoint less often, or write "
        "asynchronously / to local NVMe first (then suppress checkpoint-time-share)",
    )


@check("fsx-efa-orchestrator", "error")
def _efa_orchestrator(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """An orchestrator that mounts FSx itself, over TCP, cannot use an EFA-enabled file system: said before any
    detail of the EFA configuration (fsx-efa-metadata), which it makes moot."""
    where, refusal = plan.storage.efa_field, plan.cluster.driver.efa_file_system_refusal
    if where is not None and refusal:
        yield Finding(where, refusal, "use a file system without EFA (efa_enabled: false) for this orchestrator, or "
                                      "orchestrator.type: none")


@check("fsx-efa-metadata", "error")
def _efa_metadata(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """FSx requires a metadata configuration on an EFA-enabled file system (FSx for Lustre guide, EFA-enabled file
    systems)."""
    fsx = loaded.project.storage.fsx
    where = plan.storage.efa_field
    if where is not None and not plan.cluster.driver.efa_file_system_refusal and fsx.metadata is None:
        yield Finding(where, "an EFA-enabled file system needs a metadata configuration",
                      "add `metadata: {mode: AUTOMATIC}` under storage.fsx")
