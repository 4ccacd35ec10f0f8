"""Render the node bootstrap bundle: a typed context -> Jinja templates -> a bundle directory.

A bundle is what one node role of one compute group runs at boot::

    bootstrap.sh        the entry script (small enough for EC2 user data)
    steps/NN-name.sh    one self-contained script per step, run in order by the entry
    files/...           data the steps install (the DCGM counters file, the EFA counters collector)
    SHA256SUMS          digests of steps/ and files/; the entry checks them before running anything
    manifest.json       what was rendered, from which versions, and which checksums are placeholders

Everything the scripts know comes from three places only: the project config
(:mod:`fmcluster.config`), the instance catalog (:mod:`fmcluster.catalog`) and
``versions.yaml`` (every version, URL, checksum and key). Templates never state a figure.

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

import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fmcluster import catalog
from fmcluster.config import OperatingSystem, Project

PACKAGE_DIR = Path(__file__).resolve().parent
TEMPLATES_DIR = PACKAGE_DIR.parent / "templates" / "bootstrap"
VERSIONS_FILE = PACKAGE_DIR / "versions.yaml"
DCGM_COUNTERS_FILE = PACKAGE_DIR.parent / "templates" / "observability" / "dcgm-counters.csv"

USER_DATA_LIMIT = 16 * 1024
"""EC2 user data may hold at most 16 KB (before base64)."""

ENTRY_NAME = "bootstrap.sh"

Role = Literal["head", "login", "compute"]
Flavour = Literal["self-managed", "parallelcluster", "hyperpod"]
Arch = Literal["x86_64", "aarch64"]

ROLES: tuple[Role, ...] = ("head", "login", "compute")
FLAVOURS: tuple[Flavour, ...] = ("self-managed", "parallelcluster", "hyperpod")
ARCHES: tuple[Arch, ...] = ("x86_64", "aarch64")
OPERATING_SYSTEMS: tuple[str, ...] = ("ubuntu-22.04", "ubuntu-24.04", "al2023")

_ORCHESTRATOR_FLAVOUR: dict[str, Flavour] = {
    "none": "self-managed",
    "parallelcluster": "parallelcluster",
    "hyperpod": "hyperpod",
}
_CATALOG_ARCH: dict[str, Arch] = {"x86_64": "x86_64", "arm64": "aarch64"}
_UBUNTU_CODENAMES = {"22.04": "jammy", "24.04": "noble"}


class BootstrapError(Exception):
    """The bundle cannot be rendered (bad input, missing file); the message says what to do."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- versions.yaml ---------------------------------------------------------------------------

Sha256 = str | None


