"""The ``network:`` section: a new VPC (the default) or an existing VPC and compute subnet."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, field_validator

from fmcluster.config.base import Model
from fmcluster.facts import LogRetentionDays

InterfaceEndpoint = Literal[
    "ssm", "ssmmessages", "ec2messages", "logs", "sts", "ecr.api", "ecr.dkr", "aps-workspaces", "monitoring"
]


class ExistingNetwork(Model):
    """Use a VPC and compute subnet that already exist instead of creating them."""

    vpc_id: str = Field(pattern=r"^vpc-[0-9a-f]{8,17}$", description="ID of the existing VPC.")
    compute_subnet_id: str = Field(
        pattern=r"^subnet-[0-9a-f]{8,17}$",
        description="Private subnet in `availability_zone_id` where the GPU nodes and FSx go.",
    )
    compute_subnet_cidr: str | None = Field(
        default=None,
        description="CIDR of that subnet, if known: lets `fmcluster plan` check it holds the nodes.",
    )

    @field_validator("compute_subnet_cidr")
    @classmethod
    def _cidr(cls, value: str | None) -> str | None:
        return None if value is None else _ipv4_network(value)


class Network(Model):
    """Where the cluster lives: a new VPC (the default) or an existing one."""

    vpc_cidr: str = Field(default="10.0.0.0/16", description="CIDR of the new VPC (ignored with `existing`).")
    compute_subnet_prefix: int | None = Field(
        default=None,
        ge=16,
        le=28,
        description="Prefix length of the private compute subnet. Default: sized from the plan (at least /22).",
    )
    ip_headroom_percent: int = Field(
        default=25,
        ge=0,
        le=400,
        description="Extra addresses on top of the nodes' own, for replacements launched before old nodes go.",
    )
    reserved_ips: int = Field(
        default=32,
        ge=0,
        le=4096,
        description="Addresses kept for head/login nodes, FSx, interface endpoints and the like.",
    )
    interface_endpoints: list[InterfaceEndpoint] = Field(
        default_factory=list,
        description="VPC interface endpoints to create in the compute subnet (the S3 gateway endpoint is always made).",
    )
    flow_logs_retention_days: LogRetentionDays = Field(
        default=90, description="Days to keep VPC flow logs in CloudWatch Logs.")
    existing: ExistingNetwork | None = Field(default=None, description="Import this VPC/subnet instead of creating one.")

    @field_validator("vpc_cidr")
    @classmethod
    def _vpc_cidr(cls, value: str) -> str:
        net = ipaddress.ip_network(_ipv4_network(value))
        if not 16 <= net.prefixlen <= 24:
            raise ValueError(f"a VPC CIDR must be between /16 and /24, not /{net.prefixlen}")
        if not net.is_private:
            raise ValueError(f"{value} is not a private (RFC 1918) range")
        return value

    @field_validator("interface_endpoints")
    @classmethod
    def _unique_endpoints(cls, value: list[str]) -> list[str]:
        dupes = sorted({v for v in value if value.count(v) > 1})
        if dupes:
            raise ValueError(f"listed more than once: {', '.join(dupes)}")
        return value


def _ipv4_network(value: str) -> str:
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a valid IPv4 CIDR ({exc})") from None
    if str(net) != value:
        raise ValueError(f"{value!r} is not in canonical form; write {net}")
    return value
