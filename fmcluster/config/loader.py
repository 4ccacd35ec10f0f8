"""Reading project files: YAML -> :class:`Project`, with every error tied to its file and line.

Structure only (types, allowed keys, formats). Meaning -- does the subnet hold the nodes,
does the capacity fit the orchestrator -- lives in :mod:`fmcluster.checks`.
"""

from __future__ import annotations

import codecs
import difflib
import os
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from fmcluster.config import messages
from fmcluster.config.messages import format_path
from fmcluster.config.project import Project
from fmcluster.errors import ConfigError, Problem

MAX_BYTES = 256 * 1024
"""Largest project file read. The largest example is about 2 KB; a file this size is a mistake or an attack."""
MAX_DEPTH = 32
"""Deepest nesting of mappings and lists, aliases expanded (the schema itself goes about 6 deep)."""
MAX_VALUES = 100_000
"""Most values (scalars, lists, mappings) the document may expand to through aliases: bounds a "billion laughs"."""


class _Refused(yaml.composer.ComposerError):
    """Valid YAML that a project file may not be: too deep, an alias loop or bomb, a value Python cannot hold."""

    def __init__(self, message: str, hint: str, mark: yaml.Mark) -> None:
        super().__init__(None, None, message, mark)
        self.hint = hint


_ALIAS_HINT = "write the values out, or use fewer aliases (`*name`) of large anchored values (`&name`)"


try:  # libyaml's parser makes events about 15 times faster: a 256 KiB file is read in well under a second
    from yaml._yaml import CParser as _CParser
except ImportError:  # PyYAML built without libyaml: the pure-Python parser, same events
    _CParser = None

