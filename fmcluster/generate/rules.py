"""Alert rules: the shipped rule files, the catalog-derived recording rules, and the alert manager.

The rule files live in ``templates/observability/rules/`` (Prometheus rule-file format). One
group is generated here instead: ``fmcluster-catalog`` records, for every catalog instance type,
``fmcluster:catalog_gpus_per_instance{instance_type, expected_gpus}`` -- the GPU count from
:mod:`fmcluster.catalog` -- so ``GpuCountBelowCatalog`` compares what DCGM reports with the
catalog without repeating a number in YAML.

The observability stack gives :func:`rules_yaml` to ``AWS::APS::RuleGroupsNamespace`` (``Data``)
and :func:`alertmanager_definition` to the workspace's ``AlertManagerDefinition``.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from fmcluster import catalog, templates

RULES_DIR = templates.OBSERVABILITY / "rules"
CATALOG_GROUP = "fmcluster-catalog"
CATALOG_GPUS_METRIC = "fmcluster:catalog_gpus_per_instance"
FSX_GROUP = "fmcluster-fsx"
SLURM_GROUP = "fmcluster-slurm"
SEVERITIES = ("critical", "warning")


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's C loader where PyYAML was built with it (the same documents, several times faster). The rule file is
dumped by PyYAML's own dumper: libyaml folds long double-quoted scalars at other places, which would change every
deployed rule namespace's text."""


class RuleFileError(ValueError):
    """A rule file that is not a Prometheus rule file."""


def rule_files() -> list[Path]:
    """The shipped rule files, in a stable order."""
    return sorted(RULES_DIR.glob("*.yaml"))


def _read_groups(path: Path) -> list[dict[str, Any]]:
    """The groups of one rule file, as a fresh copy (callers may change it)."""
    stat = path.stat()
    return copy.deepcopy(_parsed_groups(str(path.resolve()), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=64)
def _parsed_groups(path_name: str, _mtime_ns: int, _size: int) -> list[dict[str, Any]]:
    """One parse per file and version per process: every project's synthesis reads the same shipped files."""
    path = Path(path_name)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise RuleFileError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("groups"), list):
        raise RuleFileError(f"{path}: a rule file is a mapping with a `groups:` list")
    for group in data["groups"]:
        if not isinstance(group, dict) or "name" not in group or not isinstance(group.get("rules"), list):
            raise RuleFileError(f"{path}: every group needs a `name` and a `rules` list")
    return data["groups"]


def catalog_rule_group() -> dict[str, Any]:
    """Recording rules stating each catalog instance type's GPU count (labels ``instance_type``, ``expected_gpus``)."""
    return {
        "name": CATALOG_GROUP,
        "rules": [
            {
                "record": CATALOG_GPUS_METRIC,
                "expr": f"vector({entry.gpus})",
                "labels": {"instance_type": name, "expected_gpus": str(entry.gpus)},
            }
            for name, entry in sorted(catalog.CATALOG.items())
        ],
    }


def rule_groups(*, fsx: bool = True, slurm: bool = True, extra_files: Iterable[Path] = ()) -> list[dict[str, Any]]:
    """Every rule group for a project.

    ``fsx=False`` drops the FSx group (a project without FSx would see FsxMountMissing on every
    node). ``slurm=False`` drops the Slurm group, for a project where no node runs our Slurm metrics script
    (:func:`fmcluster.generate.metrics.runs_slurm_metrics`). ``extra_files`` are the project's own rule files,
    appended as they are.
    """
    groups: list[dict[str, Any]] = [catalog_rule_group()]
    for path in rule_files():
        groups.extend(_read_groups(path))
    if not fsx:
        groups = [g for g in groups if g["name"] != FSX_GROUP]
    if not slurm:
        groups = [g for g in groups if g["name"] != SLURM_GROUP]
    for path in extra_files:
        groups.extend(_read_groups(Path(path)))
    names = [g["name"] for g in groups]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise RuleFileError(f"rule group names must be unique; repeated: {', '.join(dupes)}")
    return groups


def rules_yaml(*, fsx: bool = True, slurm: bool = True, extra_files: Sequence[Path] = ()) -> str:
    """One Prometheus rule file holding every group: the ``Data`` of the rule groups namespace."""
    files = tuple((str(Path(p).resolve()), Path(p).stat().st_mtime_ns) for p in extra_files)
    shipped = tuple((str(p), p.stat().st_mtime_ns) for p in rule_files())
    return _rules_yaml(fsx, slurm, files, shipped)


@functools.lru_cache(maxsize=32)
def _rules_yaml(fsx: bool, slurm: bool, files: tuple[tuple[str, int], ...],
                _shipped: tuple[tuple[str, int], ...]) -> str:
    """Most projects share one of four rule files (with or without FSx, Slurm): dumped once per process."""
    groups = rule_groups(fsx=fsx, slurm=slurm, extra_files=[Path(name) for name, _ in files])
    return yaml.dump({"groups": groups}, Dumper=yaml.SafeDumper, sort_keys=False, width=120, allow_unicode=True)


def alert_rules(groups: Iterable[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The alerting rules (not recording rules) of ``groups`` (default: all shipped groups)."""
    groups = rule_groups() if groups is None else groups
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def alert_names() -> list[str]:
    """Names of every shipped alert."""
    return [rule["alert"] for rule in alert_rules()]


def recorded_metrics() -> frozenset[str]:
    """Series names the shipped recording rules write."""
    return frozenset(rule["record"] for group in rule_groups() for rule in group["rules"] if "record" in rule)


def alertmanager_definition(topic_arn: str, region: str) -> str:
    """The workspace's alert manager definition: every alert to one SNS topic, grouped per alert and node.

    ``topic_arn`` and ``region`` may be CDK tokens (they are only placed in the text). Critical
    alerts repeat every 4 hours while firing, warnings every 12.
    """
    sns = {
        "topic_arn": topic_arn,
        "sigv4": {"region": region},
        "subject": '[{{ .CommonLabels.severity }}] {{ .CommonLabels.alertname }}',
        "attributes": {"severity": "{{ .CommonLabels.severity }}"},
    }
    config = {
        "route": {
            "receiver": "sns",
            "group_by": ["alertname", "node"],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "12h",
            "routes": [{"receiver": "sns", "matchers": ['severity="critical"'], "repeat_interval": "4h"}],
        },
        "inhibit_rules": [
            {
                # A node that does not report at all explains its exporters being down.
                "source_matchers": ['alertname="NodeNotReporting"'],
                "target_matchers": ['alertname="ExporterTargetDown"'],
                "equal": ["node"],
            }
        ],
        "receivers": [{"name": "sns", "sns_configs": [sns]}],
    }
    body = yaml.safe_dump(config, sort_keys=False, width=120)
    return "alertmanager_config: |\n" + "".join(f"  {line}\n" for line in body.splitlines())
