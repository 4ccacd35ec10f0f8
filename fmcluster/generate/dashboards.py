"""Grafana dashboards as code (grafana-foundation-sdk), exported as JSON per project.

Five dashboards per project (four where no node collects Slurm's metrics), each with a Prometheus data-source
variable and a ``node`` variable. The variable defaults to the project's Amazon Managed Prometheus data source
(:func:`prometheus_datasource`, which ``fmcluster dashboards push`` creates first, by a fixed UID); another
Prometheus data source can still be picked in the dashboard:

- GPU health: XIDs, ECC, row remapping, thermal throttling, GPUs present vs the catalog;
- GPU utilisation: SM activity (the training-efficiency signal), GPU utilisation, tensor
  activity, memory, power, temperature, NVLink/PCIe traffic;
- EFA: traffic, RDMA throughput, retransmits and errors;
- FSx for Lustre: throughput and capacity from CloudWatch ``AWS/FSx``, fill level per mount
  from node_exporter;
- Slurm: queue depth, pending reasons, nodes down/drained (and why), GPUs allocated per user, from our Slurm metrics
  script on the controller's node or PCS's login nodes (its ``node`` variable does not filter these panels);

Every Prometheus query may only name metrics the exporter table (:mod:`fmcluster.generate.metrics`) produces
(a test walks every panel).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import (
    cloudwatch,
    dashboard,
    prometheus,
    stat,
    table,
    timeseries,
)
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableOption, VariableRefresh

from fmcluster.generate import metrics

PROMETHEUS = DataSourceRef(type_val="prometheus", uid="${datasource}")
CLOUDWATCH = DataSourceRef(type_val="cloudwatch", uid="${cloudwatch}")
NODE = 'node=~"$node"'


@dataclass(frozen=True)
class Query:
    """A Prometheus query and its legend."""

    expr: str
    legend: str = "{{node}}"


def _prom(query: Query, ref: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(query.expr).legend_format(query.legend).ref_id(ref).datasource(PROMETHEUS)


def _series(title: str, queries: Iterable[Query], unit: str = "short", description: str = "",
            width: int = 12) -> timeseries.Panel:
    panel = timeseries.Panel().title(title).unit(unit).datasource(PROMETHEUS).span(width).height(8)
    if description:
        panel = panel.description(description)
    for i, query in enumerate(queries):
        panel = panel.with_target(_prom(query, chr(ord("A") + i)))
    return panel


def _stat(title: str, query: Query, unit: str = "short", description: str = "", width: int = 6) -> stat.Panel:
    panel = stat.Panel().title(title).unit(unit).datasource(PROMETHEUS).span(width).height(4)
    if description:
        panel = panel.description(description)
    return panel.with_target(_prom(query, "A"))


def _table(title: str, query: Query, description: str = "", width: int = 12) -> table.Panel:
    target = _prom(query, "A").instant().format("table")  # type: ignore[arg-type]
    panel = table.Panel().title(title).datasource(PROMETHEUS).span(width).height(8).with_target(target)
    return panel.description(description) if description else panel


def prometheus_datasource_uid(project: str) -> str:
    """The fixed UID of the project's Amazon Managed Prometheus data source (at most 40 characters)."""
    return f"fmc-{project[:32]}-amp"[:40]


def prometheus_datasource_name(project: str) -> str:
    return f"{project} Amazon Managed Prometheus"


def prometheus_datasource(project: str, region: str, workspace_id: str) -> dict[str, Any]:
    """The Grafana data source of the project's Prometheus workspace (Grafana's HTTP API ``/api/datasources``).

    Grafana's own ``prometheus`` type with SigV4: ``sigV4AuthType: ec2_iam_role`` is "Workspace IAM Role" in Amazon
    Managed Grafana (the data source's settings list ``ec2_iam_role`` as the Workspace IAM Role provider), i.e. the
    workspace's CUSTOMER_MANAGED role, which NAME-observability gives the ``aps`` query actions on this workspace. The
    URL is the workspace's query endpoint, to which the data source appends ``api/v1/query`` (Amazon Managed Service
    for Prometheus user guide, "Set up Grafana open source or Grafana Enterprise": ``https://aps-workspaces.REGION.
    amazonaws.com/workspaces/ID``)."""
    return {
        "uid": prometheus_datasource_uid(project),
        "name": prometheus_datasource_name(project),
        "type": "prometheus",
        "access": "proxy",
        "url": f"https://aps-workspaces.{region}.amazonaws.com/workspaces/{workspace_id}/",
        "isDefault": False,
        "jsonData": {"httpMethod": "POST", "sigV4Auth": True, "sigV4AuthType": "ec2_iam_role", "sigV4Region": region},
    }


