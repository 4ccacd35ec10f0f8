"""End to end on loopback: the Slurm controller's metrics, from our script over squeue/sinfo to the shipped alerts.

The node that runs slurmctld (ParallelCluster's head node, HyperPod's controller) runs our Slurm metrics script
(``files/fmcluster-slurm-metrics``), whose file node_exporter's textfile collector serves. Here, all on 127.0.0.1:

- the script as the controller's bundle renders it, run for real (``--once`` after each change) against stub
  ``squeue``/``sinfo`` (``support.slurm_stubs``: they answer only the documented formats the script asks for, with
  what the real clients print), writing where the bootstrap puts it, linked into the textfile directory as the
  exporters step links it;
- a real node_exporter (Debian ``prometheus-node-exporter``) with ``--collector.textfile.directory`` there;
- a Prometheus agent running the rendered agent config of the controller's node
  (``render_node_agent_config(..., slurm=True)``), with the bootstrap's flags; only the remote-write URL, sigv4, the
  part-full batch's deadline (``support.loopback.BATCH_SEND_DEADLINE``) and the target port change;
- a Prometheus receiver loading ``rules_yaml()`` as shipped, evaluating every second.

Asserted through the receiver: every Slurm metric of the exporter table arrives with the controller's external
labels, and nothing outside the table does; the recording rules compute per-user GPUs; a node down, a node drained,
jobs stuck behind the down node and a stalled partition make their alerts pending, every panel of the Slurm dashboard
returns data; then a failing squeue makes SlurmMetricsFailing pending while sinfo's metrics keep arriving. Their
``for:`` (10 and 30 minutes) is then proven by replay through the real ``promtool`` (``support.replay``).
SlurmMetricsStale needs a file older than 5 minutes: its promtool unit test (tests/generate/rules/slurm.test.yaml)
proves it both ways.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from fmcluster.bootstrap import render
from support import replay, slurm_stubs
from support.loopback import AGENT_PROMETHEUS, agent_config, free_port, get, spawn, spawn_agent, stop, wait_until
from support.sandbox import context_for, make_project
from support.slurm_stubs import HEALTHY_JOBS, HEALTHY_NODES, Job, Node, gpu_tres

from fmcluster.generate import dashboards, metrics, rules

PROMETHEUS = shutil.which("prometheus")  # the receiver: Debian stable's, the stand-in for Amazon Managed Prometheus
AGENT = str(AGENT_PROMETHEUS) if AGENT_PROMETHEUS.is_file() else None  # the node's agent: Prometheus 3 (make prometheus3)
PROMTOOL = shutil.which("promtool")
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")

CONTROLLER = "ip-10-0-0-9"
INSTANCE_ID = "i-0fedcba9876543210"
INSTANCE_TYPE = "m7i.2xlarge"
DOWN_NODE = "gpu-dy-p5-1"
DRAINED_NODE = "debug-st-c7i-1"
STUCK = "ReqNodeNotAvail, UnavailableNodes:gpu-dy-p5-1"
SLURM_SERIES = '{job="node-exporter", __name__=~"slurm_.+|fmcluster_slurm_.+"}'

IN_CI = bool(os.environ.get("CI"))
pytestmark = pytest.mark.skipif(
    not (PROMETHEUS and AGENT and NODE_EXPORTER) and not IN_CI,
    reason="needs the Debian packages prometheus and prometheus-node-exporter (.ci/run installs them) and "
           "Prometheus 3 for the agent (make prometheus3)",
)

QUEUE_ALERTS = {"SlurmNodesDown", "SlurmNodesDrained", "SlurmJobsStuck", "SlurmPartitionStalled"}
SLURM_ALERTS = QUEUE_ALERTS | {"SlurmMetricsFailing"}

# The faults, as squeue and sinfo then print them: gpu's powered-down node went down (health check), one debug node
# was drained, one of alice's jobs now waits for the down node, dave's job waits in debug where nothing runs.
FAULT_NODES = [
    Node(DOWN_NODE, "gpu", "down", *slurm_stubs.p5(0), since="2026-11-30T12:01:00",
         reason="fmcluster health: GPU XID 79"),
    *HEALTHY_NODES[1:3],
    Node(DRAINED_NODE, "debug", "drained", since="2026-11-30T12:00:00", reason="kernel upgrade"),
    HEALTHY_NODES[4],
]
FAULT_JOBS = [*HEALTHY_JOBS[:3], Job("gpu", "PENDING", "alice", gpu_tres(192, 1, 8), STUCK), HEALTHY_JOBS[4],
              Job("debug", "PENDING", "dave", "cpu=4,mem=8G,node=1,billing=4", "Resources")]


@dataclass
class Controller:
    tmp: Path
    receiver_port: int
    root: Path
    """The controller's file system as the bootstrap lays it out (FMC_ROOT)."""
    slurm_bin: Path

    def logs(self) -> str:
        return "\n".join(f"--- {log.name} (tail)\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:])
                         for log in sorted(self.tmp.glob("*.log")))

    def collect(self, jobs: list[Job], nodes: list[Node]) -> None:
        """squeue and sinfo now print these; the script runs once, as its service does every 30 s."""
        slurm_stubs.set_queue(self.slurm_bin, jobs)
        slurm_stubs.set_nodes(self.slurm_bin, nodes)
        proc = subprocess.run(["bash", str(self.root / "usr/local/sbin/fmcluster-slurm-metrics"), "--once"],
                              env={"PATH": "/usr/bin:/bin", "FMC_ROOT": str(self.root)}, capture_output=True,
                              text=True, timeout=30)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    def alerts(self) -> dict[str, dict[str, Any]]:
        """alertname -> the labels and state of each active Slurm alert on the receiver."""
        found = get(self.receiver_port, "/api/v1/alerts")["data"]["alerts"]
        return {a["labels"]["alertname"]: a["labels"] | {"state": a["state"]} for a in found
                if a["labels"]["alertname"] in SLURM_ALERTS}

    def query(self, expr: str) -> list[dict[str, Any]]:
        return get(self.receiver_port, "/api/v1/query", query=expr)["data"]["result"]

    def snapshot(self) -> replay.Snapshot:
        """Every Slurm series the node_exporter scrape wrote, less alert state and recorded series."""
        return replay.snapshot(self.query(SLURM_SERIES), {"ALERTS", "ALERTS_FOR_STATE", *rules.recorded_metrics()})


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[Controller]:
    procs: list[subprocess.Popen] = []
    try:
        ports = {name: free_port() for name in ("receiver", "node_exporter", "agent")}
        # The controller's bundle, laid out as its exporters step does: the script, and the textfile directory's link
        ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "head")
        assert ctx.slurm_metrics
        root = tmp_path / "root"
        script = root / "usr/local/sbin/fmcluster-slurm-metrics"
        script.parent.mkdir(parents=True)
        script.write_text(render.render_files(ctx)["files/fmcluster-slurm-metrics"])
        textfile = root / "var/lib/fmcluster/textfile"
        textfile.mkdir(parents=True)
        (textfile / "slurm.prom").symlink_to("../slurm-metrics/slurm.prom")
        slurm_bin = root / ctx.options.slurm_prefix.lstrip("/") / "bin"
        slurm_stubs.install(slurm_bin)
        result = Controller(tmp_path, ports["receiver"], root, slurm_bin)
        result.collect(HEALTHY_JOBS, HEALTHY_NODES)

        (tmp_path / "rules.yml").write_text(rules.rules_yaml())
        (tmp_path / "receiver.yml").write_text(yaml.safe_dump(
            {"global": {"evaluation_interval": "1s"}, "rule_files": [str(tmp_path / "rules.yml")]}))
        procs.append(spawn(tmp_path, "receiver", [
            PROMETHEUS, f"--config.file={tmp_path / 'receiver.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{ports['receiver']}", "--web.enable-remote-write-receiver"]))
        procs.append(spawn(tmp_path, "node_exporter", [
            NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{ports['node_exporter']}",
            f"--collector.textfile.directory={textfile}"]))
        # The controller's rendered agent config (Slurm metrics kept), as its unit runs it.
        config = agent_config(ports["receiver"], {metrics.NODE.port: ports["node_exporter"]}, gpu=False, slurm=True)
        procs.append(spawn_agent(tmp_path, AGENT, ports["agent"], config, CONTROLLER, INSTANCE_ID, INSTANCE_TYPE))
        wait_until("the receiver to load the rules", lambda: get(ports["receiver"], "/api/v1/rules")["data"]["groups"],
                   result.logs)
        yield result
    finally:
        for proc in reversed(procs):
            stop(proc)


