"""Render the node bootstrap bundle: a typed context -> Jinja templates -> a bundle directory.

A bundle is what one node role of one compute group runs at boot::

    bootstrap.sh        the entry script (small enough for EC2 user data)
    steps/NN-name.sh    one self-contained script per step, run in order by the entry
    files/...           data the steps install (the DCGM counters file, the EFA counters collector)
    SHA256SUMS          digests of steps/ and files/; the entry checks them before running anything
    manifest.json       what was rendered, from which versions, and which checksums are placeholders

Everything the scripts know comes from the context (:mod:`fmcluster.bootstrap.context`, built
from the plan) and ``versions.yaml`` (:mod:`fmcluster.bootstrap.versions`). Templates never
state a figure.

The entry script either finds the bundle beside itself (HyperPod lifecycle scripts, a bundle
copied by hand) or downloads it from ``bundle_s3_uri`` (launch-template user data,
ParallelCluster custom actions). Because the entry embeds the digest of ``SHA256SUMS``, render
the bundle first, publish it, then call :func:`entry_script` with the published URI.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
from functools import cache
from pathlib import Path
from typing import Any, Literal

from fmcluster.bootstrap import budget, staging
from fmcluster.bootstrap.collector import (
    NODE_REMOTE_WRITE_MARKER,
    render_node_agent_config,
)
from fmcluster.bootstrap.templating import bytecode_cache
from fmcluster.bootstrap.context import (
    FSX_BOOT_ENV,
    BootstrapContext,
    Flavour,
    Role,
    needed_placeholders,
    optional_unpinned,
)
from fmcluster.bootstrap.versions import Arch, BootstrapError, _Frozen
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from pydantic import Field

from fmcluster import templates

TEMPLATES_DIR = templates.BOOTSTRAP
DCGM_COUNTERS_FILE = templates.DCGM_COUNTERS

USER_DATA_LIMIT = 16 * 1024
"""EC2 user data may hold at most 16 KB (before base64)."""

ENTRY_NAME = "bootstrap.sh"


def _shell_quote(value: object) -> str:
    return shlex.quote(str(value))


@cache
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        # Bash's ${#array[@]} would open a Jinja comment: templates have no comments of their own.
        comment_start_string="<%#",
        comment_end_string="#%>",
    )
    env.bytecode_cache = bytecode_cache(env)
    env.filters["q"] = _shell_quote
    return env


class StepEntry(_Frozen):
    name: str
    file: str
    description: str
    sha256: str


class Manifest(_Frozen):
    """What a bundle holds; written as ``manifest.json`` beside it."""

    format: Literal[1] = 1
    project: str
    group: str | None
    role: Role
    flavour: Flavour
    os: str
    arch: Arch
    instance_type: str | None
    entry: str
    entry_bytes: int
    steps: list[StepEntry]
    files: dict[str, str] = Field(description="Relative path -> sha256 of every file SHA256SUMS covers.")
    sums_sha256: str = Field(description="sha256 of SHA256SUMS; the entry script embeds it.")
    versions: dict[str, str]
    placeholders: list[str] = Field(description="versions.yaml keys not pinned that this bundle needs at boot (it stops there).")
    optional_unpinned: list[str] = Field(
        default_factory=list,
        description="Unpinned keys of optional components: skipped with a warning when the image lacks them.")
    staged: list[dict[str, str]] = Field(
        default_factory=list,
        description="Downloads the deployment stages in its asset bucket (fmcluster.bootstrap.staging): name, url, sha256.")


def _render(template: str, ctx: BootstrapContext, **extra: Any) -> str:
    env = _environment()
    return env.get_template(template).render(ctx=ctx, v=ctx.versions, a=ctx.artifacts(), **extra)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def render_files(ctx: BootstrapContext) -> dict[str, str]:
    """Relative path -> content of every file SHA256SUMS covers (steps and data files)."""
    files: dict[str, str] = {}
    for step in ctx.steps():
        files[f"steps/{step.name}.sh"] = _render(step.template, ctx, step=step, marker=NODE_REMOTE_WRITE_MARKER)
    if ctx.options.exporters:
        files["files/prometheus-agent.yml"] = render_node_agent_config(ctx.project, gpu=ctx.gpu,
                                                                       slurm=ctx.slurm_metrics)
        if ctx.gpu:  # for a node whose DCGM has no exporter release: no dcgm-exporter target to stay down forever
            files["files/prometheus-agent-no-dcgm.yml"] = render_node_agent_config(ctx.project, gpu=False,
                                                                                   slurm=ctx.slurm_metrics)
    if ctx.gpu and ctx.options.exporters:
        if not DCGM_COUNTERS_FILE.is_file():
            raise BootstrapError(
                f"the DCGM counters file {DCGM_COUNTERS_FILE} is missing; the observability templates own it "
                "(it lists the XID, ECC SBE/DBE, thermal-violation and row-remap fields)"
            )
        files["files/dcgm-counters.csv"] = _package_text(DCGM_COUNTERS_FILE)
        files["files/fmcluster-efa-counters"] = _render("partials/efa_counters.sh.j2", ctx)
    if ctx.slurm_metrics:
        files["files/fmcluster-slurm-metrics"] = _render("partials/slurm_metrics.sh.j2", ctx)
    if ctx.gpu and ctx.options.containers:
        files["files/fmcluster-enroot-nccl.sh"] = _render("partials/enroot_nccl_hook.sh.j2", ctx)
    if ctx.lnet_over_efa:
        files["files/fmcluster-lnet-efa"] = _render("partials/lnet_efa.sh.j2", ctx)
    names = {s.name for s in ctx.steps()}
    if "20-nvidia" in names and ctx.imex_members_at_boot:
        files["files/fmcluster-imex"] = _render("partials/imex.sh.j2", ctx)
    if "85-imex-prolog" in names:
        files["files/91_fmcluster_imex_prolog.sh"] = _render("partials/imex_prolog.sh.j2", ctx)
    if "88-slurm-policy" in names:
        files["files/fmcluster-partition-qos"] = _render("partials/partition_qos.sh.j2", ctx,
                                                         step_name="88-slurm-policy")
    if "89-slurm-teams" in names:
        files["files/fmcluster-slurm-teams"] = _render("partials/slurm_teams.sh.j2", ctx, step_name="89-slurm-teams")
    if ctx.node_health:
        files["files/fmcluster-node-health"] = _render("partials/node_health.sh.j2", ctx)
    if "60-nvme" in names:
        files["files/fmcluster-scratch"] = _render("partials/scratch.sh.j2", ctx)
    return files


@cache
def _package_text(path: Path) -> str:
    """A data file of the package, read once per process (every GPU bundle of every project ships the DCGM one)."""
    return path.read_text(encoding="utf-8")


def _sums(files: dict[str, str]) -> str:
    return "".join(f"{_sha256(content.encode())}  {path}\n" for path, content in sorted(files.items()))


BOOT_ENV_VALUE = re.compile(r"^[A-Za-z0-9._:/${}\[\]-]*$")
"""Values the entry script may export: IDs, DNS names and CDK token placeholders; nothing to escape."""


def entry_script(ctx: BootstrapContext, sums_sha256: str, boot_env: dict[str, str] | None = None,
                 *, require_boot_env: bool = True) -> str:
    """The entry script for ``ctx`` (use it as user data, or a ParallelCluster custom action).

    ``sums_sha256`` is :attr:`Manifest.sums_sha256` of the bundle it will run; ``ctx`` may
    differ from the bundle's context only in ``bundle_s3_uri``. ``boot_env`` holds values
    known only at deploy time (CDK tokens are fine: CloudFormation fills them into the user
    data), exported to every step: the FSx identity when :attr:`FsxMount.at_boot`. The copy
    inside the bundle (``require_boot_env=False``) takes them from its caller's environment.
    """
    if not re.fullmatch(r"[0-9a-f]{64}", sums_sha256):
        raise BootstrapError("sums_sha256 must be the sha256 of the bundle's SHA256SUMS")
    boot_env = dict(boot_env or {})
    if require_boot_env and ctx.fsx is not None and ctx.fsx.at_boot and set(FSX_BOOT_ENV) - set(boot_env):
        raise BootstrapError(f"the FSx identity comes at boot: boot_env needs {', '.join(FSX_BOOT_ENV)}")
    for key, value in boot_env.items():
        if not re.fullmatch(r"FMC_[A-Z0-9_]+", key) or not BOOT_ENV_VALUE.match(value):
            raise BootstrapError(f"boot_env {key}={value!r}: keys are FMC_*, values plain IDs or names")
    limit = ctx.boot_limit
    text = _render("entry.sh.j2", ctx, steps=ctx.steps(), sums_sha256=sums_sha256, boot_env=sorted(boot_env.items()),
                   deadline_s=budget.deadline_s(ctx), rerun_s=budget.rerun_s(ctx), limit_s=limit.seconds,
                   limit_name=limit.name)
    if len(text.encode()) > USER_DATA_LIMIT:
        raise BootstrapError(f"the entry script is {len(text.encode())} bytes; EC2 user data holds {USER_DATA_LIMIT}")
    return text


def render_bundle(ctx: BootstrapContext, out_dir: Path | str) -> Manifest:
    """Write the bundle for ``ctx`` into ``out_dir`` and return its manifest.

    ``out_dir`` is created; its ``steps/`` and ``files/`` are replaced, the other files it
    renders overwritten. Publish the directory as it is (a CDK asset, or an S3 prefix for
    HyperPod lifecycle scripts).
    """
    out = Path(out_dir)
    files = render_files(ctx)
    for sub in ("steps", "files"):  # ours alone: no stale step survives a re-render
        if (out / sub).is_dir():
            shutil.rmtree(out / sub)
    sums = _sums(files)
    sums_sha256 = _sha256(sums.encode())
    entry = entry_script(ctx, sums_sha256, require_boot_env=False)
    for path, content in files.items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        if path.endswith(".sh") or path.startswith("files/fmcluster-"):
            target.chmod(0o755)
    (out / "SHA256SUMS").write_text(sums, encoding="utf-8")
    (out / ENTRY_NAME).write_text(entry, encoding="utf-8")
    (out / ENTRY_NAME).chmod(0o755)
    manifest = Manifest(
        project=ctx.project,
        group=ctx.group,
        role=ctx.role,
        flavour=ctx.flavour,
        os=ctx.os,
        arch=ctx.arch,
        instance_type=ctx.instance.instance_type if ctx.instance else None,
        entry=ENTRY_NAME,
        entry_bytes=len(entry.encode()),
        steps=[
            StepEntry(
                name=s.name,
                file=f"steps/{s.name}.sh",
                description=s.description,
                sha256=_sha256(files[f"steps/{s.name}.sh"].encode()),
            )
            for s in ctx.steps()
        ],
        files={path: _sha256(content.encode()) for path, content in sorted(files.items())},
        sums_sha256=sums_sha256,
        versions=ctx.versions.summary(),
        placeholders=needed_placeholders(ctx),
        optional_unpinned=optional_unpinned(ctx),
        staged=staging.staged(ctx),
    )
    (out / "manifest.json").write_text(json.dumps(manifest.model_dump(), indent=2) + "\n", encoding="utf-8")
    return manifest


HEAD_NODE_BUNDLE = "head-node"
"""ParallelCluster: the folder (and dispatcher key) of the head node's bundle, beside the instance types'."""


def dispatcher_script(project: str, sums_by_instance_type: dict[str, str], metrics: bool = False) -> str:
    """One script for nodes of several instance types: fetches an archive holding one bundle per
    instance type (each in a folder named after it), checks this node's bundle against its
    rendered :attr:`Manifest.sums_sha256`, and runs it. Takes the archive's S3 URI as ``$1``; with ``metrics``
    (the project's metrics workspace is on) it needs the workspace's remote-write URL as ``$2``, so the script's
    digest tells a cluster with metrics from one without."""
    for itype, digest in sums_by_instance_type.items():
        if not re.fullmatch(r"[a-z0-9.-]+", itype) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise BootstrapError(f"dispatcher: bad bundle entry {itype!r}: {digest!r}")
    return _environment().get_template("dispatch.sh.j2").render(
        project=project, sums=sorted(sums_by_instance_type.items()), entry=ENTRY_NAME,
        head_bundle=HEAD_NODE_BUNDLE, metrics=metrics)


LAUNCHER_NAME = "fmcluster-launch.sh"
LAUNCHER_SHA256 = "088cee4572c907b086bf01dd66943d7e89278152996f8e720586a3ad1c51d4e4"
"""The sha256 of :func:`launcher_script`. Every deployed ParallelCluster cluster names the launcher's asset (its
content hash) in OnNodeConfigured, which ParallelCluster never updates: a launcher with other content makes every
cluster's next deploy a change ParallelCluster refuses. A test holds the launcher to this digest; change both only
with a release note that deployed clusters must be recreated."""


def launcher_script() -> str:
    """The launcher (``templates/bootstrap/launch.sh.j2``): the same text for every project and setting. It reads a
    bootstrap pointer (an SSM parameter: ``<s3 URL> <sha256> [args...]``), downloads the script it names, checks the
    digest and runs it (see the script's header)."""
    return _environment().get_template("launch.sh.j2").render()
