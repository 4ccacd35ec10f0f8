"""Problems found in a project file, reported all at once as ``file:line  path  message (hint: ...)``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Level = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong (or questionable) in a project file."""

    level: Level
    path: str
    """Dotted field path, e.g. ``compute_groups[0].capacity.reservation_id``."""
    message: str
    hint: str | None = None
    file: Path | None = None
    line: int | None = None
    check: str | None = None
    """Name of the check that found it (structure errors have none)."""
    column: int | None = None
    """The column (from 1) where the YAML parser gives one."""

    def format(self) -> str:
        where = str(self.file) if self.file else "<config>"
        if self.line is not None:
            where += f":{self.line}" + (f":{self.column}" if self.column is not None else "")
        text = f"{where}  {self.path or '(top level)'}  {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        if self.check:
            text += f" [{self.check}]"
        return text

    def as_dict(self) -> dict[str, object]:
        return {
            "level": self.level,
            "file": str(self.file) if self.file else None,
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "message": self.message,
            "hint": self.hint,
            "check": self.check,
        }


class ConfigError(Exception):
    """A project file that cannot be used. Carries every problem found, not just the first."""

    exit_code = 2

    def __init__(self, problems: list[Problem]):
        self.problems = [p for p in problems if p.level == "error"]
        self.warnings = [p for p in problems if p.level == "warning"]
        super().__init__(self.report())

    def report(self) -> str:
        lines = [p.format() for p in self.problems]
        n = len(self.problems)
        lines.append(f"{n} error{'s' if n != 1 else ''} in project file; nothing was synthesized.")
        return "\n".join(lines)
