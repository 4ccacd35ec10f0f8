"""Pydantic's validation errors in the user's words: one located :class:`Problem` per problem.

No union branch names (``placement_group.bool``), no Python reprs of whole mappings, no pydantic
phrases ("valid dictionary or object to extract fields from"); a key written one level off says
where it belongs; the alternatives of a union are reported once, as the values the field takes.
Hints that name a field link to its section of the key reference, ``docs/project-file.md``.
"""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from fmcluster.config.compute import CAPACITY_TYPES, GROUP_NAME, RESERVATION_ID, TRAINING_PLAN_ARN
from fmcluster.config.project import AZ_ID, DNS_NAME, REGION, Project
from fmcluster.facts import REGIONS
from fmcluster.errors import Problem

REFERENCE = "docs/project-file.md"
"""The key reference (generated from the models by :mod:`fmcluster.generate.reference`)."""

_UNION_TAGS = CAPACITY_TYPES

_HINTS: dict[str, str] = {
    AZ_ID: "use the AZ ID, not the AZ name: `aws ec2 describe-availability-zones` lists both (e.g. use1-az6)",
    RESERVATION_ID: "the ID looks like cr-0123456789abcdef0; `aws ec2 describe-capacity-reservations` lists yours",
    DNS_NAME: "2 to 32 characters: lowercase letters, digits and '-', starting with a letter, not ending with '-'",
    GROUP_NAME: "1 to 25 characters: lowercase letters and digits, starting with a letter (no '-' or '_')",
    TRAINING_PLAN_ARN: "arn:aws:sagemaker:REGION:ACCOUNT:training-plan/NAME",
    REGION: "a Region code like us-east-1 (`aws ec2 describe-regions` lists them)",
}
"""Hints by the pattern a value failed (the same key name can carry different rules)."""


_WORDS: dict[tuple[str, str], str] = {
    ("orchestrator.type", "slurm"): "parallelcluster, hyperpod and pcs each run Slurm: pick the service that "
                                    "runs it (parallelcluster: AWS ParallelCluster; hyperpod: SageMaker HyperPod; "
                                    "pcs: AWS Parallel Computing Service)",
}
"""Hints for a word users write where the field takes others: (the key reference's path, the word)."""


def generic_path(loc: tuple[Any, ...]) -> str:
    """A field path as the key reference titles it: list items as ``[]``, a mapping's own keys as ``<name>``
    (``compute_groups[0].capacity`` -> ``compute_groups[].capacity``, ``tags.team`` -> ``tags.<name>``)."""
    out = ""
    annotations: list[Any] = [Project]
    for part in loc:
        following: list[Any] = []
        word = None
        for annotation in annotations:
            for t in _args(annotation):
                if _is_model(t) and isinstance(part, str) and part in t.model_fields:
                    following.append(t.model_fields[part].annotation)
                    word = part
                elif typing.get_origin(t) in (list, tuple) and typing.get_args(t):
                    following.append(typing.get_args(t)[0])
                    word = word or "[]"
                elif typing.get_origin(t) is dict and typing.get_args(t):
                    following.append(typing.get_args(t)[1])
                    word = word or "<name>"
        word = word or ("[]" if isinstance(part, int) else str(part))
        out += word if word == "[]" or not out else "." + word
        annotations = following
    return out


def anchor(generic: str) -> str:
    """GitHub's anchor of the reference's heading for ``generic``: its letters, digits, ``-`` and ``_``, lowercased."""
    return "#" + "".join(c for c in generic.lower() if c.isalnum() or c in "-_")


def see(loc: tuple[Any, ...]) -> str:
    """A pointer to the key's section of the reference."""
    generic = generic_path(loc)
    return f"see {REFERENCE}{anchor(generic) if generic else ''}"


