"""AWS and OS facts used by more than one stage, each stated once with its source.

Instance figures live in :mod:`fmcluster.catalog`; what ParallelCluster accepts in
:mod:`fmcluster.pcluster_facts`; versions and checksums in ``bootstrap/versions.yaml``.
"""

from __future__ import annotations

import unicodedata
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

LUSTRE_PORT_RANGES = ((988, 988), (1018, 1023))
"""FSx for Lustre clients reach the file servers on TCP 988 and 1018-1023 (FACTS.md section 3)."""
LUSTRE_PORTS = tuple(port for low, high in LUSTRE_PORT_RANGES for port in range(low, high + 1))

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

FSX_EFA_CONNECTIONS = 1024
"""EFA connections one FSx for Lustre file system accepts over all its clients; each EFA interface a
client configures for LNet is one (FSx for Lustre User Guide, "Configuring EFA clients", step 4)."""


def fsx_efa_capacities(max_gib: int, per_tib: int) -> Iterator[int]:
    """Valid sizes of an EFA-enabled file system at ``per_tib`` MB/s per TiB, ascending, up to ``max_gib``."""
    step = FSX_EFA_STEP_GIB[per_tib]
    yield from range(step, max_gib + 1, step)

# --- Regions and AZ IDs --------------------------------------------------------------------------

REGIONS: tuple[str, ...] = (
    # partition aws
    "af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
    "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5",
    "ap-southeast-6", "ap-southeast-7", "ca-central-1", "ca-west-1", "eu-central-1", "eu-central-2", "eu-north-1",
    "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1", "me-south-1",
    "mx-central-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
    # partitions aws-cn and aws-us-gov
    "cn-north-1", "cn-northwest-1", "us-gov-east-1", "us-gov-west-1",
)
"""The Regions of the aws, aws-cn and aws-us-gov partitions, as botocore's ``data/endpoints.json`` lists them
(botocore 1.44; ``tests/test_facts.py`` compares this list with the installed botocore)."""

_DIRECTIONS = {"east": "e", "west": "w", "north": "n", "south": "s", "central": "c",
               "northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw"}


def az_id_prefix(region: str) -> str:
    """The AZ-ID prefix of a Region: ``us-east-1`` -> ``use1``, ``ap-northeast-1`` -> ``apne1``.

    The AWS "AZ IDs" page (docs.aws.amazon.com/global-infrastructure/latest/regions/az-ids.html, and the
    Availability Zones table beside it) forms an AZ ID from the Region code's area, the initials of its
    direction, its number, ``-az`` and a number: use1-az6, usw2-az4, euw1-az1, apne1-az4, apse2-az1,
    cac1-az1, usgw1-az1 (us-gov-west-1), cnnw1-az1 (cn-northwest-1).
    """
    *area, direction, number = region.split("-")
    geo = "usg" if area == ["us", "gov"] else "".join(area)
    return f"{geo}{_DIRECTIONS.get(direction, direction[:1])}{number}"


AZ_ID_REGIONS: dict[str, str] = {az_id_prefix(r): r for r in REGIONS}
"""AZ-ID prefix -> Region (``use1`` -> ``us-east-1``)."""
assert len(AZ_ID_REGIONS) == len(REGIONS), "two Regions with one AZ-ID prefix"


DEFAULT_REGIONS = frozenset({
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "sa-east-1", "eu-central-1", "eu-west-1",
    "eu-west-2", "eu-west-3", "eu-north-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
    "ap-southeast-1", "ap-southeast-2",
})
"""The aws partition's Regions enabled in every account: those launched before 20 March 2019. Every later one
is an opt-in Region, disabled until the account enables it (AWS Account Management reference, "Enable or
disable AWS Regions in your account", docs.aws.amazon.com/accounts/latest/reference/manage-acct-regions.html).
The page states the rule, not a list: the membership follows from each Region's launch date and is unconfirmed
against an AWS table. It only shapes a hint ("may be an opt-in Region not enabled"), never a decision."""


def is_opt_in(region: str) -> bool:
    """Whether an account must enable ``region`` before using it (the aws partition's later Regions)."""
    return region not in DEFAULT_REGIONS and not region.startswith(("cn-", "us-gov-"))


@dataclass(frozen=True)
class LocalZone:
    """An AWS Local Zone: a zone of its Region with a subset of its services, reached through a parent AZ."""

    zone_id: str
    name: str
    region: str
    parent_zone_id: str
    """The Region's Availability Zone the Local Zone hangs off: NAT gateway, FSx, interface endpoints and a
    head node live there, because the Local Zone does not offer them (or fmcluster cannot confirm it does)."""