class Artifact(_Frozen):
    """One file downloaded at boot, verified by sha256 or by a GPG signature."""

    url: str = Field(description="URL template ({version}, {arch}, {deb_arch}, {go_arch}, {nv_arch}).")
    sha256: Sha256 | dict[Arch, Sha256] = Field(default=None, description="Digest, per-arch digests, or null (placeholder).")
    signature_url: str | None = Field(default=None, description="Detached GPG signature URL template.")
    gpg_key_url: str | None = Field(default=None, description="URL of the signing key.")
    gpg_fingerprint: str | None = Field(default=None, description="40-hex fingerprint of the signing key.")

    @field_validator("sha256")
    @classmethod
    def _hex(cls, value: Any) -> Any:
        for digest in value.values() if isinstance(value, dict) else [value]:
            if digest is not None and not re.fullmatch(r"[0-9a-f]{64}", digest):
                raise ValueError(f"{digest!r} is not a sha256 hex digest (64 lowercase hex characters)")
        return value

    @field_validator("gpg_fingerprint")
    @classmethod
    def _fingerprint(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[0-9A-F]{40}", value):
            raise ValueError(f"{value!r} is not a GPG fingerprint (40 uppercase hex characters, no spaces)")
        return value

    @model_validator(mode="after")
    def _gpg_complete(self) -> Artifact:
        gpg = (self.signature_url, self.gpg_key_url, self.gpg_fingerprint)
        if any(gpg) and not all(gpg):
            raise ValueError("GPG verification needs signature_url, gpg_key_url and gpg_fingerprint together")
        return self


class _Component(_Frozen):
    version: str


class EfaInstaller(_Component):
    bundles: dict[str, str]
    tarball: Artifact


class AwsOfiNccl(_Component):
    plugin_dir: dict[Literal["ubuntu", "al2023"], str]


class NvidiaDriver(_Component):
    kernel_module_type: Literal["open"]
    runfile: Artifact


class FabricManager(_Component):
    archive: Artifact


class NvidiaImex(_Component):
    source: Literal["image"]


class Gdrcopy(_Component):
    source: Artifact


class NodeExporter(_Component):
    port: int
    tarball: Artifact


class DcgmExporter(_Component):
    port: int
    image: str
    tag: str
    digest: str | None = None

    @field_validator("digest")
    @classmethod
    def _digest(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"sha256:[0-9a-f]{64}", value):
            raise ValueError(f"{value!r} is not an image digest (sha256:<64 hex>)")
        return value


class EfaExporter(_Frozen):
    interval_seconds: int = Field(ge=1, le=3600)


class Enroot(_Component):
    deb: Artifact
    deb_caps: Artifact
    rpm: Artifact
    rpm_caps: Artifact


class Pyxis(_Component):
    source: Artifact


class LustreClient(_Frozen):
    al2023_package: str
    ubuntu_repo_url: str
    ubuntu_key_url: str
    ubuntu_key_fingerprint: str | None = None

    @field_validator("ubuntu_key_fingerprint")
    @classmethod
    def _fingerprint(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[0-9A-F]{40}", value):
            raise ValueError(f"{value!r} is not a GPG fingerprint (40 uppercase hex characters, no spaces)")
        return value


class Versions(_Frozen):
    """The parsed ``versions.yaml``."""

    schema_version: Literal[1]
    as_of: str
    efa_installer: EfaInstaller
    aws_ofi_nccl: AwsOfiNccl
    nvidia_driver: NvidiaDriver
    fabric_manager: FabricManager
    nvidia_imex: NvidiaImex
    cuda: _Component
    nccl: _Component
    gdrcopy: Gdrcopy
    node_exporter: NodeExporter
    dcgm_exporter: DcgmExporter
    efa_exporter: EfaExporter
    enroot: Enroot
    pyxis: Pyxis
    lustre_client: LustreClient

    @model_validator(mode="after")
    def _fabric_manager_matches_driver(self) -> Versions:
        if self.fabric_manager.version != self.nvidia_driver.version:
            raise ValueError(
                f"fabric_manager.version {self.fabric_manager.version} must equal nvidia_driver.version "
                f"{self.nvidia_driver.version}: Fabric Manager has to match the driver exactly"
            )
        if self.nvidia_imex.version != self.nvidia_driver.version:
            raise ValueError("nvidia_imex.version must equal nvidia_driver.version")
        return self

    def summary(self) -> dict[str, str]:
        """Component -> version, for the manifest and the CLI."""
        out: dict[str, str] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, _Component):
                out[name] = value.version
        return out

    def placeholders(self) -> list[str]:
        """Dotted keys of every checksum, digest or fingerprint not pinned yet."""
        found: list[str] = []

        def walk(prefix: str, value: Any) -> None:
            if isinstance(value, Artifact):
                if value.gpg_fingerprint is None:
                    if value.sha256 is None:
                        found.append(f"{prefix}.sha256")
                    elif isinstance(value.sha256, dict):
                        found.extend(f"{prefix}.sha256.{arch}" for arch, d in value.sha256.items() if d is None)
                return
            if isinstance(value, BaseModel):
                for name in type(value).model_fields:
                    walk(f"{prefix}.{name}" if prefix else name, getattr(value, name))

        walk("", self)
        if self.dcgm_exporter.digest is None:
            found.append("dcgm_exporter.digest")
        if self.lustre_client.ubuntu_key_fingerprint is None:
            found.append("lustre_client.ubuntu_key_fingerprint")
        return found


def load_versions(path: Path | str | None = None) -> Versions:
    """Read and validate ``versions.yaml`` (the packaged one by default)."""
    file = Path(path) if path is not None else VERSIONS_FILE
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
        return Versions.model_validate(data)
    except (OSError, yaml.YAMLError, ValueError) as exc:
        raise BootstrapError(f"{file}: {exc}") from exc


@cache
def default_versions() -> Versions:
    return load_versions()


class ResolvedArtifact(_Frozen):
    """An artifact with its URL filled in for one architecture."""

    key: str = Field(description="Dotted versions.yaml key, e.g. `node_exporter.tarball`.")
    url: str
    sha256: str = Field(description="Digest, or '' when not pinned (the script refuses to download).")
    sha256_key: str = Field(description="versions.yaml key to fill in when the digest is missing.")
    signature_url: str = ""
    gpg_key_url: str = ""
    gpg_fingerprint: str = ""


def resolve(artifact: Artifact, key: str, version: str, arch: Arch) -> ResolvedArtifact:
    names = {
        "version": version,
        "arch": arch,
        "deb_arch": "amd64" if arch == "x86_64" else "arm64",
        "go_arch": "amd64" if arch == "x86_64" else "arm64",
        "nv_arch": "x86_64" if arch == "x86_64" else "sbsa",
    }
    sha = artifact.sha256.get(arch) if isinstance(artifact.sha256, dict) else artifact.sha256
    sha_key = f"{key}.sha256.{arch}" if isinstance(artifact.sha256, dict) else f"{key}.sha256"
    return ResolvedArtifact(
        key=key,
        url=artifact.url.format(**names),
        sha256=sha or "",
        sha256_key=sha_key,
        signature_url=(artifact.signature_url or "").format(**names),
        gpg_key_url=artifact.gpg_key_url or "",
        gpg_fingerprint=artifact.gpg_fingerprint or "",
    )


# --- the context -------------------------------------------------------------------------------


class FsxMount(_Frozen):
    """The mount contract of an FSx for Lustre file system (see :class:`fmcluster.contracts.MountContract`).

    ``file_system_id``, ``dns_name`` and ``mount_name`` may be left out when the file system is
    created in the same deployment (CloudFormation knows them only then): the entry script
    then exports them as ``FMC_FSX_ID``, ``FMC_FSX_DNS`` and ``FMC_FSX_MOUNT_NAME`` from the
    launch template's user data (see :func:`entry_script`'s ``boot_env``).
    """

    file_system_id: str | None = Field(default=None, pattern=r"^fs-[0-9a-f]{8,17}$", description="The file system ID, `fs-...`.")
    dns_name: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9.-]{2,252}$", description="DNS name of the file system.")
    mount_name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_]{1,32}$", description="The Lustre mount name (e.g. `abcdefgh`).")
    mount_path: str = Field(default="/fsx", pattern=r"^/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$", description="Where to mount it.")
    efa_enabled: bool = Field(default=False, description="The file system was created with EfaEnabled: set up LNet over EFA.")
    efa_lnet_interfaces: int = Field(
        default=2,
        ge=1,
        le=32,
        description="How many EFA devices LNet uses for FSx traffic (first and last by default, spread evenly).",
    )

    @model_validator(mode="after")
    def _all_or_none(self) -> FsxMount:
        given = [v is not None for v in (self.file_system_id, self.dns_name, self.mount_name)]
        if any(given) and not all(given):
            raise ValueError("give all of file_system_id, dns_name and mount_name, or none (then they come at boot)")
        return self

    @property
    def at_boot(self) -> bool:
        """The identity comes from the entry script's environment, not from the bundle."""
        return self.file_system_id is None


