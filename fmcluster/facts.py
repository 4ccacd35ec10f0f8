"""AWS and OS facts used by more than one stage, each stated once with its source.

Instance figures live in :mod:`fmcluster.catalog`; what ParallelCluster accepts in
:mod:`fmcluster.pcluster_facts`; versions and checksums in ``bootstrap/versions.yaml``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, get_args

PROJECT_TAG = "fmcluster:project"
"""Tag on every resource of a project: cost allocation, and how the collector finds the nodes."""

# --- operating systems ---------------------------------------------------------------------------

OperatingSystem = Literal["ubuntu-22.04", "ubuntu-24.04", "al2023"]


@dataclass(frozen=True)
class OsFacts:
    name: str
    family: Literal["ubuntu", "al2023"]
    release_id: str
    """``ID`` in /etc/os-release."""
    version_id: str
    """``VERSION_ID`` in /etc/os-release."""
    codename: str
    """Ubuntu's release codename (apt sources); empty for AL2023."""
    root_device: str
    """Root block device name of the AMIs (launch-template block device mapping)."""
    dlami: str
    """Part of the SSM parameter of the AWS Deep Learning Base OSS NVIDIA Driver GPU AMI."""
    parallelcluster: str
    """ParallelCluster's ``Image.Os`` for this OS."""

    def dlami_parameter(self, architecture: str) -> str:
        """The public SSM parameter that CloudFormation resolves to the latest DLAMI at deploy time."""
        return f"/aws/service/deeplearning/ami/{architecture}/base-oss-nvidia-driver-gpu-{self.dlami}/latest/ami-id"


OPERATING_SYSTEMS: dict[str, OsFacts] = {
    os.name: os
    for os in (
        OsFacts("ubuntu-22.04", "ubuntu", "ubuntu", "22.04", "jammy", "/dev/sda1", "ubuntu-22.04", "ubuntu2204"),
        OsFacts("ubuntu-24.04", "ubuntu", "ubuntu", "24.04", "noble", "/dev/sda1", "ubuntu-24.04", "ubuntu2404"),
        OsFacts("al2023", "al2023", "amzn", "2023", "", "/dev/xvda", "amazon-linux-2023", "alinux2023"),
    )
}
assert tuple(OPERATING_SYSTEMS) == get_args(OperatingSystem)

# --- CPU architectures ---------------------------------------------------------------------------

Architecture = Literal["x86_64", "arm64"]
"""EC2's names (DescribeInstanceTypes ``SupportedArchitectures``, DLAMI parameters)."""
KernelArch = Literal["x86_64", "aarch64"]
"""The kernel's names (``uname -m``): what node scripts compare and download for."""

KERNEL_ARCH: dict[str, KernelArch] = {"x86_64": "x86_64", "arm64": "aarch64"}
PACKAGE_ARCH: dict[str, str] = {"x86_64": "amd64", "aarch64": "arm64"}
"""Kernel arch -> Debian/Go architecture names (``.deb`` files, Go release tarballs)."""
CUDA_ARCH: dict[str, str] = {"x86_64": "x86_64", "aarch64": "sbsa"}
"""Kernel arch -> NVIDIA's download directory names."""

# --- CloudWatch Logs, KMS ------------------------------------------------------------------------

LogRetentionDays = Literal[1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1827, 3653]
"""The values CloudWatch Logs accepts for ``RetentionInDays`` (PutRetentionPolicy)."""

KMS_KEY_ARN = r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$"

# --- FSx for Lustre ------------------------------------------------------------------------------

FSX_SSD_FIRST_SIZES = (1200, 2400)
FSX_SSD_STEP_GIB = 2400
"""SSD file systems: 1,200 or 2,400 GiB, then multiples of 2,400 GiB (FACTS.md section 3)."""


def fsx_capacities(max_gib: int) -> Iterator[int]:
    """Valid SSD sizes in ascending order: 1200, 2400, 4800, 7200, ... up to ``max_gib``."""
    yield from (size for size in FSX_SSD_FIRST_SIZES if size <= max_gib)
    size = FSX_SSD_FIRST_SIZES[-1] + FSX_SSD_STEP_GIB
    while size <= max_gib:
        yield size
        size += FSX_SSD_STEP_GIB


def fsx_valid_capacity(gib: int) -> bool:
    return gib in FSX_SSD_FIRST_SIZES or (gib > FSX_SSD_FIRST_SIZES[-1] and gib % FSX_SSD_STEP_GIB == 0)


def fsx_nearest_capacities(gib: int) -> tuple[int | None, int]:
    """The valid sizes just below (None if none) and just above ``gib``."""
    below = [s for s in FSX_SSD_FIRST_SIZES if s <= gib]
    above = [s for s in FSX_SSD_FIRST_SIZES if s > gib]
    if above:
        return (below[-1] if below else None), above[0]
    low = gib // FSX_SSD_STEP_GIB * FSX_SSD_STEP_GIB
    return low, low + FSX_SSD_STEP_GIB


FSX_EFA_STEP_GIB: dict[int, int] = {1000: 4800, 500: 9600, 250: 19200, 125: 38400}
"""An EFA-enabled PERSISTENT_2 file system comes in multiples of these sizes, by MB/s per TiB
(FSx for Lustre user guide, "Getting started", step 7; FACTS.md section 3)."""


def fsx_efa_capacities(max_gib: int, per_tib: int) -> Iterator[int]:
    """Valid sizes of an EFA-enabled file system at ``per_tib`` MB/s per TiB, ascending, up to ``max_gib``."""
    step = FSX_EFA_STEP_GIB[per_tib]
    yield from range(step, max_gib + 1, step)
