"""``versions.yaml``: every version, URL, checksum and key a node bootstrap downloads, as a schema.

Pure data (no Jinja): :mod:`fmcluster.checks` reads it to warn about components not pinned yet.
"""

from __future__ import annotations

import re
from functools import cache, cached_property
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fmcluster.facts import CUDA_ARCH, PACKAGE_ARCH, KernelArch

VERSIONS_FILE = Path(__file__).resolve().parent / "versions.yaml"

Arch = KernelArch


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
    plugin_files: list[str] = Field(min_length=1, description="Where installers put the NCCL net plugin, looked for in "
                                    "order ({arch}: uname -m).")
    tuner_file: str = Field(description="The tuner library's name, beside the plugin.")


def _check_fingerprint(value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"[0-9A-F]{40}", value):
        raise ValueError(f"{value!r} is not a GPG fingerprint (40 uppercase hex characters, no spaces)")
    return value


OsFamily = Literal["ubuntu", "al2023"]


class RepoKey(_Frozen):
    file: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    fingerprint: str

    _fpr = field_validator("fingerprint")(classmethod(lambda cls, v: _check_fingerprint(v)))


class NvidiaRepo(_Frozen):
    """NVIDIA's CUDA network repository, per OS and architecture."""

    url: str = Field(description="URL template ({distro}, {nv_arch}).")
    distro: dict[str, str]
    keys: dict[OsFamily, RepoKey]

    def repo_url(self, os_name: str, arch: Arch) -> str:
        return self.url.format(distro=self.distro[os_name], nv_arch=CUDA_ARCH[arch])


