"""Find early-exit readers downstream of a writer in shell pipelines.

Under `set -o pipefail`, a reader that stops reading before its writer has finished (`head`, `grep -q`, `grep -m`,
an awk program that `exit`s on a match, `sed …q`) makes the writer die of SIGPIPE once the pipe's buffer is full:
the pipeline returns 141 and the step fails, depending on timing. This scanner reads shell source (a Jinja
template, a rendered script, or Python holding shell text) and returns each such reader with its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A single `|` (not `||`, not `|&` is treated like `|`), then optional blanks and a line continuation.
_PIPE = re.compile(r"(?<![|])\|(?![|])&?[ \t]*(?:\\\n[ \t]*)?")
_GREP = re.compile(r"grep((?:[ \t]+-[^ \t\n]+)*)")
_SED = re.compile(r"sed((?:[ \t]+-[a-zA-Z]+)*)[ \t]+(?:'([^']*)'|\"([^\"]*)\"|([^ \t\n|;)]+))")
_END_BLOCK = re.compile(r"\bEND\s*\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}")


@dataclass(frozen=True)
class Finding:
    line: int
    reader: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reader}"


def _awk_program(rest: str) -> str | None:
    """The program text of `awk [options] 'PROGRAM'` at the start of REST (options' quoted values are skipped)."""
    i = 3
    while i < len(rest):
        c = rest[i]
        if c == "'":
            if rest[i - 1] in " \t\n":  # a quoted word of its own: the program
                end = rest.find("'", i + 1)
                return rest[i + 1:end] if end > 0 else None
            end = rest.find("'", i + 1)  # -F'|' and the like: a quoted option value
            if end < 0:
                return None
            i = end + 1
            continue
        if c in "|;\n" and rest[i - 1] != "\\":
            return None
        i += 1
    return None


def _reader(rest: str) -> str | None:
    """The early-exit reader REST starts with, or None."""
    if re.match(r"head\b", rest):
        return rest.split("\n", 1)[0].strip()
    m = _GREP.match(rest)
    if m and re.match(r"grep\b", rest):
        opts = m.group(1).split()
        for o in opts:
            if o in ("--quiet", "--silent") or o.startswith("--max-count"):
                return rest[: m.end()].strip()
            if re.fullmatch(r"-[a-zA-Z][a-zA-Z0-9]*", o) and ("q" in o or "m" in o):  # -q, -qs, -m1, -Fm 1
                return rest[: m.end()].strip()
        return None
    if re.match(r"awk\b", rest):
        program = _awk_program(rest)
        if program is not None:
            outside_end = _END_BLOCK.sub("", program)
            if re.search(r"\bexit\b", outside_end):
                return "awk '" + " ".join(program.split()) + "'"
        return None
    m = _SED.match(rest)
    if m:
        script = next(g for g in m.groups()[1:] if g is not None)
        if re.search(r"(?:^|[;\s\d$/}])q(?:\s|;|$|\d)", script):
            return rest[: m.end()].strip()
    return None


def early_exit_readers(text: str) -> list[Finding]:
    """Every early-exit reader placed after a pipe in TEXT."""
    found = []
    for m in _PIPE.finditer(text):
        rest = text[m.end():]
        reader = _reader(rest)
        if reader:
            found.append(Finding(text.count("\n", 0, m.start()) + 1, reader))
    return found
