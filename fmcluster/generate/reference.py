"""The key reference, ``docs/project-file.md``: every key of a project file, generated from the pydantic models.

Each key gets its description (the field's own), type, default, allowed values and an example taken
from a shipped project (``projects/default.yaml``, ``examples/``, the project examples of README.md and docs/) or
the field's ``examples``. Error hints link to these sections (:func:`fmcluster.config.messages.see`
builds the same anchors). Regenerate with ``make docs`` (``python -m fmcluster.generate.reference``);
``tests/generate/test_reference.py`` fails when the committed file is stale.
"""

from __future__ import annotations

import re
import sys
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union

import yaml
from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from fmcluster.config import Project
from fmcluster.config.messages import REFERENCE, anchor

ROOT = Path(__file__).resolve().parents[2]
"""The checkout (the reference is generated there; a wheel carries neither docs/ nor examples/)."""


@dataclass
class Key:
    """One key of the project file, at its generic path (``compute_groups[].capacity.type``)."""

    path: str
    info: FieldInfo
    owners: list[type[BaseModel]]
    variants: list[str] = field(default_factory=list)
    """For a key of some members of a union only: the ``type`` values that have it."""
    union: list[type[BaseModel]] = field(default_factory=list)
    """The members of the union this key sits in (all of them), for the ``type`` key's values."""


def _args(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) is typing.Annotated:
        return _args(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return tuple(a for arg in typing.get_args(annotation) if arg is not type(None) for a in _args(arg))
    return (annotation,)


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def _children(path: str, annotation: Any) -> tuple[str, list[type[BaseModel]]]:
    """The models under a key, and the path their keys hang from (``[]`` for list items, ``.<name>`` for a mapping's)."""
    models: list[type[BaseModel]] = []
    suffix = ""
    for arg in _args(annotation):
        origin = typing.get_origin(arg)
        if _is_model(arg):
            models.append(arg)
        elif origin in (list, tuple) and typing.get_args(arg):
            inner = [a for a in _args(typing.get_args(arg)[0]) if _is_model(a)]
            if inner:
                models, suffix = models + inner, "[]"
        elif origin is dict and typing.get_args(arg):
            inner = [a for a in _args(typing.get_args(arg)[1]) if _is_model(a)]
            if inner:
                models, suffix = models + inner, ".<name>"
    return path + suffix, models


def keys(models: list[type[BaseModel]] | None = None, prefix: str = "") -> Iterator[Key]:
    """Every key, depth first, in the models' own order; a union's members share one list of keys."""
    models = models or [Project]
    by_name: dict[str, list[tuple[type[BaseModel], FieldInfo]]] = {}
    for model in models:
        for name, info in model.model_fields.items():
            by_name.setdefault(name, []).append((model, info))
    for name, owners in by_name.items():
        path = f"{prefix}.{name}" if prefix else name
        info = owners[0][1]
        variants = [_tag(m) for m, _ in owners] if len(models) > 1 and len(owners) < len(models) else []
        yield Key(path, info, [m for m, _ in owners], variants, models if len(models) > 1 else [])
        child_prefix, children = _children(path, info.annotation)
        if children:
            yield from keys(children, child_prefix)


def _tag(model: type[BaseModel]) -> str:
    literal = model.model_fields["type"].annotation if "type" in model.model_fields else None
    values = typing.get_args(literal) if typing.get_origin(literal) is Literal else ()
    return str(values[0]) if values else model.__name__


def _constraints(info: FieldInfo) -> str:
    low = next((f"at least {m.ge:,}" for m in info.metadata if isinstance(m, Ge)), None) or next(
        (f"over {m.gt:,}" for m in info.metadata if isinstance(m, Gt)), None)
    high = next((f"at most {m.le:,}" for m in info.metadata if isinstance(m, Le)), None) or next(
        (f"under {m.lt:,}" for m in info.metadata if isinstance(m, Lt)), None)
    items_low = next((m.min_length for m in info.metadata if isinstance(m, MinLen)), None)
    items_high = next((m.max_length for m in info.metadata if isinstance(m, MaxLen)), None)
    parts = [p for p in (low, high) if p]
    if items_low is not None or items_high is not None:
        parts.append(f"{items_low or 0} to {items_high} items" if items_high else f"at least {items_low} items")
    pattern = next((getattr(m, "pattern", None) for m in info.metadata if getattr(m, "pattern", None)), None)
    if pattern:
        parts.append(f"matching `{pattern}`")
    return ", ".join(parts)


def _literal_values(annotation: Any) -> list[Any]:
    return [v for arg in _args(annotation) if typing.get_origin(arg) is Literal for v in typing.get_args(arg)]


def type_text(annotation: Any) -> str:
    """A type in YAML's words: text, whole number, true or false, one of ..., list of ..., mapping."""
    words: list[str] = []
    for arg in _args(annotation):
        origin = typing.get_origin(arg)
        if arg is bool:
            words.append("true or false")
        elif arg is int:
            words.append("whole number")
        elif arg is float:
            words.append("number")
        elif arg is str:
            words.append("text")
        elif origin is Literal:
            words.append("one of " + ", ".join(f"`{_yaml(v)}`" for v in typing.get_args(arg)))
        elif _is_model(arg):
            words.append("mapping (keys below)")
        elif origin in (list, tuple):
            words.append("list of " + type_text(typing.get_args(arg)[0]))
        elif origin is dict:
            words.append("mapping of names to " + type_text(typing.get_args(arg)[1]))
        else:
            words.append(getattr(arg, "__name__", str(arg)))
    if len(words) > 1 and all(w == "mapping (keys below)" for w in words):
        return "mapping (keys below)"
    if len(words) > 1 and all(w.startswith("one of ") for w in words):
        return "one of " + ", ".join(w.removeprefix("one of ") for w in words)
    return " or ".join(dict.fromkeys(words))


def _yaml(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_defaults=True)
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10_000).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def _default(info: FieldInfo) -> str | None:
    """The default as YAML, or None when the key is required."""
    if info.default is PydanticUndefined and info.default_factory is None:
        return None
    value = info.default_factory() if info.default_factory is not None else info.default  # type: ignore[call-arg]
    if value is None:
        return "none (absent)"
    if isinstance(value, BaseModel) and not value.model_dump(exclude_defaults=True):
        return "the defaults of the keys below"
    return f"`{_yaml(value)}`"


