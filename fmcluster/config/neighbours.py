"""The other projects in a project's folder, as far as a check needs them: the VPC each creates.

Read leniently: a broken neighbour is reported when it is validated itself, not while another is.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from pathlib import Path

import yaml

from fmcluster.config.network import Network


def vpc_cidrs(folder: Path, exclude: Path | None = None) -> list[tuple[str, ipaddress.IPv4Network]]:
    """``(file stem, VPC CIDR)`` of every project file in ``folder`` that creates a VPC, but ``exclude``."""
    skip = exclude.resolve() if exclude is not None else None
    used = []
    for path in sorted(folder.glob("*.yaml")):
        if skip is not None and path.resolve() == skip:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, ValueError):
            continue
        cidr = _vpc_cidr(text)
        if cidr is not None:
            used.append((path.stem, cidr))
    return used


@lru_cache(maxsize=512)
def _vpc_cidr(text: str) -> ipaddress.IPv4Network | None:
    """The VPC one project file's text creates (None: an imported VPC, or text that does not read as a project).

    Keyed by the text itself: every project of a folder checks all the others, so one synthesis of N projects reads
    each file N times; each text is parsed once per process, and an edited file is parsed again."""
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        network = (data or {}).get("network") or {}
        if network.get("existing"):
            return None  # an imported VPC: its CIDR is the user's, not one fmcluster creates
        return ipaddress.IPv4Network(network.get("vpc_cidr") or Network().vpc_cidr)
    except (yaml.YAMLError, ValueError, AttributeError, TypeError):
        return None