def show(value: Any, limit: int = 60) -> str:
    """A value as YAML writes it, cut short: a mapping or list is named, never dumped."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null (an empty value)"
    if isinstance(value, dict):
        return "a mapping" + (f" with keys {', '.join(map(str, list(value)[:4]))}" if value else "")
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)}"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


@dataclass
class Where:
    """Where pydantic's raw error location points: the user's path and what the schema says there."""

    loc: tuple[Any, ...]
    field: FieldInfo | None
    """The field the location ends in (None past a leaf)."""
    branch: bool
    """The error is about one alternative of a union (pydantic tried each)."""


def _args(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) is typing.Annotated:
        return _args(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return tuple(a for a in typing.get_args(annotation) if a is not type(None))
    return (annotation,)


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def locate(raw: tuple[Any, ...]) -> Where:
    """Walk the schema along pydantic's raw location, keeping the user's parts and dropping pydantic's own."""
    current: Any = Project
    field: FieldInfo | None = None
    loc: list[Any] = []
    branch = False
    for part in raw:
        alternatives = _args(current)
        if len(alternatives) > 1:  # a union: pydantic names the branch it tried
            if isinstance(part, str) and part in _UNION_TAGS:
                current = _UNION_TAGS[part]
                continue
            chosen = [a for a in alternatives if _is_model(a) and a.__name__ == part]
            if chosen:
                current = chosen[0]
                continue
            branch = True
            current = None
            continue
        current = alternatives[0]
        origin = typing.get_origin(current)
        if isinstance(part, str) and part.startswith("function-"):
            continue
        if _is_model(current):
            if isinstance(part, str) and part in current.model_fields:
                field = current.model_fields[part]
                loc.append(part)
                current = field.annotation
                continue
            loc.append(part)
            current = None
            continue
        if origin in (list, tuple, set, frozenset) and isinstance(part, int):
            loc.append(part)
            current = typing.get_args(current)[0] if typing.get_args(current) else None
            continue
        if origin is dict:
            loc.append(part)
            current = typing.get_args(current)[1] if typing.get_args(current) else None
            continue
        if isinstance(part, int) or current is None:
            loc.append(part)
            continue
        branch = branch or not isinstance(part, int)  # a leaf's type name ('bool', "literal['auto']")
    return Where(tuple(loc), field, branch)


def model_of(annotation: Any) -> list[type[BaseModel]]:
    """The models a field holds: itself, inside ``X | None``, ``list[X]``, ``dict[str, X]`` or a union."""
    found: list[type[BaseModel]] = []
    for arg in _args(annotation):
        if _is_model(arg):
            found.append(arg)
        elif typing.get_origin(arg) in (list, dict, tuple):
            found += model_of(typing.get_args(arg)[-1])
    return found


def _models_at(loc: tuple[Any, ...]) -> list[type[BaseModel]]:
    """The model(s) at a user's path (every member of a union: ``capacity`` is any capacity type)."""
    annotations: list[Any] = [Project]
    for part in loc:
        following: list[Any] = []
        for annotation in annotations:
            for t in _args(annotation):
                if _is_model(t) and isinstance(part, str) and part in t.model_fields:
                    following.append(t.model_fields[part].annotation)
                elif typing.get_origin(t) in (list, tuple) and isinstance(part, int) and typing.get_args(t):
                    following.append(typing.get_args(t)[0])
                elif typing.get_origin(t) is dict and typing.get_args(t):
                    following.append(typing.get_args(t)[1])
        annotations = following
    return [t for a in annotations for t in _args(a) if _is_model(t)]


def _container(raw: tuple[Any, ...]) -> list[type[BaseModel]]:
    """The model(s) whose keys an error at pydantic's raw location sits among (the chosen capacity type's)."""
    if raw and isinstance(raw[-1], str) and raw[-1] in _UNION_TAGS:
        return [_UNION_TAGS[raw[-1]]]
    return _models_at(locate(raw).loc)


def _alternatives(field: FieldInfo | None) -> str | None:
    """The values a union field takes, as YAML writes them: ``true, false or 'auto'``."""
    if field is None:
        return None
    words: list[str] = []
    annotation = field.annotation
    while len(_args(annotation)) == 1 and typing.get_origin(_args(annotation)[0]) in (list, dict):
        annotation = typing.get_args(_args(annotation)[0])[-1]  # the union is the items' (custom_settings.A)
    for arg in _args(annotation):
        if arg is bool:
            words += ["true", "false"]
        elif typing.get_origin(arg) is Literal:
            words += [repr(v) if isinstance(v, str) else str(v) for v in typing.get_args(arg)]
        elif arg is int:
            words.append("a whole number")
        elif arg is str:
            words.append("text")
        elif _is_model(arg):
            words.append("a mapping")
        elif typing.get_origin(arg) is list:
            words.append("a list")
        else:
            return None
    return ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else (words[0] if words else None)


