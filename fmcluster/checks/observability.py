"""Observability checks: the project's own alert-rule files lie beside it, exist and are rule files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject, read_yaml
from fmcluster.errors import ConfigError
from fmcluster.plan import Plan

MAX_RULE_FILE_BYTES = 1024 * 1024
"""A rule file larger than this is not a hand-written rule file."""


@check("extra-rule-files", "error")
def _extra_rules(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Each file is inside the project file's directory (links followed), a file, and a Prometheus rule file."""
    base = (loaded.file.parent if loaded.file else Path(".")).resolve()
    for i, name in enumerate(loaded.project.observability.extra_rule_files):
        loc = ("observability", "extra_rule_files", i)
        try:
            path = (base / name).resolve()
            inside = path.is_relative_to(base)
            exists = inside and path.is_file()
        except (OSError, RuntimeError, ValueError):  # too long, a link loop, a NUL in the name
            inside, exists, path = True, False, base / name[:120]
        if not inside:
            yield Finding(loc, f"{name[:120]!r} is outside the project's directory {base}",
                          "copy the rule file next to the project file and name it by a relative path")
            continue
        if not exists:
            yield Finding(loc, f"rule file {path} does not exist", "paths are relative to the project file")
            continue
        try:
            with path.open("rb") as stream:
                data = read_yaml(stream.read(MAX_RULE_FILE_BYTES + 1), path, MAX_RULE_FILE_BYTES)
        except OSError as exc:
            yield Finding(loc, f"cannot read {path}: {exc.strerror or exc}", "check the file's permissions")
            continue
        except ConfigError as exc:
            yield Finding(loc, f"{path} is not a valid YAML file: {exc.problems[0].format()}",
                          "check it with `promtool check rules FILE`")
            continue
        if not isinstance(data, dict) or not isinstance(data.get("groups"), list):
            yield Finding(loc, f"{path} is not a Prometheus rule file",
                           "a rule file is a mapping with a `groups:` list; check it with `promtool check rules FILE`")
