"""The ``network:`` section: a new VPC (the default) or an existing VPC and compute subnet."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from fmcluster.config.base import Int, Model, located
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
    database_subnet_ids: list[Annotated[str, StringConstraints(pattern=r"^subnet-[0-9a-f]{8,17}$")]] | None = Field(
        default=None,
        description="Private subnets in at least two Availability Zones for the Slurm accounting database "
                    "(`orchestrator.accounting` with `store: database`; RDS needs two zones). Required then.",
    )

    @field_validator("database_subnet_ids")
    @classmethod
    def _two_subnets(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) < 2:
            raise ValueError("an RDS DB subnet group needs subnets in at least two Availability Zones: name two "
                             "different subnets, in different zones")
        return value

    @field_validator("compute_subnet_cidr")
    @classmethod
    def _cidr(cls, value: str | None) -> str | None:
        if value is None:
            return None
        net = ipaddress.IPv4Network(_ipv4_network(value))
        if not SUBNET_PREFIXES[0] <= net.prefixlen <= SUBNET_PREFIXES[1]:
            raise ValueError(f"a subnet is /{SUBNET_PREFIXES[0]} to /{SUBNET_PREFIXES[1]} in a VPC, not /{net.prefixlen}; "
                             "copy the CIDR from `aws ec2 describe-subnets`")
        unusable = _unusable(net)
        if unusable:
            raise ValueError(f"{value} is {unusable}; no VPC subnet has it")
        return value


class Network(Model):
    """Where the cluster lives: a new VPC (the default) or an existing one."""

    vpc_cidr: str = Field(default="10.0.0.0/16", description="CIDR of the new VPC (not with `existing`).")
    compute_subnet_prefix: Int | None = Field(
        default=None,
        ge=16,
        le=28,
        description="Prefix length of the private compute subnet. Default: sized from the plan (at least /22).",
    )
    ip_headroom_percent: Int = Field(
        default=25,
        ge=0,
        le=400,
        description="Extra addresses on top of the nodes' own, for replacements launched before old nodes go.",
    )
    reserved_ips: Int = Field(
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
        net = ipaddress.IPv4Network(_ipv4_network(value))
        if not 16 <= net.prefixlen <= 24:
            raise ValueError(f"a VPC CIDR must be between /16 and /24, not /{net.prefixlen}")
        if not any(net.subnet_of(block) for block in RFC1918):
            unusable = _unusable(net)
            why = f" ({value} is {unusable})" if unusable else ""
            raise ValueError(f"a new VPC's CIDR must lie in a private range: 10.0.0.0/8, 172.16.0.0/12 or "
                             f"192.168.0.0/16 (RFC 1918){why}")
        return value

    @model_validator(mode="after")
    def _one_network(self) -> Network:
        if self.existing is not None:
            ignored = sorted(self.model_fields_set & {"vpc_cidr", "compute_subnet_prefix"})
            if ignored:
                raise located(f"{ignored[0]} describes a new VPC; with `existing` the VPC and subnet are imported "
                              f"as they are (remove {ignored[0]}, or remove `existing` to create a VPC)", ignored[0])
        return self

    @field_validator("interface_endpoints")
    @classmethod
    def _unique_endpoints(cls, value: list[str]) -> list[str]:
        dupes = sorted({v for v in value if value.count(v) > 1})
        if dupes:
            raise ValueError(f"listed more than once: {', '.join(dupes)}")
        return value


SUBNET_PREFIXES = (16, 28)
"""A VPC or subnet IPv4 CIDR is /16 to /28 (Amazon VPC User Guide, "VPC CIDR blocks")."""
RFC1918 = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
_SPECIAL = {"loopback": "is_loopback", "link-local": "is_link_local", "multicast": "is_multicast",
            "reserved": "is_reserved", "unspecified": "is_unspecified"}


def _unusable(net: ipaddress.IPv4Network) -> str | None:
    """What kind of range ``net`` is if no VPC can use it (loopback, link-local, multicast, reserved), else None."""
    for name, attribute in _SPECIAL.items():
        if getattr(net, attribute):
            return f"a {name} range"
    if net.subnet_of(ipaddress.IPv4Network("0.0.0.0/8")):
        return "in 0.0.0.0/8 ('this network')"
    return None


def _ipv4_network(value: str) -> str:
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"{value[:60]!r} is not a valid IPv4 CIDR ({str(exc)[:80]})") from None
    if str(net) != value:
        raise ValueError(f"{value!r} is not in canonical form; write {net}")
    return value
