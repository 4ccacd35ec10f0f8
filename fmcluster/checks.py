"""Meaning checks: small named functions over a structurally valid project and its plan.

Each check yields :class:`Problem` s at level ``error`` (nothing is synthesized) or
``warning`` (printed, synthesis goes on). Warnings can be silenced by name in the project's
``suppress_warnings``; errors cannot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from fmcluster import catalog
from fmcluster.config import LoadedProject
from fmcluster.errors import ConfigError, Level, Problem
from fmcluster.plan import Plan, make_plan

CAPACITY_BLOCK_MAX_INSTANCES = 64
"""EC2 Capacity Blocks hold up to 64 instances (FACTS.md section 2)."""

Check = Callable[[LoadedProject, Plan], Iterator[Problem]]
CHECKS: dict[str, tuple[Level, Check]] = {}


def check(name: str, level: Level) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        CHECKS[name] = (level, fn)
        return fn

    return register


def _problem(loaded: LoadedProject, level: Level, name: str, loc: tuple[Any, ...], message: str, hint: str) -> Problem:
    from fmcluster.config import format_path

    return Problem(level, format_path(loc), message, hint, loaded.file, loaded.line(loc), name)


@check("compute-subnet-fits-vpc", "error")
def _subnet_in_vpc(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    net = plan.network
    if not net.existing and net.compute_subnet_cidr is None:
        loc = ("network", "compute_subnet_prefix") if loaded.project.network.compute_subnet_prefix else ("network", "vpc_cidr")
        yield _problem(
            loaded, "error", "compute-subnet-fits-vpc", loc,
            f"a /{net.compute_subnet_prefix} compute subnet and a public subnet do not both fit in {net.vpc_cidr}",
            f"use a larger vpc_cidr (e.g. a /{max(16, (net.compute_subnet_prefix or 17) - 1)}) or a smaller compute subnet",
        )


@check("compute-subnet-size", "error")
def _subnet_size(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    net = plan.network
    if net.ips_usable is None or net.ips_needed <= net.ips_usable:
        return
    p = loaded.project.network
    node_ips = sum(g.ips for g in plan.groups)
    loc = ("network", "existing", "compute_subnet_cidr") if net.existing else ("network", "compute_subnet_prefix")
    what = "the existing subnet" if net.existing else "the compute subnet"
    yield _problem(
        loaded, "error", "compute-subnet-size", loc,
        f"{what} (/{net.compute_subnet_prefix}) has {net.ips_usable} usable addresses but the plan needs "
        f"{net.ips_needed} ({node_ips} node IPs + {p.ip_headroom_percent}% headroom + {p.reserved_ips} reserved)",
        f"a /{net.smallest_prefix_that_fits} would fit: set compute_subnet_prefix: {net.smallest_prefix_that_fits}"
        if not net.existing else f"use a subnet of /{net.smallest_prefix_that_fits} or larger, or fewer nodes",
    )


@check("existing-subnet-size-unknown", "warning")
def _existing_size_unknown(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    if plan.network.existing and plan.network.ips_usable is None:
        yield _problem(
            loaded, "warning", "existing-subnet-size-unknown", ("network", "existing"),
            f"cannot check that the existing subnet holds the {plan.network.ips_needed} addresses the plan needs",
            "add compute_subnet_cidr to the existing network so the plan can check it",
        )


@check("training-plan-needs-hyperpod", "error")
def _training_plan(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    project = loaded.project
    for i, group in enumerate(project.compute_groups):
        if group.capacity.type == "training-plan" and project.orchestrator.type != "hyperpod":
            yield _problem(
                loaded, "error", "training-plan-needs-hyperpod", ("compute_groups", i, "capacity"),
                "a SageMaker training plan can only be used by a HyperPod cluster",
                "set orchestrator.type: hyperpod, or use a capacity-block or reservation",
            )


@check("placement-group-with-capacity-block", "warning")
def _pg_with_block(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    for i, group in enumerate(loaded.project.compute_groups):
        if group.capacity.type == "capacity-block" and group.placement_group is True:
            yield _problem(
                loaded, "warning", "placement-group-with-capacity-block", ("compute_groups", i, "placement_group"),
                "a placement group with a capacity block can keep instances from launching; the block is already placed",
                "remove placement_group (auto leaves it off for capacity blocks)",
            )


@check("capacity-block-size", "error")
def _block_size(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    for i, group in enumerate(loaded.project.compute_groups):
        if group.capacity.type == "capacity-block" and group.count > CAPACITY_BLOCK_MAX_INSTANCES:
            yield _problem(
                loaded, "error", "capacity-block-size", ("compute_groups", i, "count"),
                f"a capacity block holds at most {CAPACITY_BLOCK_MAX_INSTANCES} instances, not {group.count}",
                "split the nodes into several groups, one per capacity block",
            )


@check("ultraserver-multiple", "warning")
def _ultraserver(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    for i, group in enumerate(loaded.project.compute_groups):
        sizes = catalog.get(group.instance_type).ultraservers
        if sizes and all(group.count % u.instances for u in sizes):
            offers = ", ".join(f"{u.name} = {u.instances} instances" for u in sizes)
            yield _problem(
                loaded, "warning", "ultraserver-multiple", ("compute_groups", i, "count"),
                f"{group.instance_type} comes in UltraServers; {group.count} is not a whole number of them",
                f"use a multiple of an UltraServer ({offers})",
            )


@check("extra-rule-files", "error")
def _extra_rules(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    from pathlib import Path

    import yaml

    base = loaded.file.parent if loaded.file else Path(".")
    for i, name in enumerate(loaded.project.observability.extra_rule_files):
        path = base / name
        loc = ("observability", "extra_rule_files", i)
        if not path.is_file():
            yield _problem(loaded, "error", "extra-rule-files", loc, f"rule file {path} does not exist",
                           "paths are relative to the project file")
            continue
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            yield _problem(loaded, "error", "extra-rule-files", loc, f"{path} is not valid YAML ({exc})",
                           "check it with `promtool check rules FILE`")
            continue
        if not isinstance(data, dict) or not isinstance(data.get("groups"), list):
            yield _problem(loaded, "error", "extra-rule-files", loc, f"{path} is not a Prometheus rule file",
                           "a rule file is a mapping with a `groups:` list; check it with `promtool check rules FILE`")


@check("association-paths", "error")
def _association_paths(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    fsx = loaded.project.storage.fsx
    seen: list[tuple[int, str]] = []
    for i, assoc in enumerate(fsx.associations):
        path = assoc.file_system_path
        for j, other in seen:
            if path == other or path.startswith(other + "/") or other.startswith(path + "/"):
                yield _problem(
                    loaded, "error", "association-paths", ("storage", "fsx", "associations", i, "file_system_path"),
                    f"{path} overlaps association {j} ({other}); FSx does not allow nested or repeated paths",
                    "give each association its own top-level directory, e.g. /datasets and /checkpoints",
                )
        seen.append((i, path))


@check("association-bucket", "error")
def _association_bucket(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    from fmcluster.storage.config import S3_URI

    storage = loaded.project.storage
    own = storage.bucket.existing_name
    for i, assoc in enumerate(storage.fsx.associations):
        if assoc.data_repository_path is None:
            continue
        bucket = S3_URI.match(assoc.data_repository_path).group("bucket")  # type: ignore[union-attr]
        if bucket != own and bucket not in storage.external_buckets:
            yield _problem(
                loaded, "error", "association-bucket", ("storage", "fsx", "associations", i, "data_repository_path"),
                f"s3://{bucket}/ is not the project's bucket; FSx would read and write it",
                f"leave data_repository_path out to use the project bucket, or allow it: external_buckets: [{bucket}]",
            )


@check("checkpoint-target-reachable", "error")
def _checkpoint_unreachable(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    if plan.storage.unreachable:
        yield _problem(
            loaded, "error", "checkpoint-target-reachable", ("storage", "checkpoint", "target_write_seconds"),
            f"no valid FSx for Lustre size meets the target: {plan.storage.unreachable}",
            "allow a longer target_write_seconds, shard checkpoints to local NVMe first, or raise fsx.max_capacity_gib",
        )


@check("checkpoint-target-missed", "warning")
def _checkpoint_missed(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    st = plan.storage
    if st.meets_target is False and not st.unreachable:
        yield _problem(
            loaded, "warning", "checkpoint-target-missed", ("storage", "fsx"),
            f"a checkpoint takes {st.write_seconds:,.0f} s to write at {st.aggregate_mb_s / 1000:,.1f} GB/s "
            f"({st.capacity_gib:,} GiB), over the {st.target_write_seconds:g} s target",
            "raise storage_capacity_gib or throughput_per_tib, or leave them out and let the planner size FSx",
        )


def _register_orchestrator_checks() -> None:
    from fmcluster.parallelcluster.checks import PARALLELCLUSTER_CHECKS

    CHECKS.update(PARALLELCLUSTER_CHECKS)


_register_orchestrator_checks()


@check("suppressed-warning-exists", "warning")
def _known_suppressions(loaded: LoadedProject, plan: Plan) -> Iterator[Problem]:
    for i, name in enumerate(loaded.project.suppress_warnings):
        level = CHECKS.get(name, ("", None))[0]
        if level != "warning":
            valid = ", ".join(n for n, (lvl, _) in CHECKS.items() if lvl == "warning")
            yield _problem(
                loaded, "warning", "suppressed-warning-exists", ("suppress_warnings", i),
                f"{name!r} is not a warning check" + (" (errors cannot be suppressed)" if level == "error" else ""),
                f"warning checks: {valid}",
            )


def run_checks(loaded: LoadedProject, plan: Plan) -> list[Problem]:
    suppressed = set(loaded.project.suppress_warnings)
    found: list[Problem] = []
    for name, (level, fn) in CHECKS.items():
        if level == "warning" and name in suppressed:
            continue
        found.extend(fn(loaded, plan))
    return found


def validate(loaded: LoadedProject) -> tuple[Plan, list[Problem]]:
    """The plan and the warnings of a project; raises :class:`ConfigError` on any error."""
    plan = make_plan(loaded.project)
    problems = run_checks(loaded, plan)
    if any(p.level == "error" for p in problems):
        raise ConfigError(problems)
    return plan, problems
