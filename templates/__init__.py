"""Templates and data files, installed as ``fmcluster.templates`` (a package so that
``importlib.resources`` finds them in an editable install and in a wheel alike).

- ``bootstrap/``: the node bootstrap's Jinja templates (one per step, partials, entry, dispatcher);
- ``observability/``: alert rules, the Prometheus agent configuration, the DCGM counters file;
- ``hyperpod_chart_stub/``: a small Helm chart with the HyperPod chart's values keys (CI synthesizes with it).
"""

from importlib import resources
from pathlib import Path

ROOT = Path(str(resources.files(__name__)))
BOOTSTRAP = ROOT / "bootstrap"
OBSERVABILITY = ROOT / "observability"
HYPERPOD_CHART_STUB = ROOT / "hyperpod_chart_stub"
DCGM_COUNTERS = OBSERVABILITY / "dcgm-counters.csv"
"""The DCGM fields dcgm-exporter collects; the bootstrap installs it, the metric table reads it."""