def _base(project: str, slug: str, title: str) -> dashboard.Dashboard:
    datasource = (
        dashboard.DatasourceVariable("datasource").label("Prometheus").type("prometheus")
        .current(VariableOption(selected=True, text=prometheus_datasource_name(project),
                                value=prometheus_datasource_uid(project)))
    )
    node = (
        dashboard.QueryVariable("node")
        .label("Node")
        .datasource(PROMETHEUS)
        .query({"query": "label_values(up, node)", "refId": "node"})
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .multi(True)
        .include_all(True)
        .all_value(".*")
    )
    return (
        dashboard.Dashboard(f"{project} / {title}")
        .uid(dashboard_uid(project, slug))
        .tags(["fmcluster", project])
        .refresh("1m")
        .time("now-6h", "now")
        .timezone("utc")
        .with_variable(datasource)
        .with_variable(node)
    )


def dashboard_uid(project: str, slug: str) -> str:
    """Stable UID (at most 40 characters, Grafana's limit) of one project dashboard."""
    return f"fmc-{project[:24]}-{slug}"[:40]


def gpu_health(project: str) -> dashboard.Dashboard:
    return (
        _base(project, "gpu-health", "GPU health")
        .with_row(dashboard.Row("Errors"))
        .with_panel(_table(
            "Last XID per GPU (non-zero)",
            Query(f"DCGM_FI_DEV_XID_ERRORS{{{NODE}}} > 0"),
            "48 double-bit ECC, 63 row remap, 64 remap failed, 74 NVLink, 79 off the bus, 94/95 ECC: see the alert runbooks.",
        ))
        .with_panel(_series("XID by GPU", [Query(f"DCGM_FI_DEV_XID_ERRORS{{{NODE}}} > 0", "{{node}} GPU {{gpu}}")]))
        .with_panel(_series("Double-bit ECC errors (volatile)",
                            [Query(f"sum by (node) (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{NODE}}})")]))
        .with_panel(_series("Single-bit ECC errors per hour",
                            [Query(f"sum by (node, gpu) (increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{{{NODE}}}[1h]))",
                                   "{{node}} GPU {{gpu}}")],
                            description="A rate that keeps rising predicts an uncorrectable failure."))
        .with_row(dashboard.Row("Memory rows and temperature"))
        .with_panel(_series("Remapped rows", [
            Query(f"sum by (node) (DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{NODE}}})", "{{node}} uncorrectable"),
            Query(f"sum by (node) (DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{{{NODE}}})", "{{node}} correctable"),
        ]))
        .with_panel(_series("Row remap failed / pending", [
            Query(f"max by (node) (DCGM_FI_DEV_ROW_REMAP_FAILURE{{{NODE}}})", "{{node}} failed"),
            Query(f"max by (node) (DCGM_FI_DEV_ROW_REMAP_PENDING{{{NODE}}})", "{{node}} pending"),
        ]))
        .with_panel(_series("Thermal throttling (violation time per second)",
                            [Query(f"sum by (node) (rate(DCGM_FI_DEV_THERMAL_VIOLATION{{{NODE}}}[5m]))")]))
        .with_panel(_series("GPU temperature (max per node)",
                            [Query(f"max by (node) (DCGM_FI_DEV_GPU_TEMP{{{NODE}}})")], unit="celsius"))
        .with_row(dashboard.Row("Inventory"))
        .with_panel(_table(
            "GPUs reporting vs catalog",
            Query(
                f"count by (node, instance_type) (DCGM_FI_DEV_GPU_TEMP{{{NODE}}}) "
                "- on (instance_type) group_left () fmcluster:catalog_gpus_per_instance"
            ),
            "0 = every GPU the catalog lists is reporting; negative = GPUs missing.",
        ))
        .with_panel(_series("NVLink errors per minute", [
            Query(f"sum by (node) (rate(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{{{NODE}}}[5m])) * 60",
                  "{{node}} CRC flit"),
            Query(f"sum by (node) (rate(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{{{NODE}}}[5m])) * 60",
                  "{{node}} replay"),
        ]))
        .build()
    )