def _shipped(root: Path) -> list[tuple[str, Any]]:
    """The shipped projects' data, with their names: the default project, the examples, the project examples of
    README.md and of the docs pages."""
    found: list[tuple[str, Any]] = []
    for path in [root / "projects" / "default.yaml", *sorted((root / "examples").glob("*.yaml"))]:
        if path.is_file():
            found.append((path.relative_to(root).as_posix(), yaml.safe_load(path.read_text(encoding="utf-8"))))
    docs = sorted(p for p in (root / "docs").glob("*.md") if p.name != "project-file.md")  # this file: the output
    for page in [root / "README.md", *docs]:
        if page.is_file():
            for block in re.findall(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
                found.append((page.relative_to(root).as_posix(), yaml.safe_load(block)))
    return found


def _values(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every (generic path, value) in a project's data."""
    if isinstance(data, dict):
        for key, value in data.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            yield path, value
            yield from _values(value, path)
    elif isinstance(data, list):
        for item in data:
            yield from _values(item, prefix + "[]")


def examples(root: Path = ROOT) -> dict[str, tuple[Any, str]]:
    """The first scalar (or list of scalars) each key has in a shipped project, with the file it came from."""
    paths = {k.path for k in keys()}
    parents = {k.path.rsplit(".", 1)[0].removesuffix("[]") for k in keys() if "." in k.path}
    found: dict[str, tuple[Any, str]] = {}
    for source, data in _shipped(root):
        for path, value in _values(data):
            generic = path
            if generic not in paths:  # a mapping's own key (tags.team): the reference calls it <name>
                parts = generic.split(".")
                generic = ".".join(parts[:-1] + ["<name>"])
            nested = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
            if generic in paths and generic not in found and not (isinstance(value, dict) and generic in parents) \
                    and not any(isinstance(v, (dict, list)) for v in nested):
                found[generic] = (value, source)
    return found


def render(root: Path = ROOT) -> str:
    """The whole reference, as Markdown."""
    shipped = examples(root)
    all_keys = list(keys())
    lines = [
        "# The project file: every key",
        "",
        "<!-- Generated from the pydantic models in fmcluster/config/ by `make docs`",
        "     (python -m fmcluster.generate.reference). Do not edit: tests/generate/test_reference.py fails",
        "     when this file and the models disagree. -->",
        "",
        "One YAML file per project (`projects/NAME.yaml`). Each key below has its description, its type, its",
        "default (or *required*), the values it allows and an example from a shipped project. `[]` stands for",
        "each item of a list, `<name>` for a key you choose (a tag, a compute group's name). Unknown keys are",
        "errors; `fmcluster validate` names the file, line and key of every problem and links here.",
        "",
        "Top-level keys: " + ", ".join(f"[`{k.path}`]({anchor(k.path)})" for k in all_keys if "." not in k.path
                                       and "[" not in k.path) + ".",
        "",
    ]
    for key in all_keys:
        top = "." not in key.path and "[" not in key.path
        lines += [f"{'##' if top else '###'} `{key.path}`", "", key.info.description or "", ""]
        union_type = key.path.endswith(".type") and bool(key.union) and not key.variants
        annotation = Union[tuple(m.model_fields["type"].annotation for m in key.union)] if union_type else key.info.annotation
        facts = [f"- type: {type_text(annotation)}"]
        bounds = _constraints(key.info)
        if bounds:
            facts[0] += f", {bounds}"
        default = _default(key.info)
        facts.append("- required" if default is None else f"- default: {default}")
        if union_type:
            facts.append("- allowed:")
            facts += [f"  - `{_tag(m)}`: {(m.__doc__ or '').strip()}" for m in key.union]
        if key.variants:
            facts.append("- only with type: " + ", ".join(f"`{v}`" for v in key.variants))
        if key.path in shipped:
            value, source = shipped[key.path]
            facts.append(f"- example: `{_yaml(value)}` ({source})")
        elif key.info.examples:
            facts.append(f"- example: `{_yaml(key.info.examples[0])}`")
        lines += facts + [""]
    return "\n".join(lines).rstrip() + "\n"


def write_or_check(doc: str, text: str, argv: list[str] | None, note: str = "") -> int:
    """A generated page: write ``text`` to ``doc`` (relative to the checkout), or with ``--check`` in ``argv`` exit 1
    when the file differs (``make docs`` writes it)."""
    argv = sys.argv[1:] if argv is None else argv
    target = ROOT / doc
    if "--check" in argv:
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            print(f"{doc} is stale: run `make docs`", file=sys.stderr)
            return 1
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {doc}{note}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check``, compare) ``docs/project-file.md``."""
    return write_or_check(REFERENCE, render(), argv, f" ({len(list(keys()))} keys)")


if __name__ == "__main__":
    sys.exit(main())
