"""Replay what a live Prometheus received through ``promtool test rules``, over windows a test cannot wait.

An alert with ``for: 10m`` cannot fire within a test's time. The loopback test (tests/observability_e2e)
therefore records the series a real node_exporter, a fake dcgm-exporter and the rendered agent wrote
into the receiver -- once healthy, once after each injected fault -- and hands them to the real
``promtool`` as input series: the healthy values until the fault, the fault's values after it. Series
that the receiver no longer answers with after the fault end with a staleness marker (what a scrape
that lost them writes), or stop without one (``dead``: an agent that died sends nothing more).

Nothing here invents a label or a value: every series comes from the receiver's HTTP API.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

INTERVAL_S = 15
"""Sample spacing of the replay (a production scrape interval)."""

Labels = tuple[tuple[str, str], ...]
Snapshot = dict[Labels, str]
"""Label set (sorted, ``__name__`` included) -> the value as Prometheus' API wrote it."""


def snapshot(result: Iterable[Mapping[str, Any]], skip_names: Iterable[str]) -> Snapshot:
    """An instant query's ``data.result`` as a snapshot, leaving out the series named in ``skip_names``
    (alert state and recording-rule outputs: promtool evaluates those itself)."""
    skip = set(skip_names)
    out: Snapshot = {}
    for sample in result:
        metric = sample["metric"]
        if metric["__name__"] in skip:
            continue
        out[tuple(sorted(metric.items()))] = sample["value"][1]
    return out


def _series(labels: Labels) -> str:
    return "{" + ", ".join(f"{name}={json.dumps(value)}" for name, value in labels) + "}"


def _repeat(value: str, samples: int) -> list[str]:
    """``samples`` samples of ``value`` in promtool's notation."""
    number = float(value)
    if math.isfinite(number):
        return [f"{value}+0x{samples - 1}"] if samples > 1 else [value]
    return ["NaN" if math.isnan(number) else "+Inf" if number > 0 else "-Inf"] * samples


@dataclass(frozen=True)
class Scenario:
    """After the fault, ``after`` (None: the node died and nothing arrives any more)."""

    name: str
    after: Snapshot | None
    checks: list[dict[str, Any]]
    """promtool ``promql_expr_test`` entries."""


def input_series(before: Snapshot, after: Snapshot | None, fault_at_s: int, end_s: int) -> list[dict[str, str]]:
    healthy = fault_at_s // INTERVAL_S + 1
    rest = (end_s - fault_at_s) // INTERVAL_S
    entries = []
    for labels in sorted(set(before) | set(after or {})):
        values: list[str] = _repeat(before[labels], healthy) if labels in before else ["_"] * healthy
        if after is None:
            pass  # a dead agent writes nothing, not even staleness markers
        elif labels in after:
            values += _repeat(after[labels], rest)
        else:
            values.append("stale")
        entries.append({"series": _series(labels), "values": " ".join(values)})
    return entries


def run(promtool: str, rules_file: Path, workdir: Path, before: Snapshot, scenarios: list[Scenario],
        fault_at_s: int, end_s: int) -> subprocess.CompletedProcess[str]:
    """Write one promtool test per scenario next to a copy of ``rules_file`` and run them."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "rules.yml").write_text(rules_file.read_text())
    tests = [{"name": s.name, "interval": f"{INTERVAL_S}s",
              "input_series": input_series(before, s.after, fault_at_s, end_s),
              "promql_expr_test": s.checks} for s in scenarios]
    suite = {"rule_files": ["rules.yml"], "evaluation_interval": f"{INTERVAL_S}s", "tests": tests}
    (workdir / "replay.test.yml").write_text(yaml.safe_dump(suite, sort_keys=False, width=400))
    return subprocess.run([promtool, "test", "rules", "replay.test.yml"], cwd=workdir, capture_output=True,
                          text=True, timeout=300, check=False)
