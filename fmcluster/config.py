"""Project files: YAML -> pydantic models, with every error tied to its file and line.

Structure only (types, allowed keys, formats). Meaning -- does the subnet hold the nodes,
does the capacity fit the orchestrator -- lives in :mod:`fmcluster.checks`.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from fmcluster import catalog
from fmcluster.config_base import Model
from fmcluster.observability.config import ObservabilityConfig as Observability
from fmcluster.parallelcluster.settings import ParallelClusterSettings
from fmcluster.storage.config import Storage
from fmcluster.errors import ConfigError, Problem

DNS_NAME = r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$"
AZ_ID = r"^[a-z]{2,4}[0-9]-az[0-9]{1,2}$"
RESERVATION_ID = r"^cr-[0-9a-f]{8,17}$"
TRAINING_PLAN_ARN = r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:[0-9]{12}:training-plan/[A-Za-z0-9-]+$"
GROUP_NAME = r"^[a-z][a-z0-9]{0,24}$"




# --- network -------------------------------------------------------------------------------

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
    flow_logs_retention_days: Literal[1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1827, 3653] = (
        Field(default=90, description="Days to keep VPC flow logs in CloudWatch Logs.")
    )
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


# --- capacity ------------------------------------------------------------------------------


class OnDemand(Model):
    """Plain on-demand instances."""

    type: Literal["on-demand"]


class Reservation(Model):
    """An On-Demand Capacity Reservation (ODCR)."""

    type: Literal["reservation"]
    reservation_id: str = Field(pattern=RESERVATION_ID, description="The ODCR ID, `cr-...`.")


class CapacityBlock(Model):
    """An EC2 Capacity Block for ML (bought ahead for fixed dates)."""

    type: Literal["capacity-block"]
    reservation_id: str = Field(pattern=RESERVATION_ID, description="The capacity block's reservation ID, `cr-...`.")


class TrainingPlan(Model):
    """A SageMaker flexible training plan (HyperPod only)."""

    type: Literal["training-plan"]
    arn: str = Field(pattern=TRAINING_PLAN_ARN, description="ARN of the SageMaker training plan.")


Capacity = Annotated[Union[OnDemand, Reservation, CapacityBlock, TrainingPlan], Field(discriminator="type")]


class ComputeGroup(Model):
    """A set of identical GPU nodes: one placement group and one launch template."""

    name: str = Field(pattern=GROUP_NAME, description="Short name: lowercase letters and digits, used in resource names.")
    instance_type: str = Field(description="An instance type from the catalog, e.g. `p5.48xlarge`.")
    count: int = Field(ge=1, le=2048, description="Number of nodes.")
    capacity: Capacity = Field(default_factory=lambda: OnDemand(type="on-demand"), description="Where the nodes come from.")
    placement_group: bool | Literal["auto"] = Field(
        default="auto",
        description="Cluster placement group: `auto` = on, except for capacity blocks (which are already placed).",
    )
    root_volume_gib: int = Field(default=200, ge=50, le=16384, description="Size of the encrypted gp3 root volume.")
    ami_id: str | None = Field(
        default=None,
        pattern=r"^ami-[0-9a-f]{8,17}$",
        description="AMI for the nodes. Default: the latest AWS Deep Learning Base OSS NVIDIA driver AMI for the OS.",
    )

    @field_validator("instance_type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in catalog.CATALOG:
            near = difflib.get_close_matches(value, catalog.CATALOG, n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise ValueError(f"{value!r} is not in the catalog; {hint}known types: {', '.join(catalog.CATALOG)}")
        return value


# --- later sections (filled in by their own issues) ----------------------------------------


class Orchestrator(Model):
    """Who schedules jobs on the nodes."""

    type: Literal["none", "parallelcluster", "hyperpod"] = Field(
        default="none", description="`none` (launch templates only), `parallelcluster` or `hyperpod`."
    )
    parallelcluster: ParallelClusterSettings | None = Field(
        default=None, description="ParallelCluster settings (orchestrator.type: parallelcluster); defaults apply when absent."
    )


OperatingSystem = Literal["ubuntu-22.04", "ubuntu-24.04", "al2023"]


class Project(Model):
    """One training effort: one file under ``projects/``, one set of stacks."""

    name: str = Field(pattern=DNS_NAME, description="DNS-safe project name; prefixes every stack and resource.")
    account: str | None = Field(default=None, pattern=r"^[0-9]{12}$", description="AWS account ID (optional).")
    region: str | None = Field(
        default=None, pattern=r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", description="AWS Region (optional)."
    )
    availability_zone_id: str = Field(
        pattern=AZ_ID, description="AZ ID (e.g. `use1-az6`), the same in every account, where the capacity is."
    )
    os: OperatingSystem = Field(default="ubuntu-22.04", description="Operating system of the nodes.")
    network: Network = Field(default_factory=Network, description="VPC and subnets.")
    compute_groups: list[ComputeGroup] = Field(min_length=1, description="The GPU node groups.")
    storage: Storage = Field(default_factory=Storage, description="Shared storage.")
    orchestrator: Orchestrator = Field(default_factory=Orchestrator, description="Job scheduler.")
    observability: Observability = Field(default_factory=Observability, description="Metrics and alerts.")
    tags: dict[str, str] = Field(default_factory=dict, description="Tags put on every resource.")
    suppress_warnings: list[str] = Field(
        default_factory=list, description="Names of warning checks to silence (errors cannot be silenced)."
    )

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: dict[str, str]) -> dict[str, str]:
        for key, val in value.items():
            if not 1 <= len(key) <= 128 or key.lower().startswith("aws:"):
                raise ValueError(f"tag key {key!r} must be 1-128 characters and not start with 'aws:'")
            if len(val) > 256:
                raise ValueError(f"tag {key!r}: value longer than 256 characters")
        return value

    @model_validator(mode="after")
    def _unique_group_names(self) -> Project:
        names = [g.name for g in self.compute_groups]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"compute group names must be unique; repeated: {', '.join(dupes)}")
        return self


# --- loading -------------------------------------------------------------------------------


class _LineLoader(yaml.SafeLoader):
    """A safe loader that rejects duplicate keys."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise yaml.constructor.ConstructorError(
                None, None, "keys must be plain names, not lists or mappings", key_node.start_mark)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key {key!r} (first at line {seen[key]})",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _line_index(node: yaml.Node | None, path: tuple[Any, ...] = (), index: dict | None = None) -> dict:
    """Map each field path (tuple of keys/indices) to the line of its key (or item) in the file."""
    index = {} if index is None else index
    if node is None:
        return index
    index.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = path + (key_node.value,)
            index[child] = key_node.start_mark.line + 1
            _line_index(value_node, child, index)
            index.setdefault(child + ("__value__",), value_node.start_mark.line + 1)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            index[path + (i,)] = item.start_mark.line + 1
            _line_index(item, path + (i,), index)
    return index