def gpu_utilisation(project: str) -> dashboard.Dashboard:
    return (
        _base(project, "gpu-util", "GPU utilisation")
        .with_panel(_stat("Cluster SM active", Query(f"avg(DCGM_FI_PROF_SM_ACTIVE{{{NODE}}})", "SM active"),
                          unit="percentunit",
                          description="Share of cycles with at least one warp on an SM: the training-efficiency signal."))
        .with_panel(_stat("Cluster tensor active", Query(f"avg(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{NODE}}})", "tensor"),
                          unit="percentunit"))
        .with_panel(_stat("GPUs reporting", Query(f"count(DCGM_FI_DEV_GPU_TEMP{{{NODE}}})", "GPUs")))
        .with_panel(_stat("Power draw", Query(f"sum(DCGM_FI_DEV_POWER_USAGE{{{NODE}}})", "W"), unit="watt"))
        .with_panel(_series("SM active per node", [Query(f"avg by (node) (DCGM_FI_PROF_SM_ACTIVE{{{NODE}}})")],
                            unit="percentunit"))
        .with_panel(_series("GPU utilisation per node", [Query(f"avg by (node) (DCGM_FI_DEV_GPU_UTIL{{{NODE}}})")],
                            unit="percent"))
        .with_panel(_series("Tensor pipe active per node",
                            [Query(f"avg by (node) (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{NODE}}})")], unit="percentunit"))
        .with_panel(_series("HBM bandwidth busy per node", [Query(f"avg by (node) (DCGM_FI_PROF_DRAM_ACTIVE{{{NODE}}})")],
                            unit="percentunit"))
        .with_panel(_series("Framebuffer used per node", [Query(f"sum by (node) (DCGM_FI_DEV_FB_USED{{{NODE}}})")],
                            unit="mbytes"))
        .with_panel(_series("Power per node", [Query(f"sum by (node) (DCGM_FI_DEV_POWER_USAGE{{{NODE}}})")], unit="watt"))
        .with_panel(_series("NVLink traffic per node", [
            Query(f"sum by (node) (DCGM_FI_PROF_NVLINK_TX_BYTES{{{NODE}}})", "{{node}} tx"),
            Query(f"sum by (node) (DCGM_FI_PROF_NVLINK_RX_BYTES{{{NODE}}})", "{{node}} rx"),
        ], unit="Bps"))
        .with_panel(_series("PCIe traffic per node", [
            Query(f"sum by (node) (DCGM_FI_PROF_PCIE_TX_BYTES{{{NODE}}})", "{{node}} tx"),
            Query(f"sum by (node) (DCGM_FI_PROF_PCIE_RX_BYTES{{{NODE}}})", "{{node}} rx"),
        ], unit="Bps"))
        .build()
    )


def efa(project: str) -> dashboard.Dashboard:
    return (
        _base(project, "efa", "EFA")
        .with_panel(_series("EFA transmit per node",
                            [Query(f"sum by (node) (rate(node_amazonefa_tx_bytes{{{NODE}}}[5m]))")], unit="Bps"))
        .with_panel(_series("EFA receive per node",
                            [Query(f"sum by (node) (rate(node_amazonefa_rx_bytes{{{NODE}}}[5m]))")], unit="Bps"))
        .with_panel(_series("RDMA write per node",
                            [Query(f"sum by (node) (rate(node_amazonefa_rdma_write_bytes{{{NODE}}}[5m]))")], unit="Bps"))
        .with_panel(_series("RDMA read per node",
                            [Query(f"sum by (node) (rate(node_amazonefa_rdma_read_bytes{{{NODE}}}[5m]))")], unit="Bps"))
        .with_panel(_series("Retransmitted share of packets", [Query(
            f"sum by (node) (rate(node_amazonefa_retrans_pkts{{{NODE}}}[5m])) "
            f"/ sum by (node) (rate(node_amazonefa_tx_pkts{{{NODE}}}[5m]))")], unit="percentunit"))
        .with_panel(_series("Errors per minute", [
            Query(f"sum by (node) (rate(node_amazonefa_retrans_timeout_events{{{NODE}}}[5m])) * 60",
                  "{{node}} retransmit timeouts"),
            Query(f"sum by (node) (rate(node_amazonefa_unresponsive_remote_events{{{NODE}}}[5m])) * 60",
                  "{{node}} unresponsive remote"),
            Query(f"sum by (node) (rate(node_amazonefa_impaired_remote_conn_events{{{NODE}}}[5m])) * 60",
                  "{{node}} impaired remote"),
            Query(f"sum by (node) (rate(node_amazonefa_rdma_read_wr_err{{{NODE}}}[5m])"
                  f" + rate(node_amazonefa_rdma_write_wr_err{{{NODE}}}[5m])) * 60", "{{node}} RDMA WR errors"),
            Query(f"sum by (node) (rate(node_amazonefa_rx_drops{{{NODE}}}[5m])) * 60", "{{node}} rx drops"),
        ], width=24))
        .build()
    )


