"""The collector: a Prometheus agent config for the head node, rendered from a typed context.

The agent discovers the project's instances with EC2 service discovery (tag ``fmcluster:project``
= project name, running instances only), scrapes dcgm-exporter and the EFA exporter on the GPU
instance types of the project, node_exporter on every instance and the Slurm exporter on the
head node itself, labels every series with ``node`` (short private DNS name = hostname),
``instance_id``, ``instance_type`` and ``availability_zone_id``, and remote-writes with SigV4 to
the project's Amazon Managed Prometheus workspace.

Per node (``discovery="local"``, what the bootstrap installs on every node of every orchestrator):
each node runs its own agent that scrapes its own exporters on localhost and remote-writes for
itself, so no discovery, no cross-account view and no single collector to lose. The node names
itself through external labels expanded from the unit's environment (``node``, ``instance_id``,
``instance_type``); a dead node is seen by the heartbeat rule on ``up`` (its series stop arriving).
See :func:`render_node_agent_config`.

HyperPod nodes run in a service account, where EC2 discovery cannot see them: there use
``discovery="file"`` and have the controller write a file_sd JSON list of its nodes
(``[{"targets": ["10.1.2.3"], "labels": {"node": "ip-10-1-2-3", "instance_type": "ml.p5.48xlarge"}}]``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import jinja2

from fmcluster import templates
from fmcluster.facts import PROJECT_TAG
from fmcluster.generate import metrics
from fmcluster.plan import ClusterPlan

TEMPLATE = "prometheus-agent.yml.j2"
PLACEHOLDER_WORKSPACE_ID = "ws-00000000-0000-0000-0000-000000000000"
"""Stands in for the workspace ID when the config is rendered offline (no deployed workspace yet)."""
DEFAULT_FILE_SD_PATH = "/etc/prometheus/file_sd/nodes.json"
NODE_REMOTE_WRITE_MARKER = "https://fmcluster.invalid/remote-write-url"
"""Stands in for the remote-write URL in a node's agent config; the exporters step puts the real one in
(``FMC_METRICS_REMOTE_WRITE_URL`` at boot: the workspace is not known when the bundle is rendered)."""
_DURATION = re.compile(r"^([0-9]+)([smh])$")


def placeholder_endpoint(region: str) -> str:
    """A well-formed workspace endpoint with :data:`PLACEHOLDER_WORKSPACE_ID`, for offline rendering."""
    return f"https://aps-workspaces.{region}.amazonaws.com/workspaces/{PLACEHOLDER_WORKSPACE_ID}/"


@dataclass(frozen=True)
class ScrapeJob:
    """One scrape job of the rendered config."""

    name: str
    port: int
    instance_types: tuple[str, ...] = ()
    """Only these instance types (EC2 filter / file_sd keep); empty = every project instance."""
    static_target: str | None = None
    """Scrape this address instead of discovering targets (the head node's own exporters)."""
    honor_labels: bool = False


@dataclass(frozen=True)
class CollectorContext:
    """Everything the template needs; build it with :meth:`from_project` or by hand."""

    project: str
    region: str
    gpu_instance_types: tuple[str, ...]
    prometheus_endpoint: str | None = None
    """The workspace's ``PrometheusEndpoint`` (ends with ``/``); ``None`` renders a placeholder."""
    scrape_interval: str = "30s"
    slurm: bool = True
    discovery: Literal["ec2", "file", "local"] = "ec2"
    file_sd_path: str = DEFAULT_FILE_SD_PATH
    jobs: tuple[ScrapeJob, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not _DURATION.match(self.scrape_interval):
            raise ValueError(f"scrape_interval {self.scrape_interval!r} is not a duration like 30s or 1m")
        if not self.gpu_instance_types and self.discovery != "local":
            raise ValueError("gpu_instance_types is empty: the collector needs the GPU instance types to scrape")
        if self.prometheus_endpoint is not None and not self.prometheus_endpoint.startswith("https://"):
            raise ValueError(f"prometheus_endpoint must be an https URL, got {self.prometheus_endpoint!r}")

    @classmethod
    def from_plan(
        cls,
        cluster: ClusterPlan,
        *,
        region: str | None = None,
        prometheus_endpoint: str | None = None,
        scrape_interval: str = "30s",
        discovery: Literal["ec2", "file"] = "ec2",
    ) -> CollectorContext:
        """The context for a planned cluster: its project, region and compute groups' instance types."""
        chosen_region = region or cluster.region
        if not chosen_region:
            raise ValueError(f"project {cluster.project!r} sets no region; pass region=")
        types = tuple(sorted({group.instance_type for group in cluster.groups}))
        return cls(
            project=cluster.project,
            region=chosen_region,
            gpu_instance_types=types,
            prometheus_endpoint=prometheus_endpoint,
            scrape_interval=scrape_interval,
            slurm=cluster.orchestrator != "none",
            discovery=discovery,
        )

    @property
    def remote_write_url(self) -> str:
        if self.discovery == "local" and self.prometheus_endpoint is None:
            return NODE_REMOTE_WRITE_MARKER
        endpoint = self.prometheus_endpoint or placeholder_endpoint(self.region)
        return endpoint.rstrip("/") + "/api/v1/remote_write"

    @property
    def scrape_timeout(self) -> str:
        """Scrape timeout: the interval, capped at 20 s (Prometheus needs timeout <= interval)."""
        number, unit = _DURATION.match(self.scrape_interval).groups()  # type: ignore[union-attr]
        seconds = int(number) * {"s": 1, "m": 60, "h": 3600}[unit]
        return f"{min(seconds, 20)}s"

    def scrape_jobs(self) -> tuple[ScrapeJob, ...]:
        if self.jobs:
            return self.jobs
        gpu = self.gpu_instance_types
        if self.discovery == "local":  # gpu_instance_types non-empty = this node has GPUs
            return tuple(ScrapeJob(job, port) for job, port in metrics.scrape_targets(gpu=bool(gpu)))
        gpu_jobs = dict(metrics.scrape_targets(gpu=True))
        every_node = dict(metrics.scrape_targets(gpu=False))
        jobs = [ScrapeJob(job, port, instance_types=() if job in every_node else gpu)
                for job, port in gpu_jobs.items()]
        return tuple(jobs)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates.OBSERVABILITY)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.filters["regex_escape"] = re.escape
    return env


def render_collector_config(context: CollectorContext) -> str:
    """The Prometheus agent config (YAML text) for ``context``."""
    template = _environment().get_template(TEMPLATE)
    return template.render(
        project=context.project,
        project_tag_key=PROJECT_TAG,
        region=None if context.discovery == "local" else context.region,
        scrape_interval=context.scrape_interval,
        scrape_timeout=context.scrape_timeout,
        jobs=context.scrape_jobs(),
        discovery=context.discovery,
        file_sd_path=context.file_sd_path,
        remote_write_url=context.remote_write_url,
    )


def render_node_agent_config(project: str, *, gpu: bool, scrape_interval: str = "30s") -> str:
    """The agent config one node runs: its own exporters (GPU ones when ``gpu``), remote-written for itself.

    The remote-write URL is :data:`NODE_REMOTE_WRITE_MARKER` and the SigV4 region comes from the
    unit's ``AWS_REGION``: both are known only at boot.
    """
    return render_collector_config(CollectorContext(
        project=project, region="", gpu_instance_types=("this-node",) if gpu else (),
        scrape_interval=scrape_interval, slurm=False, discovery="local"))
