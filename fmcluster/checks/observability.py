"""Observability checks: the project's own alert-rule files exist and are rule files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import yaml

from fmcluster.checks.registry import Finding, check
from fmcluster.config.loader import LoadedProject
from fmcluster.plan import Plan


@check("extra-rule-files", "error")
def _extra_rules(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    base = loaded.file.parent if loaded.file else Path(".")
    for i, name in enumerate(loaded.project.observability.extra_rule_files):
        path = base / name
        loc = ("observability", "extra_rule_files", i)
        if not path.is_file():
            yield Finding(loc, f"rule file {path} does not exist",
                           "paths are relative to the project file")
            continue
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            yield Finding(loc, f"{path} is not valid YAML ({exc})",
                           "check it with `promtool check rules FILE`")
            continue
        if not isinstance(data, dict) or not isinstance(data.get("groups"), list):
            yield Finding(loc, f"{path} is not a Prometheus rule file",
                           "a rule file is a mapping with a `groups:` list; check it with `promtool check rules FILE`")