def _names(c: Controller, selector: str) -> set[str]:
    return {s["__name__"] for s in get(c.receiver_port, "/api/v1/series", **{"match[]": selector})["data"]}


def _slurm_panels() -> Iterator[tuple[str, str]]:
    for uid, model in dashboards.build_dashboards("e2e").items():
        if "slurm" not in uid:
            continue
        for panel in model.get("panels", []):
            for inner in [panel, *panel.get("panels", [])]:
                for target in inner.get("targets", []):
                    assert "$" not in target["expr"].replace("$node", ""), target["expr"]
                    yield f"{uid}/{inner['title']}", target["expr"]


def test_slurm_metrics_arrive_and_injected_faults_fire_their_alerts(controller: Controller) -> None:
    c = controller
    table = metrics.SLURM_METRICS
    healthy_names = table - {"slurm_node_drain_reason_info"}  # only while a node is drained or down with a reason
    wait_until("the Slurm metrics", lambda: healthy_names <= _names(c, SLURM_SERIES), c.logs)

    # From the controller's agent, named by its unit's environment; nothing outside the table leaves the node.
    series = get(c.receiver_port, "/api/v1/series", **{"match[]": '{job="node-exporter"}'})["data"]
    assert {(s["node"], s["instance_id"], s["instance_type"], s["project"]) for s in series} == {
        (CONTROLLER, INSTANCE_ID, INSTANCE_TYPE, "e2e")}
    sent = {s["__name__"] for s in series} - {"ALERTS", "ALERTS_FOR_STATE"}
    extra = {n for n in sent - metrics.produced(gpu=False, slurm=True) if n != "up" and not n.startswith("scrape_")}
    assert not extra, f"the agent sent metrics outside the exporter table: {sorted(extra)}"
    served = (c.root / "var/lib/fmcluster/textfile/slurm.prom").read_text()
    assert "slurm_nodes_total 5" in served  # node_exporter read it through the link
    # The plan's estimate for the controller counts what arrives per partition, cluster-wide and per command.
    estimate = metrics.node_series(gpus=0, efa_devices=0, vcpus=0, nvme_drives=0, slurm_partitions=2)
    dims = metrics.dimensions()
    arrived: dict[str, int] = {}
    for s in series:
        if s["__name__"] in table:
            arrived[dims[s["__name__"]]] = arrived.get(dims[s["__name__"]], 0) + 1
    for dim in ("cluster", "partition", "slurm_command"):
        assert arrived[dim] == estimate.per_dimension[dim], (dim, arrived, estimate)

    # The recording rules: carol's 16 GPUs (alice and bob have none running).
    wait_until("the Slurm recording rules", lambda: c.query("fmcluster:slurm_user_gpus_allocated:sum > 0"), c.logs)
    (gpus,) = c.query("fmcluster:slurm_user_gpus_allocated:sum > 0")
    assert (gpus["metric"]["user"], gpus["value"][1]) == ("carol", "16")

    time.sleep(3)  # a few evaluations over healthy series
    assert not c.alerts(), f"Slurm alerts active before any fault: {c.alerts()}"
    healthy = c.snapshot()

    c.collect(FAULT_JOBS, FAULT_NODES)
    alerts = wait_until(f"{sorted(QUEUE_ALERTS)} to be pending",
                        lambda: (a := c.alerts()) and set(a) == QUEUE_ALERTS and a, c.logs)
    assert {name: a["state"] for name, a in alerts.items()} == dict.fromkeys(QUEUE_ALERTS, "pending")
    assert alerts["SlurmNodesDown"]["partition"] == "gpu" and alerts["SlurmNodesDown"]["node"] == CONTROLLER
    assert alerts["SlurmNodesDrained"]["partition"] == "debug"
    assert (alerts["SlurmJobsStuck"]["partition"], alerts["SlurmJobsStuck"]["reason"]) == ("gpu", STUCK)
    assert alerts["SlurmPartitionStalled"]["partition"] == "debug"
    # The drain reasons keep the script's own `node` (the drained node): the external label does not override it.
    wait_until("the drain reasons", lambda: c.query("slurm_node_drain_reason_info"), c.logs)
    reasons = {r["metric"]["node"]: r["metric"] for r in c.query("slurm_node_drain_reason_info")}
    assert set(reasons) == {DOWN_NODE, DRAINED_NODE}
    assert reasons[DOWN_NODE]["reason"] == "fmcluster health: GPU XID 79"
    assert reasons[DRAINED_NODE]["since"] == "2026-11-30T12:00:00"
    assert reasons[DOWN_NODE]["instance_id"] == INSTANCE_ID  # the other external labels are added
    assert table <= _names(c, SLURM_SERIES)

    # Every panel of the Slurm dashboard runs on the receiver and returns data.
    empty = []
    for where, expr in _slurm_panels():
        try:
            if not c.query(expr):
                empty.append(f"{where}: {expr}")
        except urllib.error.HTTPError as exc:
            pytest.fail(f"{where}: {expr}: {exc.read().decode(errors='replace')}")
    assert not empty, "panels without data:\n" + "\n".join(empty)
    faults = c.snapshot()

    # squeue fails (slurmctld does not answer it): the script says so, and sinfo's metrics keep arriving.
    slurm_stubs.fail(c.slurm_bin, "squeue")
    c.collect(HEALTHY_JOBS, HEALTHY_NODES)
    failing = wait_until("SlurmMetricsFailing to be pending",
                         lambda: (a := c.alerts()).get("SlurmMetricsFailing"), c.logs)
    assert (failing["command"], failing["state"]) == ("squeue", "pending")
    wait_until("the queue's series to go", lambda: not c.query("slurm_jobs_pending"), c.logs)
    assert c.query("slurm_nodes_total")[0]["value"][1] == "5"
    assert set(c.alerts()) == {"SlurmMetricsFailing"}  # the faults are gone from sinfo, the queue alerts with squeue

    _replay(c.tmp, healthy, faults, c.snapshot())