FSX_BOOT_ENV = ("FMC_FSX_ID", "FMC_FSX_DNS", "FMC_FSX_MOUNT_NAME")
"""Environment the entry script exports when :attr:`FsxMount.at_boot`."""


class InstanceFacts(_Frozen):
    """What the scripts need from the catalog entry of the node's instance type."""

    instance_type: str
    gpu_model: str
    gpus: int
    efa_devices: int = Field(description="EFA devices the launch template attaches (the catalog's maximum).")
    nvswitch: bool
    needs_imex: bool
    local_nvme_drives: int | None = Field(description="Instance-store NVMe drives; None = unconfirmed, found at boot.")
    architecture: Arch

    @classmethod
    def from_catalog(cls, instance_type: str) -> InstanceFacts:
        try:
            entry = catalog.get(instance_type)
        except KeyError:
            raise BootstrapError(
                f"instance type {instance_type!r} is not in the catalog; known: {', '.join(catalog.CATALOG)}"
            ) from None
        return cls(
            instance_type=entry.name,
            gpu_model=entry.gpu_model,
            gpus=entry.gpus,
            efa_devices=entry.max_efa_interfaces,
            nvswitch=entry.nvswitch,
            needs_imex=entry.needs_imex,
            local_nvme_drives=entry.local_nvme_drives,
            architecture=_CATALOG_ARCH[entry.architecture],
        )

    @property
    def gpu_model_tokens(self) -> list[str]:
        """Words that must all appear in `nvidia-smi`'s GPU name (e.g. "A100 40GB")."""
        return self.gpu_model.split()