def _misplaced(key: str, raw_parent: tuple[Any, ...], here: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]] | None:
    """Where a key unknown here belongs when one level down or up has it: (``under capacity:``, its path)."""
    for model in _container(raw_parent):
        for name, field in model.model_fields.items():
            if any(key in child.model_fields for child in model_of(field.annotation)):
                return f"under {name}:", here + (name, key)
    if here:
        up = here[:-1] if isinstance(here[-1], str) else here[:-2]
        if any(key in model.model_fields for model in _models_at(up)):
            return (f"one level up, under {format_path(up)}" if up else "at the top level"), up + (key,)
    return None


def _type_values(loc: tuple[Any, ...]) -> tuple[str, ...]:
    """The values the ``type`` key of the mapping at ``loc`` takes (``orchestrator: {type: pcs}``)."""
    values: list[str] = []
    for model in _models_at(loc):
        field = model.model_fields.get("type")
        for arg in _args(field.annotation) if field is not None else ():
            if typing.get_origin(arg) is Literal:
                values += [v for v in typing.get_args(arg) if isinstance(v, str)]
    return tuple(values)


def format_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _problem(err: dict[str, Any], index: dict, file: Path | None, line_for) -> tuple[Problem, tuple | None]:
    """One problem from one pydantic error, and (for a misplaced key) the path of the key it stands for."""
    raw = tuple(err["loc"])
    where = locate(raw)
    loc = where.loc
    path = format_path(loc)
    kind = err["type"]
    hint: str | None = None
    stands_for = None
    if kind == "extra_forbidden":
        key = str(loc[-1])
        moved = _misplaced(key, raw[:-1], loc[:-1])
        if moved is not None:
            message = f"{key!r} belongs {moved[0]}"
            hint = f"move it there ({format_path(moved[1])}); {see(moved[1])}"

            stands_for = moved[1]
        else:
            valid = [n for m in _container(raw[:-1]) for n in m.model_fields]
            near = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
            message = f"unknown key {key!r}"
            hint = f"did you mean {near[0]!r}?" if near else (f"valid keys here: {', '.join(valid)}; {see(loc[:-1])}"
                                                           if valid else None)
            if near:  # the misspelt key stands for the one it resembles: no "required field is missing" for that
                stands_for = loc[:-1] + (near[0],)
    elif kind == "missing":
        message = "required field is missing"
        if where.field is not None and where.field.description:
            hint = f"{where.field.description} ({see(loc)})"
    elif kind == "located":
        message = err["msg"]
        loc = loc + tuple(err.get("ctx", {}).get("at", ()))
        path = format_path(loc)
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        key = err.get("ctx", {}).get("discriminator", "'type'").strip("'")
        tag = err.get("ctx", {}).get("tag")
        loc = loc + (key,)
        path = format_path(loc)
        if kind == "union_tag_invalid":
            message = f"unknown {loc[-2]} {key} {show(tag)}"
            near = difflib.get_close_matches(str(tag), _UNION_TAGS, n=1, cutoff=0.6)
            hint = (f"did you mean {near[0]!r}? " if near else "") + "one of: " + ", ".join(_UNION_TAGS)
        else:
            message = f"needs a {key!r}"
            hint = "one of: " + ", ".join(_UNION_TAGS)
        hint += f"; {see(where.loc)}"
    elif kind in ("model_attributes_type", "model_type", "dict_type"):
        value = err.get("input")
        message = f"should be a mapping (key: value lines), not {show(value)}"
        if isinstance(value, str) and (value in _UNION_TAGS or value in _type_values(loc)):
            hint = f"write `{loc[-1]}: {{type: {value}}}`, or `type: {value}` on the next line, indented under it"
        else:
            hint = f"write it as key: value lines; {see(loc)}"
    elif kind in ("int_parsing", "int_type") and isinstance(err.get("input"), str) and err["input"].strip()[:1].isdigit():
        value = err["input"].strip()
        number = value.split()[0].replace(",", "").replace("_", "")
        message = f"{show(value)} is not a whole number"
        hint = (f"write the number alone: `{loc[-1]}: {number}`" if number.isdigit()
                else f"write a whole number; {see(loc)}")
    elif kind == "list_type" and isinstance(err.get("input"), (str, int, float)):
        value = err["input"]
        message = f"should be a list, not {show(value)}"
        hint = f"write `{loc[-1]}: [{value}]`, or one `- {value}` line per item under it"
    elif where.branch:
        value = err.get("input")
        choices = _alternatives(where.field)
        message = f"{show(value)} is not allowed"
        hint = f"write {choices}" if choices else (where.field.description if where.field else None)
    elif kind == "string_pattern_mismatch":
        message = f"{show(err.get('input'))} is not a valid value"
        pattern = err.get("ctx", {}).get("pattern")
        hint = f"{_HINTS.get(pattern, f'must match {pattern}')}; {see(loc)}"
        near = difflib.get_close_matches(str(err.get("input")), REGIONS, n=1, cutoff=0.8) if pattern == REGION else []
        if near:
            hint = f"did you mean {near[0]!r}? " + hint
    elif kind == "literal_error":
        message = f"{show(err.get('input'))} is not allowed"
        hint = f"expected {err.get('ctx', {}).get('expected')}"
        allowed = [str(v) for v in typing.get_args(_args(where.field.annotation)[0])] if where.field else []
        near = difflib.get_close_matches(str(err.get("input")), allowed, n=1, cutoff=0.7)
        if near:
            hint = f"did you mean {near[0]!r}? {hint}"
        hint = _WORDS.get((generic_path(loc), str(err.get("input")).lower()), hint)
    elif kind == "list_type" and isinstance(err.get("input"), dict):
        first = next(iter(err["input"]), "name")
        message = f"should be a list (one `- ` line per item), not {show(err['input'])}"
        hint = f"write each item as a `- ` line, e.g. `- name: {first}`; {see(loc)}"
    elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = next(iter(err.get("ctx", {}).values()), None)
        words = {"greater_than_equal": "at least", "greater_than": "more than", "less_than_equal": "at most",
                 "less_than": "less than"}[kind]
        shown = (f"{bound:,}" if isinstance(bound, int) else f"{bound:g}" if isinstance(bound, float) else str(bound))
        message = f"{show(err.get('input'))} is not allowed: {loc[-1]} must be {words} {shown}"
        hint = where.field.description if where.field is not None and where.field.description else see(loc)
    else:
        message = err["msg"].removeprefix("Value error, ")
        # A rule across fields names its field first ("throughput_per_tib is not allowed ..."):
        # point at that field's line when the file has it.
        first = message.split(" ", 1)[0].strip("`")
        if kind == "value_error" and any(first in m.model_fields for m in _container(raw)) and loc + (first,) in index:
            loc = loc + (first,)
            path = format_path(loc)
        if kind.endswith("_type") or kind.endswith("_parsing"):
            message += f" (got {show(err.get('input'))})"
    line = line_for(index, loc + ("__value__",)) if kind not in ("extra_forbidden", "missing") else line_for(index, loc)
    return Problem("error", path, message, hint, file, line), stands_for


