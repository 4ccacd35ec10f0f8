"""Image profiles: what the image each flavour boots already carries, as data with a source for every fact.

A node never starts bare (DESIGN.md, "Node bootstrap on real images"): self-managed nodes boot the
Deep Learning Base OSS NVIDIA Driver GPU AMI (the SSM parameter :func:`fmcluster.facts.OsFacts.dlami_parameter`
names), ParallelCluster nodes its official AMI, HyperPod nodes HyperPod's AMI. One YAML file per
flavour and OS in ``profiles/`` says, per architecture, what that image holds: the driver and how it
was installed, Fabric Manager / IMEX / nvlsm, the persistence unit, DCGM, EFA and the aws-ofi-nccl
files, GDRCopy, the Lustre client, enroot/pyxis, the CUDA package sources, Slurm's paths.

Every fact names its ``source`` (a file and line of a public repository, a release-notes page) or
says ``unconfirmed: true`` with a ``note``. The sandbox boots each bundle on every profile of its
flavour, and where a fact is unconfirmed, both with and without it (:meth:`ImageProfile.variants`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from fmcluster.bootstrap.context import Flavour
from fmcluster.bootstrap.versions import Arch, BootstrapError, _Frozen
from fmcluster.facts import OperatingSystem

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"


class Fact(_Frozen):
    """One thing the image has (or lacks), with where that is written."""

    present: bool = Field(description="The image carries it.")
    version: str | None = Field(default=None, description="Its version, where the source gives one.")
    source: str | None = Field(default=None, description="Where this is written: repo + path + line, or a URL.")
    unconfirmed: bool = Field(default=False, description="No source says whether the image has it: the sandbox boots "
                              "the bundle both ways.")
    version_unconfirmed: bool = Field(default=False, description="Its presence is sourced, its version (or how it was "
                                      "installed) is not: the note says what is assumed.")
    note: str | None = Field(default=None, description="Why it is unconfirmed, or what the source says beyond the value.")

    @model_validator(mode="after")
    def _sourced(self) -> Fact:
        if not self.unconfirmed and not self.source:
            raise ValueError("a confirmed fact needs its source (repo + path + line, or a URL); "
                             "or say `unconfirmed: true` with a note")
        if (self.unconfirmed or self.version_unconfirmed) and not self.note:
            raise ValueError("an unconfirmed fact needs a note saying what is not known")
        return self


class Driver(Fact):
    install: Literal["run", "package"] | None = Field(
        default=None, description="NVIDIA's .run installer (no distribution package, no packaged units) or packages.")


class Units(Fact):
    """Systemd unit files the image ships for this component (``present``: at least one)."""

    units: list[str] = Field(default_factory=list, description="Unit file names, e.g. parallelcluster_nvidia.service.")


class OfiNccl(Fact):
    files: list[str] = Field(default_factory=list,
                             description="Absolute paths of the plugin (and tuner) libraries; {arch} is uname -m.")
    alternative_files: list[str] = Field(default_factory=list,
                                         description="The other layout, booted too when the layout is unconfirmed.")

    @model_validator(mode="after")
    def _alternative(self) -> OfiNccl:
        if self.unconfirmed and not self.alternative_files:
            raise ValueError("an unconfirmed aws-ofi-nccl layout needs alternative_files (the layout booted as well)")
        return self


class Efa(Fact):
    ofi_nccl: OfiNccl


class PackageSource(Fact):
    """A package source for NVIDIA's CUDA repository the image already lists (an image's cuda-keyring)."""

    path: str = Field(description="The apt list or dnf repo file, e.g. /etc/apt/sources.list.d/cuda-ubuntu2204-x86_64.list.")
    line: str = Field(description="Its line; {nv_arch} and {distro} are filled in.")


class Slurm(Fact):
    prefix: str | None = None
    plugstack: str | None = Field(default=None, description="Where slurmd reads SPANK plugins from.")
    configless: bool | None = None


class Components(_Frozen):
    driver: Driver
    fabric_manager: Fact
    imex: Fact
    nvlsm: Fact
    persistence: Units = Field(description="The unit that keeps the GPUs initialised (persistence mode).")
    nvidia_persistenced_unit: Fact = Field(description="Whether nvidia-persistenced.service exists.")
    dcgm: Fact
    dcgm_exporter: Fact
    efa: Efa
    gdrcopy: Fact
    lustre: Fact
    enroot: Fact
    pyxis: Fact
    cuda_source: PackageSource = Field(description="An image's own source for NVIDIA's CUDA repository.")
    slurm: Slurm


class DataVolume(Fact):
    path: str = Field(description="Where the orchestrator mounts the node's secondary volume.")


class KubernetesNode(_Frozen):
    """What a Kubernetes node image carries besides the GPU stack (HyperPod's EKS AMI)."""

    containerd: Fact = Field(description="containerd, its data under /var/lib/containerd.")
    kubelet: Fact = Field(description="kubelet (the Kubernetes version), its data under /var/lib/kubelet.")
    container_toolkit: Fact = Field(description="NVIDIA Container Toolkit (/usr/bin/nvidia-container-runtime).")
    data_volume: DataVolume = Field(description="The secondary volume containerd's and kubelet's data move to.")


class ArchProfile(_Frozen):
    image: str = Field(description="The image's name as its publisher gives it (release, date).")
    components: Components
    kubernetes: KubernetesNode | None = Field(default=None, description="A Kubernetes node image's own parts.")


class ImageProfile(_Frozen):
    """One flavour x OS; ``arches`` holds what each architecture's image carries."""

    flavour: Flavour
    os: OperatingSystem
    arches: dict[Arch, ArchProfile]

    @property
    def name(self) -> str:
        return f"{self.flavour}-{self.os}"

    def unconfirmed(self, arch: Arch) -> list[str]:
        """Names of the facts no source confirms (booted both ways)."""
        comps = self.arches[arch].components
        return [name for name in Components.model_fields if getattr(comps, name).unconfirmed]

    def variants(self, arch: Arch) -> list[tuple[str, dict[str, bool]]]:
        """(label, {fact: present}) to boot: as written; and, when facts are unconfirmed, each flipped."""
        comps = self.arches[arch].components
        written = {name: getattr(comps, name).present for name in Components.model_fields}
        written["ofi_nccl"] = True
        out = [("as-written", written)]
        flip = self.unconfirmed(arch)
        if comps.efa.ofi_nccl.unconfirmed:
            flip.append("ofi_nccl")
        if flip:
            out.append(("unconfirmed-flipped", written | {n: not written[n] for n in flip}))
        return out


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's C loader where PyYAML has it (the same data as ``yaml.safe_load``)."""


@cache
def load_profiles(folder: Path | str | None = None) -> tuple[ImageProfile, ...]:
    """Every profile in ``folder`` (default: the shipped ``profiles/``), checked; a bad file is named in the error."""
    out = []
    for path in sorted(Path(folder or PROFILES_DIR).glob("*.yaml")):
        try:
            out.append(ImageProfile.model_validate(yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)))
        except (ValidationError, yaml.YAMLError) as exc:
            raise BootstrapError(f"{path}: not a valid image profile: {exc}") from exc
    return tuple(out)


def profiles_for(flavour: Flavour, os_name: str, arch: Arch) -> list[ImageProfile]:
    """The profiles a node of this flavour, OS and architecture can boot on (none: only the bare OS)."""
    return [p for p in load_profiles() if p.flavour == flavour and p.os == os_name and arch in p.arches]