class Options(_Frozen):
    """Knobs with defaults; the config may expose some of them later."""

    containers: bool = Field(description="Install enroot (+ pyxis where Slurm runs). Default: on for Slurm flavours.")
    exporters: bool = Field(default=True, description="Install node_exporter, dcgm-exporter and the EFA counters.")
    deep_health_check: bool = Field(default=False, description="Run `dcgmi diag -r 2` in the health check (minutes).")
    min_root_free_gb: int = Field(default=20, ge=1, description="Free space the root file system needs.")
    pkg_lock_timeout_s: int = Field(default=600, ge=10, description="How long to wait for apt/dnf locks.")
    retry_attempts: int = Field(default=5, ge=1, le=20, description="Attempts per download.")
    retry_base_delay_s: int = Field(default=2, ge=0, le=60, description="First retry delay; doubles each time.")
    scratch_path: str = Field(default="/scratch", pattern=r"^/[A-Za-z0-9._/-]+$", description="RAID 0 of the local NVMe.")
    slurm_prefix: str | None = Field(default=None, description="Where Slurm lives (pyxis builds against it).")
    scratch: bool = Field(default=True, description="Assemble the instance-store NVMe drives (storage.scratch.enabled).")


class BootstrapContext(_Frozen):
    """Everything a bundle is rendered from. Templates see it as ``ctx``."""

    project: str
    group: str | None
    role: Role
    flavour: Flavour
    os: OperatingSystem
    arch: Arch
    instance: InstanceFacts | None = Field(description="The GPU instance; None for head/login nodes.")
    fsx: FsxMount | None = None
    bundle_s3_uri: str | None = Field(
        default=None,
        description="Where the entry script downloads the bundle (s3://bucket/key.zip or s3://bucket/prefix/). "
        "None: the bundle sits beside the entry script (HyperPod lifecycle scripts).",
    )
    options: Options
    versions: Versions

    @field_validator("bundle_s3_uri")
    @classmethod
    def _s3(cls, value: str | None) -> str | None:
        # A CDK token (``${Token[...]}``) stands for an s3:// URL resolved at deploy time.
        if value is not None and not (value.startswith("s3://") or "${Token[" in value):
            raise ValueError(f"{value!r} is not an s3:// URI")
        if value is not None and "'" in value:
            raise ValueError("the bundle URI may not contain a single quote")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> BootstrapContext:
        if self.role == "compute" and self.instance is None:
            raise ValueError("a compute node needs its instance facts")
        if self.instance is not None and self.instance.architecture != self.arch:
            raise ValueError(f"{self.instance.instance_type} is {self.instance.architecture}, not {self.arch}")
        return self

    # Derived values the templates use.

    @property
    def os_family(self) -> Literal["ubuntu", "al2023"]:
        return "al2023" if self.os == "al2023" else "ubuntu"

    @property
    def os_release_id(self) -> str:
        return "amzn" if self.os == "al2023" else "ubuntu"

    @property
    def os_version_id(self) -> str:
        return "2023" if self.os == "al2023" else self.os.split("-", 1)[1]

    @property
    def ubuntu_codename(self) -> str:
        return _UBUNTU_CODENAMES.get(self.os_version_id, "")

    @property
    def gpu(self) -> bool:
        return self.instance is not None

    @property
    def slurm(self) -> bool:
        return self.options.slurm_prefix is not None

    @property
    def ofi_nccl_plugin_dir(self) -> str:
        return self.versions.aws_ofi_nccl.plugin_dir[self.os_family].format(arch=self.arch)

    @property
    def lnet_over_efa(self) -> bool:
        """LNet over EFA for an EFA-enabled FSx; only GPU nodes have EFA (others use TCP)."""
        return self.fsx is not None and self.fsx.efa_enabled and self.gpu

    @property
    def writes_plugstack(self) -> bool:
        """ParallelCluster shares /opt/slurm from the head node: only the head writes Slurm config."""
        return self.slurm and (self.flavour == "hyperpod" or self.role == "head")

    def artifacts(self) -> dict[str, ResolvedArtifact]:
        v = self.versions
        pairs = {
            "efa_installer": (v.efa_installer.tarball, "efa_installer.tarball", v.efa_installer.version),
            "nvidia_driver": (v.nvidia_driver.runfile, "nvidia_driver.runfile", v.nvidia_driver.version),
            "fabric_manager": (v.fabric_manager.archive, "fabric_manager.archive", v.fabric_manager.version),
            "gdrcopy": (v.gdrcopy.source, "gdrcopy.source", v.gdrcopy.version),
            "node_exporter": (v.node_exporter.tarball, "node_exporter.tarball", v.node_exporter.version),
            "enroot_deb": (v.enroot.deb, "enroot.deb", v.enroot.version),
            "enroot_deb_caps": (v.enroot.deb_caps, "enroot.deb_caps", v.enroot.version),
            "enroot_rpm": (v.enroot.rpm, "enroot.rpm", v.enroot.version),
            "enroot_rpm_caps": (v.enroot.rpm_caps, "enroot.rpm_caps", v.enroot.version),
            "pyxis": (v.pyxis.source, "pyxis.source", v.pyxis.version),
        }
        return {name: resolve(art, key, version, self.arch) for name, (art, key, version) in pairs.items()}

    def steps(self) -> list[Step]:
        """The steps this node runs, in order."""
        return [step for step in STEPS if step.applies(self)]