def _cloudwatch(metric: str, statistic: str, ref: str, alias: str) -> cloudwatch.CloudWatchMetricsQuery:
    return (
        cloudwatch.CloudWatchMetricsQuery()
        .namespace("AWS/FSx")
        .metric_name(metric)
        .dimensions({"FileSystemId": "$fsx_id"})
        .statistic(statistic)
        .region("default")
        .match_exact(True)
        .period("60")
        .ref_id(ref)
        .label(alias)
        .datasource(CLOUDWATCH)
    )


def fsx(project: str) -> dashboard.Dashboard:
    bytes_per_second = (
        timeseries.Panel().title("FSx throughput (bytes per minute)").unit("bytes").datasource(CLOUDWATCH).span(12)
        .height(8)
        .with_target(_cloudwatch("DataReadBytes", "Sum", "A", "read"))
        .with_target(_cloudwatch("DataWriteBytes", "Sum", "B", "write"))
    )
    operations = (
        timeseries.Panel().title("FSx operations per minute").unit("short").datasource(CLOUDWATCH).span(12).height(8)
        .with_target(_cloudwatch("DataReadOperations", "Sum", "A", "read"))
        .with_target(_cloudwatch("DataWriteOperations", "Sum", "B", "write"))
        .with_target(_cloudwatch("MetadataOperations", "Sum", "C", "metadata"))
    )
    free = (
        timeseries.Panel().title("FSx free capacity").unit("bytes").datasource(CLOUDWATCH).span(12).height(8)
        .with_target(_cloudwatch("FreeDataStorageCapacity", "Minimum", "A", "free"))
    )
    cw = dashboard.DatasourceVariable("cloudwatch").label("CloudWatch").type("cloudwatch")
    fsx_id = dashboard.TextBoxVariable("fsx_id").label("FSx file system ID").default_value("fs-")
    return (
        _base(project, "fsx", "FSx for Lustre")
        .with_variable(cw)
        .with_variable(fsx_id)
        .with_panel(bytes_per_second)
        .with_panel(operations)
        .with_panel(free)
        .with_panel(_series("Lustre mounts: share used (node view)", [Query(
            f'max by (mountpoint) (1 - node_filesystem_avail_bytes{{fstype="lustre",{NODE}}} '
            f'/ node_filesystem_size_bytes{{fstype="lustre",{NODE}}})', "{{mountpoint}}")], unit="percentunit"))
        .with_panel(_table("Nodes without a Lustre mount", Query(
            f"group by (node) (node_uname_info{{{NODE}}}) unless on (node) "
            f'group by (node) (node_filesystem_size_bytes{{fstype="lustre"}})')))
        .build()
    )


SLURM = f'job="{metrics.SLURM.job}"'
"""Our Slurm metrics arrive through node_exporter's textfile collector; Slurm 25.11's native endpoint uses some of the
same names with other labels: select the job they come on."""


