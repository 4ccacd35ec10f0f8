"""Reading project files: YAML -> :class:`Project`, with every error tied to its file and line.

Structure only (types, allowed keys, formats). Meaning -- does the subnet hold the nodes,
does the capacity fit the orchestrator -- lives in :mod:`fmcluster.checks`.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from fmcluster.config.compute import CAPACITY_TYPES
from fmcluster.config.project import Project
from fmcluster.errors import ConfigError, Problem


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


_UNION_TAGS = CAPACITY_TYPES


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
