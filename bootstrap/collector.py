"""The per-node Prometheus agent config, rendered into every node bundle.

Each node, of every orchestrator, runs its own agent: it scrapes its own exporters on localhost
(the exporter table, :mod:`fmcluster.generate.metrics`) and remote-writes for itself with SigV4
to the project's Amazon Managed Prometheus workspace. No discovery, no cross-account view, no
single collector to lose. The node names itself through external labels expanded from the
unit's environment (``node``, ``instance_id``, ``instance_type``, read from IMDS at boot); a dead
node is seen by the ``NodeNotReporting`` rule (its series stop arriving).
"""

from __future__ import annotations

import re
from functools import cache

import jinja2

from fmcluster.bootstrap.templating import bytecode_cache

from fmcluster import templates
from fmcluster.generate import metrics

TEMPLATE = "prometheus-agent.yml.j2"
NODE_REMOTE_WRITE_MARKER = "https://fmcluster.invalid/remote-write-url"
"""Stands in for the remote-write URL in a node's agent config; the exporters step puts the real one in
(``FMC_METRICS_REMOTE_WRITE_URL`` at boot: the workspace is not known when the bundle is rendered)."""
_DURATION = re.compile(r"^([0-9]+)([smh])$")


def scrape_timeout(scrape_interval: str) -> str:
    """The interval, capped at 20 s (Prometheus needs timeout <= interval)."""
    match = _DURATION.match(scrape_interval)
    if not match:
        raise ValueError(f"scrape_interval {scrape_interval!r} is not a duration like 30s or 1m")
    number, unit = match.groups()
    return f"{min(int(number) * {'s': 1, 'm': 60, 'h': 3600}[unit], 20)}s"


@cache
def _environment() -> jinja2.Environment:
    """One environment per process: every node bundle of every project renders the same template (compiled once)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates.OBSERVABILITY)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.bytecode_cache = bytecode_cache(env)
    return env


def render_node_agent_config(project: str, *, gpu: bool, slurm: bool = False, scrape_interval: str = "30s") -> str:
    """The agent config one node runs: its own exporters (GPU ones when ``gpu``; with ``slurm``, the node collects
    Slurm's metrics and node_exporter's keep-list also passes them from its textfile collector), remote-written for
    itself.

    The remote-write URL is :data:`NODE_REMOTE_WRITE_MARKER` and the SigV4 region comes from the
    unit's ``AWS_REGION``: both are known only at boot.
    """
    return _environment().get_template(TEMPLATE).render(
        project=project,
        scrape_interval=scrape_interval,
        scrape_timeout=scrape_timeout(scrape_interval),
        targets=[(job, port, metrics.keep_regex(job, slurm=slurm))
                 for job, port in metrics.scrape_targets(gpu=gpu, slurm=slurm)],
        remote_write_url=NODE_REMOTE_WRITE_MARKER,
    )
