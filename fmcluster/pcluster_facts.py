"""What ParallelCluster accepts, stated once.

Copied from the ``aws-parallelcluster`` package (``pcluster.constants`` and
``pcluster.validators.cluster_validators``) of :data:`PCLUSTER_VERSION`; the test suite reads
the same values from the installed package (``tools/pcluster_validate.py --facts``) and fails
when they drift, so fmcluster can check a project without importing ParallelCluster (which
pins CDK v1 and cannot share fmcluster's environment).
"""

from __future__ import annotations

import re

PCLUSTER_VERSION = "3.16.1"
"""The ParallelCluster release fmcluster generates configurations for and validates against."""

IMAGE_VERSIONS = {
    "3.16": {"nvidia_driver": "595.71.05", "efa_installer": "1.49.0"},
}
"""What the official AMIs of a ParallelCluster release line carry (FACTS.md section 4, "ParallelCluster 3.16.x images":
the versions the 3.16.3 release notes upgrade *from*). The image profiles (``bootstrap/profiles/parallelcluster-*``)
state these for :data:`PCLUSTER_VERSION`; a test ties them, so a new release needs its line here and refreshed
profiles."""

SUPPORTED_OSES = ("alinux2023", "ubuntu2204", "ubuntu2404", "rhel8", "rocky8", "rhel9", "rocky9")
"""``pcluster.constants.SUPPORTED_OSES``."""

OSES_BY_INSTANCE_PREFIX = {
    "p6e-gb200": ("alinux2023", "rocky9", "ubuntu2204", "ubuntu2404"),
    "p6-b300": SUPPORTED_OSES,
}
"""``SUPPORTED_OSES_FOR_P6E_GB200`` / ``SUPPORTED_OSES_FOR_P6_B300``: types with their own OS list."""

ULTRASERVER_BLOCK_SIZES = {"p6e-gb200": (9, 18)}
"""``ULTRASERVER_CAPACITY_BLOCK_ALLOWED_SIZE_DICT``: instances per capacity block of an UltraServer type."""

NAME_REGEX = r"^[a-z][a-z0-9\-]*$"
"""Queue and compute-resource names (``cluster_validators.NAME_REGEX``)."""
NAME_MAX_LENGTH = 25
FORBIDDEN_NAMES = ("default",)

CLUSTER_NAME_REGEX = r"^[a-zA-Z][a-zA-Z0-9-]{0,59}$"
"""``PCLUSTER_NAME_REGEX`` with ``PCLUSTER_NAME_MAX_LENGTH`` = 60."""
ACCOUNTING_CLUSTER_NAME_MAX = 40
"""``pcluster.constants.PCLUSTER_NAME_MAX_LENGTH_SLURM_ACCOUNTING``: with ``SlurmSettings.Database`` (or
``ExternalSlurmdbd``) ``ClusterNameValidator`` refuses longer names (the cluster's database is named after it)."""

MAX_QUEUES = 50
MAX_COMPUTE_RESOURCES_PER_QUEUE = 50
MAX_COMPUTE_RESOURCES_PER_CLUSTER = 50
MAX_LOGIN_NODE_POOLS = 10

SUPPORTED_INSTANCE_PREFIXES = ("p4d", "p5", "p5e", "p5en", "p6-b200", "p6-b300", "p6e-gb200")
"""Catalog families ParallelCluster 3.16 runs: it takes any EC2 type DescribeInstanceTypes knows
(no list of its own), and names p6-b300 and p6e-gb200 in ``INSTANCE_TYPES_WITH_FIRST_INTERFACE_ENA``
(their card 0 carries no EFA), so every type in fmcluster's catalog is supported."""


def instance_prefix(instance_type: str) -> str:
    return instance_type.split(".", 1)[0]


def supports_instance_type(instance_type: str) -> bool:
    return instance_prefix(instance_type) in SUPPORTED_INSTANCE_PREFIXES


def supported_oses(instance_type: str) -> tuple[str, ...]:
    return OSES_BY_INSTANCE_PREFIX.get(instance_prefix(instance_type), SUPPORTED_OSES)


def name_problem(name: str) -> str | None:
    """Why ParallelCluster/Slurm would refuse ``name`` as a queue or compute-resource name, or None."""
    if not re.match(NAME_REGEX, name):
        return f"{name!r} must start with a lowercase letter and hold only lowercase letters, digits and '-'"
    if len(name) > NAME_MAX_LENGTH:
        return f"{name!r} is {len(name)} characters long; ParallelCluster allows at most {NAME_MAX_LENGTH}"
    if name in FORBIDDEN_NAMES:
        return f"{name!r} is reserved by Slurm and cannot name a queue or compute resource"
    return None


def cluster_name_problem(name: str) -> str | None:
    if not re.match(CLUSTER_NAME_REGEX, name):
        return (f"{name!r} is not a valid ParallelCluster cluster name: a letter, then letters, digits and '-', "
                "at most 60 characters")
    return None
