"""The other projects in a project's folder, as far as a check needs them: the VPC each creates.

Read leniently: a broken neighbour is reported when it is validated itself, not while another is.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import yaml

from fmcluster.config.network import Network


def vpc_cidrs(folder: Path, exclude: Path | None = None) -> list[tuple[str, ipaddress.IPv4Network]]:
    """``(file stem, VPC CIDR)`` of every project file in ``folder`` that creates a VPC, but ``exclude``."""
    used = []
    for path in sorted(folder.glob("*.yaml")):
        if exclude is not None and path.resolve() == exclude.resolve():
            continue
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            network = (data or {}).get("network") or {}
            if network.get("existing"):
                continue  # an imported VPC: its CIDR is the user's, not one fmcluster creates
            used.append((path.stem, ipaddress.IPv4Network(network.get("vpc_cidr") or Network().vpc_cidr)))
        except (OSError, yaml.YAMLError, ValueError, AttributeError, TypeError):
            continue
    return used
