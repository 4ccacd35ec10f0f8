"""``versions.yaml``: every version, URL, checksum and key a node bootstrap downloads, as a schema.

Pure data (no Jinja): :mod:`fmcluster.checks` reads it to warn about components not pinned yet.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any, Literal

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