FAULT_AT_S = 5 * 60
END_S = 40 * 60


def _check(minute: int, **states: str) -> dict[str, Any]:
    """A promtool check: at ``minute``, exactly these Slurm alerts in these states."""
    samples = [{"labels": f'{{alertname="{name}", alertstate="{state}"}}', "value": 1}
               for name, state in sorted(states.items())]
    return {"expr": f'count by (alertname, alertstate) (ALERTS{{alertname=~"{"|".join(sorted(SLURM_ALERTS))}"}})',
            "eval_time": f"{minute}m", "exp_samples": samples}


def _replay(tmp: Path, healthy: replay.Snapshot, faults: replay.Snapshot, failing: replay.Snapshot) -> None:
    """The faults at minute 5: the 10-minute alerts fire from 15, the 30-minute ones from 35; nothing before."""
    assert PROMTOOL, "promtool comes with the Debian package prometheus"
    assert [k for k in faults if dict(k)["__name__"] == "slurm_node_drain_reason_info"]
    assert not [k for k in healthy if dict(k)["__name__"] == "slurm_node_drain_reason_info"]
    ten = {"SlurmNodesDown"}
    thirty = QUEUE_ALERTS - ten
    scenarios = [
        replay.Scenario("slurm faults", faults, [
            _check(4),
            _check(14, **dict.fromkeys(QUEUE_ALERTS, "pending")),
            _check(16, **dict.fromkeys(ten, "firing"), **dict.fromkeys(thirty, "pending")),
            _check(34, **dict.fromkeys(ten, "firing"), **dict.fromkeys(thirty, "pending")),
            _check(36, **dict.fromkeys(QUEUE_ALERTS, "firing")),
        ]),
        replay.Scenario("squeue fails", failing, [
            _check(4), _check(14, SlurmMetricsFailing="pending"), _check(16, SlurmMetricsFailing="firing"),
        ]),
    ]
    proc = replay.run(PROMTOOL, tmp / "rules.yml", tmp / "replay", healthy, scenarios, FAULT_AT_S, END_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