class _Packaged(_Component):
    """A component installed from NVIDIA's repository at exactly ``version``."""

    packages: dict[OsFamily, list[str]]

    @field_validator("packages")
    @classmethod
    def _names(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        # Ubuntu entries may list alternatives, "a|b": the node installs the first name NVIDIA's repository
        # carries at the pinned version (names that changed between driver branches). ``{branch}`` is the
        # driver branch (580 for 580.105.08).
        for family, entries in value.items():
            for entry in entries:
                names = entry.split("|")
                if len(names) > 1 and family != "ubuntu":
                    raise ValueError(f"{entry!r}: alternatives ('a|b') only on ubuntu (apt-cache madison picks one)")
                for name in names:
                    if not re.fullmatch(r"[a-z0-9][a-z0-9.+-]*(\{branch\}[a-z0-9.+-]*)?", name):
                        raise ValueError(f"{name!r} is not a package name")
        return value

    def names(self, family: str) -> list[str]:
        """The package entries for ``family`` with ``{branch}`` filled in (alternatives stay "a|b")."""
        branch = self.version.split(".", 1)[0]
        return [entry.replace("{branch}", branch) for entry in self.packages[family]]


class NvidiaDriver(_Packaged):
    kernel_module_type: Literal["open"]


class FabricManager(_Packaged):
    pass


class NvidiaImex(_Packaged):
    pass


class Nvlsm(_Frozen):
    package: str = Field(pattern=r"^[a-z0-9][a-z0-9.+-]*$")
    present_file: str = Field(pattern=r"^/[A-Za-z0-9._/-]+$", description="The file that says it is installed.")
    infiniband_packages: dict[Literal["ubuntu", "al2023"], list[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.+-]*$")]]] = Field(
        description="InfiniBand tools installed with nvlsm, per OS family (ParallelCluster's nvidia_nvlsm recipe).")
    kernel_modules: list[Annotated[str, Field(pattern=r"^[a-z0-9_]+$")]] = Field(
        description="Kernel modules loaded at every boot with nvlsm (/etc/modules-load.d).")


class Dcgm(_Packaged):
    pass


class Gdrcopy(_Component):
    optional: Literal[True]
    source: Artifact


class NodeExporter(_Component):
    port: int
    tarball: Artifact


class Prometheus(_Component):
    tarball: Artifact


class DcgmExporter(_Component):
    builds: dict[str, str] = Field(default_factory=dict, description="DCGM version -> the exporter version built "
                                   "for it (NVIDIA/dcgm-exporter tags <dcgm>-<exporter>).")
    port: int
    package: str = Field(pattern=r"^[a-z0-9][a-z0-9.+-]*$")
    service: str = Field(pattern=r"^[A-Za-z0-9@._-]+\.service$")


class EfaExporter(_Frozen):
    interval_seconds: int = Field(ge=1, le=3600)


class SlurmMetrics(_Frozen):
    """Our Slurm metrics script on the slurmctld node: how often it runs squeue and sinfo."""

    interval_seconds: int = Field(ge=5, le=3600)


class Enroot(_Component):
    optional: Literal[True]
    deb: Artifact
    deb_caps: Artifact
    rpm: Artifact
    rpm_caps: Artifact


class Pyxis(_Component):
    optional: Literal[True]
    source: Artifact


class NcclTests(_Frozen):
    """NVIDIA/nccl-tests, built by the acceptance setup job (not a bootstrap component: not in the bundle)."""

    version: str = Field(pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+$")
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    repository: str = Field(pattern=r"^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+\.git$")


class NcclSource(_Frozen):
    """NVIDIA/nccl, built by the acceptance setup job only where the node has no NCCL headers (ParallelCluster)."""

    version: str = Field(pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+-[0-9]+$")
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    repository: str = Field(pattern=r"^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+\.git$")


class FirstJobImage(_Frozen):
    """The container image of the first training job (``fmcluster acceptance first-job``), per architecture: a
    public registry's reference pinned by tag (``versions.yaml`` says why no digest)."""

    x86_64: str = Field(pattern=r"^[a-z0-9.-]+/[a-z0-9._/-]+:[A-Za-z0-9._-]+$")
    aarch64: str = Field(pattern=r"^[a-z0-9.-]+/[a-z0-9._/-]+:[A-Za-z0-9._-]+$")
    untested_efa: tuple[Literal["x86_64", "aarch64"], ...] = ()
    """Architectures whose image's publisher says EFA was not tested in it."""

    def for_arch(self, arch: str) -> str:
        return {"x86_64": self.x86_64, "aarch64": self.aarch64}[arch]


class LustreClient(_Frozen):
    al2023_package: str
    ubuntu_repo_url: str
    ubuntu_key_url: str
    ubuntu_key_fingerprint: str

    _fpr = field_validator("ubuntu_key_fingerprint")(classmethod(lambda cls, v: _check_fingerprint(v)))


class Versions(_Frozen):
    """The parsed ``versions.yaml``."""

    schema_version: Literal[1]
    as_of: str
    efa_installer: EfaInstaller
    aws_ofi_nccl: AwsOfiNccl
    nvidia_repo: NvidiaRepo
    nvidia_driver: NvidiaDriver
    fabric_manager: FabricManager
    nvidia_imex: NvidiaImex
    nvlsm: Nvlsm
    dcgm: Dcgm
    cuda: _Component
    nccl: _Component
    nccl_tests: NcclTests
    nccl_source: NcclSource
    first_job_image: FirstJobImage
    gdrcopy: Gdrcopy
    node_exporter: NodeExporter
    prometheus: Prometheus
    dcgm_exporter: DcgmExporter
    slurm_metrics: SlurmMetrics
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
        for name in ("nvidia_driver", "fabric_manager", "nvidia_imex", "dcgm"):
            if set(getattr(self, name).packages) != {"ubuntu", "al2023"}:
                raise ValueError(f"{name}.packages needs a list for ubuntu and for al2023")
        if set(self.nvidia_repo.keys) != {"ubuntu", "al2023"}:
            raise ValueError("nvidia_repo.keys needs the ubuntu and the al2023 key")
        return self

    def summary(self) -> dict[str, str]:
        """Component -> version, for the manifest and the CLI."""
        out: dict[str, str] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, _Component):
                out[name] = value.version
        return out

    OPTIONAL: ClassVar[tuple[str, ...]] = ("gdrcopy", "enroot", "pyxis")
    """Components without a signed repository or a published checksum file: used when the image
    carries them, installed only when their digest is pinned, otherwise skipped with a warning."""

    def unpinned(self) -> list[str]:
        """Dotted keys of every checksum not pinned (all belong to optional components)."""
        return list(self._unpinned)

    def placeholders(self) -> list[str]:
        """Unpinned keys a node cannot do without (those outside :attr:`OPTIONAL`): it would stop there."""
        return [k for k in self._unpinned if k.split(".", 1)[0] not in self.OPTIONAL]

    @cached_property
    def _unpinned(self) -> tuple[str, ...]:
        """Walked once per instance (the model is frozen): every bundle of every project asks, several times."""
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
        return tuple(found)


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's C loader where PyYAML has it: the same data as ``yaml.safe_load``, read several times faster."""


def load_versions(path: Path | str | None = None) -> Versions:
    """Read and validate ``versions.yaml`` (the packaged one by default)."""
    file = Path(path) if path is not None else VERSIONS_FILE
    try:
        data = yaml.load(file.read_text(encoding="utf-8"), Loader=_LOADER)
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
        "deb_arch": PACKAGE_ARCH[arch],
        "go_arch": PACKAGE_ARCH[arch],
        "nv_arch": CUDA_ARCH[arch],
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
