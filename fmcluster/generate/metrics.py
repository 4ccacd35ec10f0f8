"""THE exporter table: every exporter a node runs, where it comes from, where it listens, and what it emits.

Data only. The bootstrap installs what this table lists (``templates/bootstrap/exporters.sh.j2``),
the collector scrapes exactly these ports (``fmcluster.bootstrap.collector``), and a test
(``tests/generate/test_exporter_table.py``) parses every PromQL expression of every rule,
recording rule and dashboard panel and proves each metric it reads is produced by an exporter
below on the nodes the query concerns.

Sources for the names:
- node_exporter 1.9 (``node_*`` from its filesystem, uname, cpu, memory, network collectors;
  ``fstype="lustre"`` series come from the filesystem collector, which includes Lustre by default);
- EFA hardware counters: our own script (``templates/bootstrap/partials/efa_counters.sh.j2``) reads
  ``/sys/class/infiniband/*/ports/*/hw_counters/*`` and writes ``node_amazonefa_<counter>{device,
  port}`` for node_exporter's textfile collector -- the names of the ``amazonefa`` collector of the
  EFA node exporter of awsome-distributed-training, so dashboards written for that exporter read
  ours. ``retrans_*``, ``unresponsive_remote_events`` and ``impaired_remote_conn_events`` exist only
  with EFA driver 2.x hardware counters. They arrive through node_exporter's port (no port of their own).
- dcgm-exporter: the fields of the counters file we ship (``templates/observability/dcgm-counters.csv``);
- Prometheus itself writes ``up`` for every target it scrapes;
- Slurm, on the node that runs slurmctld or, on PCS, the login nodes (``FlavourTraits.slurm_metrics_role``): our
  own script (``templates/bootstrap/partials/slurm_metrics.sh.j2``) over ``squeue`` and ``sinfo`` writes, for node_exporter's
  textfile collector, the names and labels of SckyzO/slurm_exporter 1.8.4 (tag commit
  b535433eb2f290f3e7a6c4ce953892a172619861, ``internal/collector/{queue,nodes,node_drain,users,gpus,partitions}.go``
  with ``--no-collector.nodes.feature-set``: ``slurm_nodes_*`` carry only ``partition``), so dashboards written for
  that exporter read ours; ``fmcluster_slurm_*`` are the script's own health. They arrive through node_exporter's
  port (job ``node-exporter``). Slurm 25.11's own ``/metrics`` is not used: it answers 401 while any
  ``PrivateData`` is set (ParallelCluster sets ``PrivateData=cloud``) and has no GPU or pending-reason metrics
  (``docs/dev/slurm-metrics-notes.md``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from fmcluster import templates
from fmcluster.flavours import FLAVOURS

DCGM_COUNTERS_CSV = templates.DCGM_COUNTERS

ALL_ROLES: tuple[str, ...] = ("head", "login", "compute")
"""The bootstrap's node roles (``fmcluster.bootstrap.context.Role``)."""


@dataclass(frozen=True)
class Exporter:
    """One row of the table."""

    name: str
    source: str
    """Where the bootstrap gets it and which ``bootstrap/versions.yaml`` key pins its version."""
    port: int
    """The port its metrics are scraped on."""
    job: str
    """The scrape job (the ``job`` label of its series)."""
    roles: tuple[str, ...]
    """Node roles that run it."""
    gpu_only: bool
    """Only on nodes with GPUs (the compute role of GPU groups)."""
    metrics: frozenset[str]
    slurm_only: bool = False
    """Only on the node that collects Slurm's metrics (``FlavourTraits.slurm_metrics_role``)."""


Dimension = Literal["node", "cpu", "mount", "netdev", "disk", "efa_device", "gpu", "target",
                    "cluster", "partition", "slurm_user", "slurm_pending", "slurm_problem_node", "slurm_command"]