def slurm_dashboard(project: str) -> dashboard.Dashboard:
    return (
        _base(project, "slurm", "Slurm")
        .with_row(dashboard.Row("Queue"))
        .with_panel(_stat("Jobs pending", Query(f"sum(slurm_jobs_pending{{{SLURM}}})", "pending")))
        .with_panel(_stat("Jobs running", Query(f"sum(slurm_jobs_running{{{SLURM}}})", "running")))
        .with_panel(_stat("GPUs allocated", Query(f"sum(slurm_gpus_alloc{{{SLURM}}})", "allocated"),
                          description="GPUs Slurm has given to jobs, of those it knows as GRES."))
        .with_panel(_stat("Nodes down, drained or failed", Query(
            "sum(fmcluster:slurm_nodes_unavailable:sum)", "unavailable")))
        .with_panel(_series("Queue depth per partition", [
            Query(f"sum by (partition) (slurm_partition_jobs_pending{{{SLURM}}})", "{{partition}} pending"),
            Query(f"sum by (partition) (slurm_queue_running{{{SLURM}}})", "{{partition}} running"),
        ]))
        .with_panel(_series("Pending jobs by reason", [
            Query("sum by (reason) (fmcluster:slurm_jobs_pending:sum_by_reason)", "{{reason}}")],
            description="Priority and Resources are normal on a busy cluster; a node, partition or hold reason "
                        "needs an operator (alert SlurmJobsStuck)."))
        .with_panel(_table("Pending jobs by user, partition and reason", Query(
            f"sum by (user, partition, reason) (slurm_queue_pending{{{SLURM}}})"), width=24))
        .with_row(dashboard.Row("Nodes"))
        .with_panel(_series("Node states per partition", [
            Query(f"sum by (partition) (slurm_nodes_alloc{{{SLURM}}} + slurm_nodes_mix{{{SLURM}}})",
                  "{{partition}} busy"),
            Query(f"sum by (partition) (slurm_nodes_idle{{{SLURM}}})", "{{partition}} idle"),
            Query(f"sum by (partition) (slurm_nodes_down{{{SLURM}}})", "{{partition}} down"),
            Query(f"sum by (partition) (slurm_nodes_drain{{{SLURM}}})", "{{partition}} drained/draining"),
        ], description="ParallelCluster's powered-down nodes count as idle."))
        .with_panel(_table("Nodes down or drained, and why", Query(
            f"max by (node, reason, since) (slurm_node_drain_reason_info{{{SLURM}}})"),
            "sinfo -R: the reason Slurm holds for each node, and since when."))
        .with_row(dashboard.Row("GPUs per user"))
        .with_panel(_series("GPUs allocated per user", [
            Query("sum by (user) (fmcluster:slurm_user_gpus_allocated:sum)", "{{user}}")]))
        .with_panel(_table("GPUs allocated per user, now", Query(
            "sort_desc(sum by (user) (fmcluster:slurm_user_gpus_allocated:sum))")))
        .with_panel(_series("GPUs allocated vs idle", [
            Query(f"sum(slurm_gpus_alloc{{{SLURM}}})", "allocated"),
            Query(f"sum(slurm_gpus_idle{{{SLURM}}})", "idle"),
            Query(f"sum(slurm_gpus_total{{{SLURM}}})", "total"),
        ]))
        .with_panel(_table("Slurm commands", Query(
            f"min by (command) (fmcluster_slurm_command_success{{{SLURM}}})"),
            "1: the command ran and its output parsed; 0: it fails, and the metrics from it are missing "
            "(alert SlurmMetricsFailing)."))
        .with_panel(_stat("Slurm metrics age", Query(
            f"time() - max(fmcluster_slurm_metrics_timestamp_seconds{{{SLURM}}})", "age"), unit="s",
            description="Seconds since the Slurm metrics script last wrote its file (alert SlurmMetricsStale)."))
        .build()
    )


def build_dashboards(project: str, *, slurm: bool = True) -> dict[str, dict[str, Any]]:
    """Every dashboard of a project as Grafana JSON models, keyed by UID. ``slurm=False``: no Slurm dashboard,
    for a project where no node runs our Slurm metrics script (:func:`fmcluster.generate.metrics.runs_slurm_metrics`)."""
    builders = [gpu_health, gpu_utilisation, efa, fsx] + ([slurm_dashboard] if slurm else [])
    models = [json.loads(json.dumps(build(project), cls=JSONEncoder)) for build in builders]
    return {model["uid"]: model for model in models}


def export_dashboards(project: str, out_dir: Path, *, slurm: bool = True) -> list[Path]:
    """Write each dashboard as ``<uid>.json`` under ``out_dir``; return the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for uid, model in build_dashboards(project, slurm=slurm).items():
        path = out_dir / f"{uid}.json"
        path.write_text(json.dumps(model, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