if _CParser is not None:
    class _Base(yaml.composer.Composer, _CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        """libyaml's events, PyYAML's own composer (which the bounds below hook into), the safe constructor."""

        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
else:
    _Base = yaml.SafeLoader  # type: ignore[misc,assignment]


class _LineLoader(_Base):  # type: ignore[valid-type,misc]
    """A safe loader that rejects duplicate keys and bounds nesting and alias expansion while it composes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._open_anchors: set[str] = set()
        self._weight: dict[int, tuple[int, int]] = {}  # id(node) -> (values, depth) with aliases expanded

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) and event.anchor in self._open_anchors:
            raise _Refused(f"alias *{event.anchor} refers to the value it is inside (a loop)",
                           "an alias may only repeat a value that is complete before it", event.start_mark)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Refused(f"nested more than {MAX_DEPTH} levels deep",
                           "a project file nests about 6 levels; check the brackets and indentation", event.start_mark)
        anchor = getattr(event, "anchor", None) if not isinstance(event, yaml.AliasEvent) else None
        if anchor is not None:
            self._open_anchors.add(anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            self._open_anchors.discard(anchor)
        if id(node) not in self._weight:
            self._weigh(node, event.start_mark)
        return node

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """Build one value; a scalar Python cannot hold (a 5,000-digit integer, month 13) is a located error."""
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            value = node.value if isinstance(node, yaml.ScalarNode) else node.tag
            what = "a date" if node.tag.endswith(":timestamp") else "a number" if node.tag.endswith(("int", "float")) else "a value"
            raise _Refused(f"{_show(value)} cannot be read as {what} ({str(exc).split(';')[0][:80]})",
                           "quote it to make it text, or write a smaller value", node.start_mark) from None

    def _weigh(self, node: yaml.Node, mark: yaml.Mark) -> None:
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        weights = [self._weight[id(c)] for c in children]
        values = 1 + sum(w[0] for w in weights)
        depth = 1 + max((w[1] for w in weights), default=0)
        if values > MAX_VALUES:
            raise _Refused(f"aliases expand this value to more than {MAX_VALUES:,} values", _ALIAS_HINT, mark)
        if depth > MAX_DEPTH:
            raise _Refused(f"aliases nest this value more than {MAX_DEPTH} levels deep", _ALIAS_HINT, mark)
        self._weight[id(node)] = (values, depth)


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


def line_for(index: dict, loc: tuple[Any, ...]) -> int | None:
    """The line of the deepest part of ``loc`` that the file has."""
    loc = tuple(loc)
    while loc:
        if loc in index:
            return index[loc]
        loc = loc[:-1]
    return index.get(())


def _show(value: Any, limit: int = 60) -> str:
    """A value as the user wrote it, cut short: a 400-digit number or a pasted file stays readable."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


class LoadedProject:
    """A validated project with the line index of the file it came from."""

    def __init__(self, project: Project, file: Path | None, index: dict):
        self.project = project
        self.file = file
        self.index = index

    def line(self, loc: tuple[Any, ...]) -> int | None:
        return line_for(self.index, loc)


def decode(data: bytes, file: Path | None = None) -> str:
    """A project file's bytes as text: UTF-8, with or without a byte-order mark; anything else is refused."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    elif data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        kind = "UTF-32" if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)) else "UTF-16"
        raise ConfigError([Problem("error", "", f"the file is {kind}; project files are UTF-8",
                                   "save it as UTF-8 (e.g. `iconv -f UTF-16 -t UTF-8`)", file, 1)])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError([Problem("error", "", f"not UTF-8: byte 0x{data[exc.start]:02x} at column {column}",
                                   "save the file as UTF-8", file, line)]) from None


def _too_big(size: int, line: int, file: Path | None, limit: int = MAX_BYTES) -> ConfigError:
    return ConfigError([Problem("error", "", f"the file is larger than {limit // 1024} KiB ({size:,} bytes or more)",
                                "a project file is a few KB; split it into projects or remove generated content",
                                file, line)])


def _compose(text: str, file: Path | None) -> tuple[yaml.Node | None, Any]:
    """Parse once: the node tree (for lines) and the data built from that same tree."""
    loader = None
    try:
        loader = _LineLoader(text)
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        what = "a NUL byte" if exc.character in (0, "\0") else f"character {_codepoint(exc.character)}"
        raise ConfigError([Problem("error", "", f"not valid YAML: {what} is not allowed in a YAML file",
                                   "remove it (a binary file, or text pasted with control characters?)", file,
                                   line)]) from None
    except _Refused as exc:
        raise ConfigError([Problem("error", "", str(exc.problem), exc.hint, file,
                                   exc.problem_mark.line + 1 if exc.problem_mark else 1)]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([_yaml_problem(exc, text, file)]) from None
    finally:
        if loader is not None and hasattr(loader, "dispose"):
            loader.dispose()
    return node, data


_NO_SPACE = re.compile(r"^(?P<indent>\s*(?:-\s+)?)(?P<key>[A-Za-z_][A-Za-z0-9_]*):(?P<value>[^\s:/][^#]*?)\s*(?:#.*)?$")
"""``key:value`` with no space after the colon: YAML reads one plain text, not a key and its value."""


def _no_space(text: str, last: int) -> tuple[int, re.Match[str]] | None:
    """The line (from 1), at or above ``last``, written ``key:value``; None when there is none."""
    lines = text.splitlines()
    for number in range(min(last, len(lines)), max(0, last - 3), -1):
        found = _NO_SPACE.match(lines[number - 1])
        if found is not None:
            return number, found
    return None


def _yaml_problem(exc: yaml.YAMLError, text: str, file: Path | None) -> Problem:
    """The parser's complaint as one located problem, in the words of the mistake that usually causes it."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = str(getattr(exc, "problem", None) or exc)
    line = mark.line + 1 if mark else 1
    column = mark.column + 1 if mark else None
    if "tab" in problem:
        row = text.splitlines()[line - 1] if 0 < line <= len(text.splitlines()) else ""
        column = row.index("\t") + 1 if "\t" in row else column
        return Problem("error", "", "a tab character in the indentation",
                       "YAML indents with spaces only: replace the tab with spaces (two per level)", file, line,
                       column=column)
    found = _no_space(text, line)
    if found is not None:
        number, match = found
        key, value = match.group("key"), match.group("value").strip()
        return Problem("error", "", f"`{key}:{value}` has no space after the colon, so YAML reads it as one text",
                       f"write `{key}: {value}`", file, number, column=len(match.group("indent")) + len(key) + 2)
    return Problem("error", "", f"not valid YAML: {problem}", "check indentation and quoting near this line", file,
                   line, column=column)


def _codepoint(character: Any) -> str:
    code = character if isinstance(character, int) else ord(character)
    return f"U+{code:04X}"


def _text(text: str | bytes, file: Path | None, limit: int) -> str:
    """The file's text, refused when larger than ``limit`` bytes or not UTF-8."""
    if isinstance(text, bytes):
        if len(text) > limit:
            raise _too_big(len(text), text.count(b"\n", 0, limit) + 1, file, limit)
        text = decode(text, file)
    if len(text) > limit or len(text.encode("utf-8", "surrogatepass")) > limit:
        raise _too_big(len(text), text.count("\n", 0, limit) + 1, file, limit)
    return text.removeprefix("\ufeff")


def read_yaml(text: str | bytes, file: Path | None = None, limit: int = MAX_BYTES) -> Any:
    """Any YAML document the project names (rule files), read under the same bounds as a project file."""
    return _compose(_text(text, file, limit), file)[1]


def parse(text: str | bytes, file: Path | None = None) -> LoadedProject:
    """Parse and validate a project file's text. Raises :class:`ConfigError` listing every problem."""
    text = _text(text, file, MAX_BYTES)
    node, data = _compose(text, file)
    index = _line_index(node)
    if not isinstance(data, dict):
        found = _no_space(text, len(text.splitlines()))
        if isinstance(data, str) and found is not None:  # `name:demo` alone is one text, not a mapping
            number, match = found
            key, value = match.group("key"), match.group("value").strip()
            raise ConfigError([Problem("error", "", f"`{key}:{value}` has no space after the colon, so YAML reads it "
                                       "as one text", f"write `{key}: {value}`", file, number,
                                       column=len(match.group("indent")) + len(key) + 2)])
        raise ConfigError(
            [Problem("error", "", "a project file must be a mapping of keys to values", "start with `name: my-project`", file, 1)]
        )
    try:
        project = Project.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(messages.problems(exc.errors(), index, file, line_for)) from None
    return LoadedProject(project, file, index)


def projects_dir() -> Path:
    """Where named projects live: ``$FMCLUSTER_PROJECTS_DIR`` or ``./projects``."""
    return Path(os.environ.get("FMCLUSTER_PROJECTS_DIR", "projects"))


DEFAULT = "default"
"""The embedded default project's name: ``projects/default.yaml``, shipped inside the package too."""


def shipped_default() -> Path:
    """The default project fmcluster ships: ``fmcluster/projects/default.yaml`` in a wheel (pyproject.toml's
    package-data), ``projects/default.yaml`` of the checkout in an editable install."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "projects" / "default.yaml", package.parent / "projects" / "default.yaml"):
        if candidate.is_file():
            return candidate
    return package / "projects" / "default.yaml"


def resolve(ref: str) -> Path:
    """A project reference is a name under ``projects/`` or a path to a YAML file; ``default`` falls back to
    the shipped default project when the projects folder has none (a fresh folder)."""
    candidate = Path(ref)
    if candidate.suffix in (".yaml", ".yml") or os.sep in ref:
        return candidate
    path = projects_dir() / f"{ref}.yaml"
    if ref == DEFAULT and not path.exists():
        return shipped_default()
    return path


def load(ref: str | Path) -> LoadedProject:
    """Read (at most :data:`MAX_BYTES`), parse and validate a project by name or path."""
    path = resolve(str(ref))
    shown = Path(str(path)[:120] + "...") if len(str(path)) > 120 else path
    try:
        if not path.is_file():
            known = sorted(p.stem for p in projects_dir().glob("*.yaml"))
            near = difflib.get_close_matches(path.stem, known, n=1, cutoff=0.6)
            hint = ((f"did you mean {near[0]!r}? " if near else "") + f"known projects: {', '.join(known)}"
                    if known else f"create one with `fmcluster new {path.stem}`")
            raise ConfigError([Problem("error", "", f"no project file at {shown}", hint, shown, None)])
        with path.open("rb") as stream:
            data = stream.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError([Problem("error", "", f"cannot read {shown}: {exc.strerror or exc}",
                                   "give the name of a project under projects/ or the path of its YAML file",
                                   shown, None)]) from None
    loaded = parse(data, path)
    # A file given by path (an example) may be named freely; a project under projects/ must agree.
    if path.stem != loaded.project.name and path.parent.resolve() == projects_dir().resolve():
        raise ConfigError(
            [Problem("error", "name", f"name {loaded.project.name!r} differs from the file name {path.stem!r}",
                     f"rename the file to {loaded.project.name}.yaml or set name: {path.stem}", path, loaded.line(("name",)))]
        )
    return loaded
