"""The one place that names our exporters: their ports, scrape jobs and the metrics they emit.

DCGM metrics come from the counters file we ship (``templates/observability/dcgm-counters.csv``);
the other exporters' metrics are declared here. Dashboards and rules may only query metrics
listed by :func:`fmcluster.generate.rules.known_metrics` (a test enforces it), so a renamed metric fails a test, not a
dashboard at 3 a.m.

Sources for the names:
- node_exporter 1.9 (``node_*`` from its filesystem, uname, cpu, memory, network collectors;
  ``fstype="lustre"`` series come from the filesystem collector, which includes Lustre by default);
- the EFA node exporter of awsome-distributed-training (HyperPod observability; a node_exporter
  fork with an ``amazonefa`` collector: ``node_amazonefa_<hw counter>{device, port}``, counters
  without a ``_total`` suffix; ``retrans_*``, ``unresponsive_remote_events`` and
  ``impaired_remote_conn_events`` need EFA driver 2.x hardware counters);
- vpenso/prometheus-slurm-exporter (``slurm_nodes_*`` and ``slurm_queue_*`` gauges, and
  ``slurm_node_*{node, status}`` per node, ``status`` being sinfo's long state);
- Prometheus itself (``up``) and CloudWatch's ``AWS/FSx`` namespace for FSx throughput.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache

from fmcluster import templates

DCGM_COUNTERS_CSV = templates.DCGM_COUNTERS


@dataclass(frozen=True)
class Exporter:
    """An exporter the collector scrapes."""

    job: str
    """The scrape job name (the ``job`` label)."""
    port: int
    where: str
    """``gpu-nodes``, ``all-nodes`` or ``head-node``."""


DCGM = Exporter(job="dcgm-exporter", port=9400, where="gpu-nodes")
NODE = Exporter(job="node-exporter", port=9100, where="all-nodes")
EFA = Exporter(job="efa-exporter", port=9109, where="gpu-nodes")
SLURM = Exporter(job="slurm-exporter", port=8080, where="head-node")
"""vpenso/prometheus-slurm-exporter listens on :8080 by default; it runs on the head node only."""

EXPORTERS: tuple[Exporter, ...] = (DCGM, NODE, EFA, SLURM)

NODE_EXPORTER_METRICS: frozenset[str] = frozenset(
    {
        "node_uname_info",
        "node_boot_time_seconds",
        "node_cpu_seconds_total",
        "node_load1",
        "node_memory_MemTotal_bytes",
        "node_memory_MemAvailable_bytes",
        "node_filesystem_size_bytes",
        "node_filesystem_avail_bytes",
        "node_filesystem_free_bytes",
        "node_filesystem_readonly",
        "node_filesystem_device_error",
        "node_network_receive_bytes_total",
        "node_network_transmit_bytes_total",
        "node_disk_read_bytes_total",
        "node_disk_written_bytes_total",
    }
)

EFA_EXPORTER_METRICS: frozenset[str] = frozenset(
    f"node_amazonefa_{counter}"
    for counter in (
        "info",
        "lifespan",
        "tx_bytes",
        "rx_bytes",
        "tx_pkts",
        "rx_pkts",
        "rx_drops",
        "send_bytes",
        "recv_bytes",
        "rdma_read_bytes",
        "rdma_write_bytes",
        "rdma_write_recv_bytes",
        "rdma_read_wr_err",
        "rdma_write_wr_err",
        "retrans_bytes",
        "retrans_pkts",
        "retrans_timeout_events",
        "unresponsive_remote_events",
        "impaired_remote_conn_events",
    )
)

SLURM_EXPORTER_METRICS: frozenset[str] = frozenset(
    {
        "slurm_nodes_alloc",
        "slurm_nodes_comp",
        "slurm_nodes_down",
        "slurm_nodes_drain",
        "slurm_nodes_err",
        "slurm_nodes_fail",
        "slurm_nodes_idle",
        "slurm_nodes_maint",
        "slurm_nodes_mix",
        "slurm_queue_pending",
        "slurm_queue_running",
        "slurm_queue_completing",
        "slurm_queue_failed",
        "slurm_queue_node_fail",
        "slurm_node_cpu_total",
        "slurm_node_gpu_total",
    }
)

PROMETHEUS_METRICS: frozenset[str] = frozenset({"up"})
"""Series Prometheus itself writes for every target."""

CLOUDWATCH_FSX_METRICS: frozenset[str] = frozenset(
    {"DataReadBytes", "DataWriteBytes", "DataReadOperations", "DataWriteOperations", "MetadataOperations",
     "FreeDataStorageCapacity"}
)
"""``AWS/FSx`` CloudWatch metrics (per ``FileSystemId``) the FSx dashboard reads."""


@cache
def dcgm_fields() -> dict[str, str]:
    """DCGM field name -> Prometheus type, from the counters file we ship (``label`` rows included)."""
    fields: dict[str, str] = {}
    with DCGM_COUNTERS_CSV.open(encoding="utf-8") as handle:
        for row in csv.reader(line for line in handle if line.strip() and not line.lstrip().startswith("#")):
            if len(row) != 3:
                raise ValueError(f"{DCGM_COUNTERS_CSV}: want 'FIELD, type, help' rows, got {row!r}")
            name, kind, _help = (part.strip() for part in row)
            if kind not in ("gauge", "counter", "label"):
                raise ValueError(f"{DCGM_COUNTERS_CSV}: {name}: unknown type {kind!r}")
            if name in fields:
                raise ValueError(f"{DCGM_COUNTERS_CSV}: {name} listed twice")
            fields[name] = kind
    return fields


def dcgm_metrics() -> frozenset[str]:
    """Metric names dcgm-exporter emits with our counters file (``label`` rows are labels, not metrics)."""
    return frozenset(name for name, kind in dcgm_fields().items() if kind != "label")


def exporter_metrics() -> frozenset[str]:
    """Every metric our exporters (and Prometheus itself) emit."""
    return dcgm_metrics() | NODE_EXPORTER_METRICS | EFA_EXPORTER_METRICS | SLURM_EXPORTER_METRICS | PROMETHEUS_METRICS