class Step(_Frozen):
    """One step: a template rendered to ``steps/<name>.sh``."""

    name: str
    template: str
    description: str
    gpu_only: bool = False
    needs_fsx: bool = False
    needs_containers: bool = False
    needs_exporters: bool = False
    needs_scratch: bool = False

    def applies(self, ctx: BootstrapContext) -> bool:
        return not (
            (self.gpu_only and not ctx.gpu)
            or (self.needs_fsx and ctx.fsx is None)
            or (self.needs_containers and not ctx.options.containers)
            or (self.needs_exporters and not ctx.options.exporters)
            or (self.needs_scratch and not ctx.options.scratch)
        )


STEPS: tuple[Step, ...] = (
    Step(name="10-preflight", template="preflight.sh.j2", description="OS/arch/instance checks, disk space, package lock"),
    Step(name="20-nvidia", template="nvidia.sh.j2", description="NVIDIA driver + Fabric Manager or IMEX", gpu_only=True),
    Step(name="30-efa", template="efa.sh.j2", description="EFA installer (GPG-verified; bundles aws-ofi-nccl)", gpu_only=True),
    Step(name="40-gdrcopy", template="gdrcopy.sh.j2", description="GDRCopy packages and the gdrdrv module", gpu_only=True),
    Step(name="50-nccl-env", template="nccl_env.sh.j2", description="aws-ofi-nccl on the library path, memlock", gpu_only=True),
    Step(name="60-nvme", template="nvme.sh.j2", description="RAID 0 of the instance-store NVMe at the scratch path", gpu_only=True,
         needs_scratch=True),
    Step(name="70-lustre", template="lustre.sh.j2", description="Lustre client, LNet over EFA, FSx mount", needs_fsx=True),
    Step(name="80-containers", template="containers.sh.j2", description="enroot + pyxis, container storage on NVMe", needs_containers=True),
    Step(name="90-exporters", template="exporters.sh.j2", description="node_exporter, dcgm-exporter, EFA counters", needs_exporters=True),
    Step(name="99-healthcheck", template="healthcheck.sh.j2", description="prove the node before it takes jobs"),
)


def context_for(
    project: Project,
    group_name: str | None,
    role: Role,
    flavour: Flavour | None = None,
    fsx: FsxMount | None = None,
    *,
    arch: Arch | None = None,
    bundle_s3_uri: str | None = None,
    versions: Versions | None = None,
    **options: Any,
) -> BootstrapContext:
    """Build the context for one node role of one compute group.

    ``group_name`` names a compute group of ``project``; it is required for ``compute`` and
    optional for ``head``/``login`` (which have no GPU; with a group they take its
    architecture, as ParallelCluster requires). ``flavour`` defaults to the project's
    orchestrator. ``options`` override :class:`Options` fields.
    """
    flavour = flavour or _ORCHESTRATOR_FLAVOUR[project.orchestrator.type]
    instance: InstanceFacts | None = None
    if group_name is not None:
        groups = {g.name: g for g in project.compute_groups}
        if group_name not in groups:
            raise BootstrapError(
                f"project {project.name!r} has no compute group {group_name!r}; groups: {', '.join(groups)}"
            )
        facts = InstanceFacts.from_catalog(groups[group_name].instance_type)
        if arch is not None and arch != facts.architecture:
            raise BootstrapError(f"group {group_name!r} runs {facts.instance_type}, which is {facts.architecture}, not {arch}")
        arch = facts.architecture
        if role == "compute":
            instance = facts
    elif role == "compute":
        raise BootstrapError("a compute bundle needs a compute group name")
    slurm = flavour in ("parallelcluster", "hyperpod")
    scratch = project.storage.scratch
    opts = {"containers": slurm, "slurm_prefix": "/opt/slurm" if slurm else None,
            "scratch": scratch.enabled, "scratch_path": scratch.mount_path} | options
    try:
        return BootstrapContext(
            project=project.name,
            group=group_name,
            role=role,
            flavour=flavour,
            os=project.os,
            arch=arch or "x86_64",
            instance=instance,
            fsx=fsx,
            bundle_s3_uri=bundle_s3_uri,
            options=Options(**opts),
            versions=versions or default_versions(),
        )
    except ValueError as exc:
        raise BootstrapError(str(exc)) from exc