def format_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def line_for(index: dict, loc: tuple[Any, ...]) -> int | None:
    """The line of the deepest part of ``loc`` that the file has."""
    loc = tuple(loc)
    while loc:
        if loc in index:
            return index[loc]
        loc = loc[:-1]
    return index.get(())


def _model_at(raw_loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model that pydantic's raw error location points into (for key suggestions)."""
    model: Any = Project
    for part in raw_loc:
        if isinstance(part, int):
            continue
        if part in _UNION_TAGS:
            model = _UNION_TAGS[part]
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return None
        model = _unwrap(model.model_fields[part].annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


_UNION_TAGS = {"on-demand": OnDemand, "reservation": Reservation, "capacity-block": CapacityBlock, "training-plan": TrainingPlan}


def _unwrap(annotation: Any) -> Any:
    """Find the model inside ``X | None``, ``list[X]`` and friends."""
    args = getattr(annotation, "__args__", None)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in args or ():
        found = _unwrap(arg)
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    return annotation


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Drop pydantic's union-tag and validator parts, keeping the user's field path."""
    return tuple(p for p in loc if not (isinstance(p, str) and (p in _UNION_TAGS or p.startswith("function-"))))


_HINTS: dict[str, str] = {
    "availability_zone_id": "use the AZ ID, not the AZ name: `aws ec2 describe-availability-zones` lists both (e.g. use1-az6)",
    "reservation_id": "the ID looks like cr-0123456789abcdef0; `aws ec2 describe-capacity-reservations` lists yours",
    "name": "lowercase letters, digits and '-', starting with a letter",
    "arn": "arn:aws:sagemaker:REGION:ACCOUNT:training-plan/NAME",
}


def _problem_from_error(err: dict[str, Any], index: dict, file: Path | None) -> Problem:
    loc = _clean_loc(tuple(err["loc"]))
    path = format_path(loc)
    kind = err["type"]
    hint: str | None = None
    if kind == "extra_forbidden":
        model = _model_at(tuple(err["loc"][:-1]))
        valid = list(model.model_fields) if model else []
        near = difflib.get_close_matches(str(loc[-1]), valid, n=1, cutoff=0.5)
        message = f"unknown key {loc[-1]!r}"
        hint = f"did you mean {near[0]!r}?" if near else (f"valid keys here: {', '.join(valid)}" if valid else None)
    elif kind == "missing":
        message = "required field is missing"
        model = _model_at(tuple(err["loc"][:-1]))
        field = model.model_fields.get(str(loc[-1])) if model else None
        if field is not None and field.description:
            hint = field.description
    elif kind == "union_tag_invalid":
        message = f"unknown value {err.get('input')!r}"
        hint = "one of: " + ", ".join(_UNION_TAGS)
    elif kind == "union_tag_not_found":
        message = "needs a 'type'"
        hint = "one of: " + ", ".join(_UNION_TAGS)
    elif kind == "string_pattern_mismatch":
        message = f"{err.get('input')!r} is not a valid value"
        hint = _HINTS.get(str(loc[-1]) if loc else "", f"must match {err.get('ctx', {}).get('pattern')}")
    elif kind == "literal_error":
        message = f"{err.get('input')!r} is not allowed"
        hint = f"expected {err.get('ctx', {}).get('expected')}"
    else:
        message = err["msg"].removeprefix("Value error, ")
        # A rule across fields names its field first ("throughput_per_tib is not allowed ..."):
        # point at that field's line when the file has it.
        first = message.split(" ", 1)[0].strip("`")
        model = _model_at(tuple(err["loc"]))
        if kind == "value_error" and model is not None and first in model.model_fields and loc + (first,) in index:
            loc = loc + (first,)
            path = format_path(loc)
        if kind.endswith("_type") or kind.endswith("_parsing"):
            message += f" (got {type(err.get('input')).__name__} {err.get('input')!r})"
            if kind == "dict_type":
                hint = "write it as a mapping (key: value lines)"
    line = line_for(index, loc + ("__value__",)) if kind not in ("extra_forbidden", "missing") else line_for(index, loc)
    return Problem("error", path, message, hint, file, line)


class LoadedProject:
    """A validated project with the line index of the file it came from."""

    def __init__(self, project: Project, file: Path | None, index: dict):
        self.project = project
        self.file = file
        self.index = index

    def line(self, loc: tuple[Any, ...]) -> int | None:
        return line_for(self.index, loc)


def parse(text: str, file: Path | None = None) -> LoadedProject:
    """Parse and validate a project file's text. Raises :class:`ConfigError` listing every problem."""
    try:
        node = yaml.compose(text, Loader=_LineLoader)
        data = yaml.load(text, Loader=_LineLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(
            [Problem("error", "", f"not valid YAML: {problem}", "check indentation and quoting near this line", file,
                     mark.line + 1 if mark else None)]
        ) from None
    index = _line_index(node)
    if not isinstance(data, dict):
        raise ConfigError(
            [Problem("error", "", "a project file must be a mapping of keys to values", "start with `name: my-project`", file, 1)]
        )
    try:
        project = Project.model_validate(data)
    except ValidationError as exc:
        problems = [_problem_from_error(e, index, file) for e in exc.errors()]
        raise ConfigError(sorted(problems, key=lambda p: (p.line or 0, p.path))) from None
    return LoadedProject(project, file, index)


def projects_dir() -> Path:
    """Where named projects live: ``$FMCLUSTER_PROJECTS_DIR`` or ``./projects``."""
    return Path(os.environ.get("FMCLUSTER_PROJECTS_DIR", "projects"))


def resolve(ref: str) -> Path:
    """A project reference is a name under ``projects/`` or a path to a YAML file."""
    candidate = Path(ref)
    if candidate.suffix in (".yaml", ".yml") or os.sep in ref:
        return candidate
    return projects_dir() / f"{ref}.yaml"


def load(ref: str | Path) -> LoadedProject:
    """Read, parse and validate a project by name or path."""
    path = resolve(str(ref))
    if not path.is_file():
        known = sorted(p.stem for p in projects_dir().glob("*.yaml"))
        hint = f"known projects: {', '.join(known)}" if known else "create one with `fmcluster new NAME`"
        raise ConfigError([Problem("error", "", f"no project file at {path}", hint, path, None)])
    loaded = parse(path.read_text(encoding="utf-8"), path)
    # A file given by path (an example) may be named freely; a project under projects/ must agree.
    if path.stem != loaded.project.name and path.parent.resolve() == projects_dir().resolve():
        raise ConfigError(
            [Problem("error", "name", f"name {loaded.project.name!r} differs from the file name {path.stem!r}",
                     f"rename the file to {loaded.project.name}.yaml or set name: {path.stem}", path, loaded.line(("name",)))]
        )
    return loaded