def problems(errors: list[dict[str, Any]], index: dict, file: Path | None, line_for) -> list[Problem]:
    """Every pydantic error as a problem, one per problem: a union's branches become one message, and a
    required key reported missing where a misplaced key belongs is left to that key's message."""
    found: list[Problem] = []
    moved: set[str] = set()
    seen: set[tuple[str, int | None]] = set()
    under: list[tuple[Problem, tuple[Any, ...]]] = []  # keys that belong one level down, and where
    for err in errors:
        problem, stands_for = _problem(err, index, file, line_for)
        if stands_for is not None:
            moved.add(format_path(stands_for))
            if problem.message.startswith(f"{str(stands_for[-1])!r} belongs under"):
                under.append((problem, stands_for))
        key = (problem.path, problem.line)
        if locate(tuple(err["loc"])).branch and key in seen:
            continue  # the same union field: reported once, with every value it takes
        seen.add(key)
        found.append(problem)
    # A mapping left empty because the keys meant for it lost their indentation (`capacity:` then `type: ...` at
    # the same column): one message, on the key, saying so.
    empty = {p.path for p in found if p.message.endswith("not null (an empty value)")}
    for problem, path in under:
        parent = format_path(path[:-1])
        if parent in empty:
            found[found.index(problem)] = replace(
                problem, message=f"{problem.message.split(' belongs')[0]} belongs under {path[-2]}:, which is empty",
                hint=f"indent it, and the lines that go with it, two spaces under {path[-2]}:; {see(path)}")
            found = [p for p in found if not (p.path == parent and p.message.endswith("not null (an empty value)"))]
    kept = [p for p in found if not (p.message == "required field is missing" and p.path in moved)]
    return sorted(kept, key=lambda p: (p.line or 0, p.path))
