"""Templates and data files, installed as ``fmcluster.templates`` (a package so that
``importlib.resources`` finds them in an editable install and in a wheel alike).

- ``bootstrap/``: the node bootstrap's Jinja templates (one per step, partials, entry, dispatcher);
- ``observability/``: alert rules, the Prometheus agent configuration, the DCGM counters file.
"""

from importlib import resources
from pathlib import Path

ROOT = Path(str(resources.files(__name__)))
BOOTSTRAP = ROOT / "bootstrap"
OBSERVABILITY = ROOT / "observability"
DCGM_COUNTERS = OBSERVABILITY / "dcgm-counters.csv"
"""The DCGM fields dcgm-exporter collects; the bootstrap installs it, the metric table reads it."""
