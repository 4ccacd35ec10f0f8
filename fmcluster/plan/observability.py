"""What ``NAME-observability`` builds: the metrics workspace, its alert rules, Grafana."""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.config.observability import ObservabilityConfig


@dataclass(frozen=True)
class ObservabilityPlan:
    project: str
    spec: ObservabilityConfig
    """The ``observability:`` section as validated."""
    fsx: bool
    """The project mounts FSx for Lustre (without it, the FSx alerts would fire on every node)."""

    @property
    def enabled(self) -> bool:
        return self.spec.prometheus