# --- rendering -------------------------------------------------------------------------------


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
    placeholders: list[str] = Field(description="versions.yaml keys not pinned yet that this bundle may need at boot.")


def _render(template: str, ctx: BootstrapContext, **extra: Any) -> str:
    env = _environment()
    return env.get_template(template).render(ctx=ctx, v=ctx.versions, a=ctx.artifacts(), **extra)


def needed_placeholders(ctx: BootstrapContext) -> list[str]:
    """versions.yaml keys not pinned yet that a node with ``ctx`` may need at boot."""
    names = {s.name for s in ctx.steps()}
    wanted: list[str] = []
    all_missing = ctx.versions.placeholders()

    def want(prefix: str) -> None:
        wanted.extend(k for k in all_missing if k.startswith(prefix) and (k.endswith(ctx.arch) or ".sha256." not in k))

    if "20-nvidia" in names:
        want("nvidia_driver.")
        if ctx.instance and ctx.instance.nvswitch and not ctx.instance.needs_imex:
            want("fabric_manager.")
    if "40-gdrcopy" in names:
        want("gdrcopy.")
    if "70-lustre" in names and ctx.os_family == "ubuntu":
        want("lustre_client.")
    if "80-containers" in names:
        want("enroot.deb" if ctx.os_family == "ubuntu" else "enroot.rpm")
        if ctx.slurm:
            want("pyxis.")
    if "90-exporters" in names and ctx.gpu:
        want("dcgm_exporter.")
    return wanted


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def render_files(ctx: BootstrapContext) -> dict[str, str]:
    """Relative path -> content of every file SHA256SUMS covers (steps and data files)."""
    files: dict[str, str] = {}
    for step in ctx.steps():
        files[f"steps/{step.name}.sh"] = _render(step.template, ctx, step=step)
    if ctx.gpu and ctx.options.exporters:
        if not DCGM_COUNTERS_FILE.is_file():
            raise BootstrapError(
                f"the DCGM counters file {DCGM_COUNTERS_FILE} is missing; the observability templates own it "
                "(it lists the XID, ECC SBE/DBE, thermal-violation and row-remap fields)"
            )
        files["files/dcgm-counters.csv"] = DCGM_COUNTERS_FILE.read_text(encoding="utf-8")
        files["files/fmcluster-efa-counters"] = _render("partials/efa_counters.sh.j2", ctx)
    if ctx.lnet_over_efa:
        files["files/fmcluster-lnet-efa"] = _render("partials/lnet_efa.sh.j2", ctx)
    return files


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
    text = _render("entry.sh.j2", ctx, steps=ctx.steps(), sums_sha256=sums_sha256, boot_env=sorted(boot_env.items()))
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
    )
    (out / "manifest.json").write_text(json.dumps(manifest.model_dump(), indent=2) + "\n", encoding="utf-8")
    return manifest


def dispatcher_script(project: str, sums_by_instance_type: dict[str, str]) -> str:
    """One script for nodes of several instance types: fetches an archive holding one bundle per
    instance type (each in a folder named after it), checks this node's bundle against its
    rendered :attr:`Manifest.sums_sha256`, and runs it. Takes the archive's S3 URI as ``$1``."""
    for itype, digest in sums_by_instance_type.items():
        if not re.fullmatch(r"[a-z0-9.-]+", itype) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise BootstrapError(f"dispatcher: bad bundle entry {itype!r}: {digest!r}")
    return _environment().get_template("dispatch.sh.j2").render(
        project=project, sums=sorted(sums_by_instance_type.items()), entry=ENTRY_NAME)