LOCAL_ZONES: dict[str, LocalZone] = {
    zone.zone_id: zone
    for zone in (
        # P6e-GB200 UltraServer capacity blocks are offered here (EC2 user guide: capacity-blocks-launch;
        # Local Zones "available-local-zones"; FACTS.md section 1). The account must opt in to the zone.
        LocalZone("use1-dfw2-az1", "us-east-1-dfw-2a", "us-east-1", "use1-az4"),
    )
}
"""The Local Zones fmcluster knows, by zone ID. Local Zone IDs look like ``use1-dfw2-az1``."""


def zone_region_prefix(zone_id: str) -> str:
    """The AZ-ID prefix of the Region a zone belongs to: ``use1-az6`` and ``use1-dfw2-az1`` -> ``use1``."""
    return zone_id.split("-", 1)[0]


# --- tags (EC2, CloudFormation) ------------------------------------------------------------------

TAGS_PER_RESOURCE = 50
"""User tags per resource (EC2 User Guide, "Tag restrictions"; the same in the CloudFormation Tag type)."""
OWN_TAGS = (PROJECT_TAG, "Name", "fmcluster:group")
"""Tags fmcluster puts on resources itself (every stack; launch-template instances, volumes and interfaces)."""
MAX_USER_TAGS = TAGS_PER_RESOURCE - len(OWN_TAGS)
TAG_KEY_MAX, TAG_VALUE_MAX = 128, 256
TAG_PUNCTUATION = " _.:/=+-@"
"""Tag keys and values: letters, digits and spaces (any script: ``\\p{L}\\p{Z}\\p{N}``) and ``_ . : / = + - @``
(CloudFormation ``Tag`` pattern ``^([\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*)$``; EC2 "Tag restrictions")."""


def _tag_chars_ok(text: str) -> bool:
    return all(c in TAG_PUNCTUATION or unicodedata.category(c)[0] in "LNZ" for c in text)


def tag_problem(key: str, value: str) -> str | None:
    """What EC2/CloudFormation would refuse in one tag, or None."""
    shown = repr(key[:40] + ("..." if len(key) > 40 else ""))
    if not 1 <= len(key) <= TAG_KEY_MAX:
        return f"tag key {shown} must be 1 to {TAG_KEY_MAX} characters"
    if len(value) > TAG_VALUE_MAX:
        return f"tag {shown}: the value is longer than {TAG_VALUE_MAX} characters"
    if key.lower().startswith("aws:"):
        return f"tag key {shown} starts with 'aws:', which is reserved for AWS"
    if key in OWN_TAGS:
        return f"tag key {shown} is set by fmcluster itself"
    for what, text in (("key", key), ("value", value)):
        if not _tag_chars_ok(text):
            bad = next(c for c in text if not _tag_chars_ok(c))
            return (f"tag {shown}: the {what} contains {bad!r} (U+{ord(bad):04X}); tags allow letters, digits, "
                    f"spaces and {' '.join(TAG_PUNCTUATION.strip())}")
    return None


# --- Linux directories ---------------------------------------------------------------------------

SYSTEM_DIRECTORIES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root",
                      "/run", "/sbin", "/snap", "/sys", "/tmp", "/usr", "/var")
"""Directories the OS owns (Filesystem Hierarchy Standard 3.0, plus /snap on Ubuntu and /sys, /run of Linux):
nothing may be mounted at or below them."""
SHARED_PARENTS = ("/home", "/mnt", "/opt", "/media", "/srv")
"""Directories that hold other things (home directories, ParallelCluster's /opt/slurm, cloud-init's /mnt):
a mount below them is fine, a mount on them hides what is there."""

# --- CloudFormation ------------------------------------------------------------------------------

MAX_RESOURCES_PER_STACK = 500
MAX_OUTPUTS_PER_STACK = 200
"""CloudFormation quotas ("Understand CloudFormation quotas"); cfn-lint's schemas state the same
(``other/resources/configuration.json`` maxProperties 500, ``other/outputs/configuration.json`` 200), and
``tests/test_facts.py`` reads them from there."""

# Amazon Managed Service for Prometheus: default "Active series per workspace" quota, 10,000,000 (per
# 2 hours, adjustable, applied dynamically). Source: AMP user guide, "Amazon Managed Service for
# Prometheus service quotas" (docs.aws.amazon.com/prometheus/latest/userguide/AMP_quotas.html).
AMP_ACTIVE_SERIES_QUOTA = 10_000_000


HOURS_PER_MONTH = 730
"""AWS's pricing pages and calculator turn monthly prices into hourly ones with 730 hours a month."""