NODE_EXPORTER_DIMENSIONS: dict[str, Dimension] = {
    "node_uname_info": "node",
    "node_boot_time_seconds": "node",
    "node_load1": "node",
    "node_memory_MemTotal_bytes": "node",
    "node_memory_MemAvailable_bytes": "node",
    "node_cpu_seconds_total": "cpu",
    "node_filesystem_size_bytes": "mount",
    "node_filesystem_avail_bytes": "mount",
    "node_filesystem_free_bytes": "mount",
    "node_filesystem_readonly": "mount",
    "node_filesystem_device_error": "mount",
    "node_network_receive_bytes_total": "netdev",
    "node_network_transmit_bytes_total": "netdev",
    "node_disk_read_bytes_total": "disk",
    "node_disk_written_bytes_total": "disk",
    # our own, through node_exporter's textfile collector: monitoring components the exporters step could not
    # install (templates/bootstrap/exporters.sh.j2; alert MonitoringComponentMissing)
    "fmcluster_monitoring_missing": "node",
}
"""What each node_exporter metric of the table has one series per."""

NODE_EXPORTER_METRICS: frozenset[str] = frozenset(NODE_EXPORTER_DIMENSIONS)

EFA_COUNTERS: tuple[str, ...] = (
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
"""EFA ``hw_counters`` file names the rules and dashboards read (the script publishes every counter file it finds)."""

EFA_METRIC_PREFIX = "node_amazonefa_"
EFA_EXPORTER_METRICS: frozenset[str] = frozenset(EFA_METRIC_PREFIX + counter for counter in EFA_COUNTERS)

PROMETHEUS_METRICS: frozenset[str] = frozenset({"up"})
"""Series Prometheus itself writes for every target."""

CLOUDWATCH_FSX_METRICS: frozenset[str] = frozenset(
    {"DataReadBytes", "DataWriteBytes", "DataReadOperations", "DataWriteOperations", "MetadataOperations",
     "FreeDataStorageCapacity"}
)
"""``AWS/FSx`` CloudWatch metrics (per ``FileSystemId``) the FSx dashboard reads (not Prometheus)."""


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


SLURM_METRICS_DIMENSIONS: dict[str, Dimension] = {
    # squeue -h -a -r -O Partition,State,UserName,tres-alloc,Reason; per-user series only while the user has jobs
    "slurm_jobs_pending": "cluster",
    "slurm_jobs_running": "cluster",
    "slurm_queue_pending": "slurm_pending",        # {user, partition, reason}
    "slurm_queue_running": "slurm_user",           # {user, partition}
    # sinfo -h -a -N -O NodeList,PartitionName,StateLong,Gres,GresUsed,TimeStamp,Reason; {partition}
    "slurm_nodes_alloc": "partition",
    "slurm_nodes_mix": "partition",
    "slurm_nodes_idle": "partition",
    "slurm_nodes_down": "partition",
    "slurm_nodes_drain": "partition",              # sinfo states drained and draining (^drain)
    "slurm_nodes_fail": "partition",
    "slurm_nodes_total": "cluster",                # each node once
    # only nodes down or drained with a reason
    "slurm_node_drain_reason_info": "slurm_problem_node",   # {node, reason, since}
    # per user: GPUs from tres-alloc's gres/gpu
    "slurm_user_gpus_running": "slurm_user",       # {user}
    "slurm_user_jobs_pending": "slurm_user",
    "slurm_user_jobs_running": "slurm_user",
    # sinfo Gres / GresUsed, each node once
    "slurm_gpus_alloc": "cluster",
    "slurm_gpus_idle": "cluster",
    "slurm_gpus_total": "cluster",
    # {partition}
    "slurm_partition_jobs_pending": "partition",
    "slurm_partition_gpus_allocated": "partition",
    "slurm_partition_gpus_idle": "partition",
    # the script's own health: {command}, and when it last wrote
    "fmcluster_slurm_command_success": "slurm_command",
    "fmcluster_slurm_metrics_timestamp_seconds": "cluster",
}
"""The Slurm metrics script's metrics, and what each has one series per."""

SLURM_METRICS: frozenset[str] = frozenset(SLURM_METRICS_DIMENSIONS)

SLURM_COMMANDS: tuple[str, ...] = ("squeue", "sinfo")
"""The Slurm commands the script runs (``fmcluster_slurm_command_success`` has one series each)."""


def dcgm_metrics() -> frozenset[str]:
    """Metric names dcgm-exporter emits with our counters file (``label`` rows are labels, not metrics)."""
    return frozenset(name for name, kind in dcgm_fields().items() if kind != "label")


NODE = Exporter(
    name="node_exporter",
    source="release tarball from github.com/prometheus/node_exporter, sha256 from its sha256sums.txt "
           "(versions.yaml node_exporter)",
    port=9100, job="node-exporter", roles=ALL_ROLES, gpu_only=False, metrics=NODE_EXPORTER_METRICS,
)
EFA = Exporter(
    name="efa-counters",
    source="bundle file files/fmcluster-efa-counters (our script; node_exporter's textfile collector serves it)",
    port=NODE.port, job=NODE.job, roles=("compute",), gpu_only=True, metrics=EFA_EXPORTER_METRICS,
)
DCGM = Exporter(
    name="dcgm-exporter",
    source="NVIDIA CUDA repository package datacenter-gpu-manager-exporter (signed repository; "
           "versions.yaml dcgm_exporter)",
    port=9400, job="dcgm-exporter", roles=("compute",), gpu_only=True, metrics=dcgm_metrics(),
)
SLURM = Exporter(
    name="slurm-metrics",
    source="bundle file files/fmcluster-slurm-metrics (our script over squeue/sinfo; node_exporter's textfile "
           "collector serves it)",
    port=NODE.port, job=NODE.job, gpu_only=False, metrics=SLURM_METRICS, slurm_only=True,
    roles=tuple(dict.fromkeys(f.slurm_metrics_role for f in FLAVOURS.values() if f.slurm_metrics_role)),
)
PROMETHEUS = Exporter(
    name="prometheus-agent",
    source="the collector itself: Prometheus writes `up` for every target it scrapes",
    port=NODE.port, job=NODE.job, roles=ALL_ROLES, gpu_only=False, metrics=PROMETHEUS_METRICS,
)

EXPORTERS: tuple[Exporter, ...] = (NODE, EFA, DCGM, SLURM, PROMETHEUS)
"""THE table."""


def slurm_metrics_role(cluster: Any) -> str | None:
    """The role of the nodes of ``cluster`` (a :class:`fmcluster.plan.ClusterPlan`) that run the Slurm metrics
    script (its flavour's ``slurm_metrics_role``): ParallelCluster's head node, HyperPod's controller, PCS's login
    nodes (when it has some); None where none does (launch templates only, PCS without login nodes)."""
    role = FLAVOURS[cluster.driver.flavour].slurm_metrics_role
    if not cluster.driver.slurm or role is None or (role == "login" and not cluster.driver.has_login(cluster)):
        return None
    return role


def runs_slurm_metrics(cluster: Any) -> bool:
    """A node of ``cluster`` runs the Slurm metrics script (:func:`slurm_metrics_role`)."""
    return slurm_metrics_role(cluster) is not None


def scrape_targets(*, gpu: bool, slurm: bool = False) -> tuple[tuple[str, int], ...]:
    """The distinct (job, port) pairs a node (with or without GPUs; collecting Slurm's metrics or not) is scraped on,
    in table order."""
    seen: dict[tuple[str, int], None] = {}
    for exporter in EXPORTERS:
        if exporter is PROMETHEUS or (exporter.gpu_only and not gpu) or (exporter.slurm_only and not slurm):
            continue
        seen.setdefault((exporter.job, exporter.port), None)
    return tuple(seen)


def produced(*, gpu: bool | None = None, slurm: bool | None = None) -> frozenset[str]:
    """Metrics the table's exporters emit: on GPU nodes (``gpu=True``), on every node (``False``), or anywhere
    (``None``); with ``slurm=False`` without the Slurm metrics (``True``: with them, as on the node collecting them)."""
    return frozenset(
        name for e in EXPORTERS
        if (gpu is None or gpu or not e.gpu_only) and (slurm is None or slurm or not e.slurm_only)
        for name in e.metrics
    )


# --- series per node ------------------------------------------------------------------------------
# The agent keeps only the table's metrics (``metric_relabel_configs`` in the rendered agent config),
# so a node's active series are the table's metrics times what each is counted over.


CPU_MODES = 8
"""``node_cpu_seconds_total`` series per vCPU: node_exporter's Linux cpu collector reports the eight
``/proc/stat`` modes user, nice, system, idle, iowait, irq, softirq, steal (guest time is another metric)."""

ASSUMED_MOUNTS = 8
"""Assumption, not a fact: file systems node_exporter reports on a node (root, /boot/efi, /scratch,
/fsx and tmpfs mounts such as /run and /dev/shm). It depends on the image; the estimate says so."""
ASSUMED_NETDEVS = 3
"""Assumption: network devices (lo, the primary ENA, a container bridge); EFA-only interfaces have none."""
ASSUMED_EXTRA_DISKS = 2
"""Assumption: block devices besides the instance-store NVMe drives (the root EBS volume, the RAID0 md device)."""


def dimensions() -> dict[str, Dimension]:
    """Every metric of the table -> what it has one series per."""
    dims: dict[str, Dimension] = dict(NODE_EXPORTER_DIMENSIONS)
    dims.update({name: "efa_device" for name in EFA_EXPORTER_METRICS})
    dims.update({name: "gpu" for name in dcgm_metrics()})
    dims.update(SLURM_METRICS_DIMENSIONS)
    dims["up"] = "target"
    return dims


@dataclass(frozen=True)
class SeriesEstimate:
    """Active series one node sends. ``unknown`` names the dimensions whose size is unconfirmed (not counted)."""

    per_dimension: dict[str, int]
    unknown: tuple[str, ...]

    @property
    def total(self) -> int:
        return sum(self.per_dimension.values())


def node_series(*, gpus: int, efa_devices: int, vcpus: int | None, nvme_drives: int | None,
                slurm_partitions: int | None = None) -> SeriesEstimate:
    """The active series of one node with these facts (``gpus=0``: a node without GPU exporters).

    ``slurm_partitions``: the node runs the Slurm metrics script, and the cluster has this many partitions. Its
    series per user, per (user, partition, pending reason) and per drained node depend on the workload: they are
    reported as unknown, not counted (the queue's distinct users and reasons are bounded by squeue's rows, not by
    the plan).
    """
    gpu = gpus > 0
    slurm = slurm_partitions is not None
    sizes: dict[Dimension, int | None] = {
        "node": 1, "cpu": None if vcpus is None else vcpus * CPU_MODES, "mount": ASSUMED_MOUNTS,
        "netdev": ASSUMED_NETDEVS, "disk": None if nvme_drives is None else nvme_drives + ASSUMED_EXTRA_DISKS,
        "efa_device": efa_devices, "gpu": gpus, "target": len(scrape_targets(gpu=gpu, slurm=slurm)),
        "cluster": 1, "partition": slurm_partitions, "slurm_user": None, "slurm_pending": None,
        "slurm_problem_node": None, "slurm_command": len(SLURM_COMMANDS),
    }
    wanted = produced(gpu=gpu, slurm=slurm)
    counts: dict[str, int] = {}
    unknown: list[str] = []
    for name, dim in sorted(dimensions().items()):
        if name not in wanted:
            continue
        size = sizes[dim]
        if size is None:
            if dim not in unknown:
                unknown.append(dim)
            continue
        counts[dim] = counts.get(dim, 0) + size
    return SeriesEstimate(per_dimension=counts, unknown=tuple(unknown))


def keep_regex(job: str, *, slurm: bool = False) -> str:
    """The agent's keep-list for one scrape job: the table's metrics served on that job's target (the Slurm
    metrics only on the node that collects them, ``slurm``)."""
    names = sorted({name for e in EXPORTERS if e.job == job and e is not PROMETHEUS and (slurm or not e.slurm_only)
                    for name in e.metrics})
    return "|".join(names)
