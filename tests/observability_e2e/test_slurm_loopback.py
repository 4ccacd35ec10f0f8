"""End to end on loopback: the Slurm controller's metrics, from a recorded exporter endpoint to the shipped alerts.

The node that runs slurmctld (ParallelCluster's head node, HyperPod's controller) runs the Slurm exporter beside
node_exporter. Here, all on 127.0.0.1 with free ports:

- a small HTTP server answering ``/metrics`` with the recorded Slurm exporter endpoint
  (``fixtures/slurm_exporter-1.8.4.prom``: derived from the exporter's source, its header says how), into which the
  test injects faults as the exporter would report them;
- a real node_exporter (Debian ``prometheus-node-exporter``);
- a Prometheus agent running the rendered agent config of the controller's node
  (``render_node_agent_config(..., slurm=True)``), with the bootstrap's flags; only the remote-write URL, sigv4 and
  the target ports change;
- a Prometheus receiver loading ``rules_yaml()`` as shipped, evaluating every second.

Asserted through the receiver: every Slurm metric of the exporter table arrives with the controller's external
labels and nothing outside the table does; the recording rules compute per-user GPUs; a node down, a node drained,
jobs stuck behind the down node, a partition stalled and a failing collector each make their alert pending, and every
panel of the Slurm dashboard returns data. Their ``for:`` (10 and 30 minutes) is then proven by replay through the
real ``promtool`` (``support.replay``), as the GPU node's test does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from fmcluster.bootstrap import collector
from support import replay
from support.loopback import free_port, get, spawn, stop, wait_until

from fmcluster.generate import dashboards, metrics, rules

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
RECORDED = Path(__file__).parent / "fixtures" / "slurm_exporter-1.8.4.prom"

CONTROLLER = "ip-10-0-0-9"
INSTANCE_ID = "i-0fedcba9876543210"
INSTANCE_TYPE = "m7i.2xlarge"
DOWN_NODE = "gpu-dy-p5-1"
DRAINED_NODE = "debug-st-c7i-1"
STUCK = "ReqNodeNotAvail, UnavailableNodes:gpu-dy-p5-1"

IN_CI = bool(os.environ.get("CI"))
pytestmark = pytest.mark.skipif(
    not (PROMETHEUS and NODE_EXPORTER) and not IN_CI,
    reason="needs the Debian packages prometheus and prometheus-node-exporter (.ci/run installs them)",
)

SLURM_ALERTS = {"SlurmNodesDown", "SlurmNodesDrained", "SlurmJobsStuck", "SlurmPartitionStalled",
                "SlurmExporterCollectorFailing"}


def faulty(text: str) -> str:
    """The recording after the faults, as the exporter's collectors would report them: gpu's idle node went down
    (health check), one debug node was drained, one of alice's jobs now waits for the down node, dave's job waits
    in debug where nothing runs, and the gpus collector's sinfo fails."""
    replace = {
        'slurm_nodes_down{partition="gpu"} 0': 'slurm_nodes_down{partition="gpu"} 1',
        'slurm_nodes_idle{partition="gpu"} 1': 'slurm_nodes_idle{partition="gpu"} 0',
        'slurm_nodes_drain{partition="debug"} 0': 'slurm_nodes_drain{partition="debug"} 1',
        'slurm_nodes_idle{partition="debug"} 2': 'slurm_nodes_idle{partition="debug"} 1',
        'slurm_exporter_collector_success{collector="gpus"} 1': 'slurm_exporter_collector_success{collector="gpus"} 0',
        'slurm_queue_pending{partition="gpu",reason="Priority",user="alice"} 2':
            'slurm_queue_pending{partition="debug",reason="Resources",user="dave"} 1\n'
            'slurm_queue_pending{partition="gpu",reason="Priority",user="alice"} 1\n'
            f'slurm_queue_pending{{partition="gpu",reason="{STUCK}",user="alice"}} 1',
        # node_drain.go: a family only while a node is drained or down with a reason ("Not responding" is left out)
        "# HELP slurm_nodes_alloc Allocated nodes":
            "# HELP slurm_node_drain_reason_info Information about why a node is in drain or down state. "
            "Value is always 1 — use labels for the reason and timestamp.\n"
            "# TYPE slurm_node_drain_reason_info gauge\n"
            f'slurm_node_drain_reason_info{{node="{DRAINED_NODE}",reason="kernel upgrade",'
            'since="2026-11-30T12:00:00"} 1\n'
            f'slurm_node_drain_reason_info{{node="{DOWN_NODE}",reason="fmcluster health: GPU XID 79",'
            'since="2026-11-30T12:01:00"} 1\n'
            "# HELP slurm_nodes_alloc Allocated nodes",
    }
    lines = text.splitlines()
    for old in replace:
        assert lines.count(old) == 1, f"the recording has no line {old!r}"
    return "\n".join(replace.get(line, line) for line in lines) + "\n"


@dataclass
class Exporter:
    text: str


def _serve(state: Exporter, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = state.text.encode()
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _agent_config(receiver_port: int, ports: dict[int, int]) -> str:
    """The controller's rendered agent config; only the remote-write endpoint, sigv4 and the target ports changed."""
    config = yaml.safe_load(collector.render_node_agent_config("e2e", gpu=False, slurm=True, scrape_interval="1s"))
    targets = [t for job in config["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]]
    assert sorted(targets) == sorted(f"localhost:{port}" for port in ports), targets
    for job in config["scrape_configs"]:
        for sc in job["static_configs"]:
            sc["targets"] = [f"127.0.0.1:{ports[int(t.rsplit(':', 1)[1])]}" for t in sc["targets"]]
    (write,) = config["remote_write"]
    del write["sigv4"]
    write["url"] = f"http://127.0.0.1:{receiver_port}/api/v1/write"
    return yaml.safe_dump(config, sort_keys=False)


@dataclass
class Controller:
    tmp: Path
    receiver_port: int
    exporter: Exporter

    def logs(self) -> str:
        return "\n".join(f"--- {log.name} (tail)\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:])
                         for log in sorted(self.tmp.glob("*.log")))

    def alerts(self) -> dict[str, dict[str, Any]]:
        """alertname -> the labels and state of each active Slurm alert on the receiver."""
        found = get(self.receiver_port, "/api/v1/alerts")["data"]["alerts"]
        return {a["labels"]["alertname"]: a["labels"] | {"state": a["state"]} for a in found
                if a["labels"]["alertname"] in SLURM_ALERTS}

    def query(self, expr: str) -> list[dict[str, Any]]:
        return get(self.receiver_port, "/api/v1/query", query=expr)["data"]["result"]

    def snapshot(self) -> replay.Snapshot:
        """Every series the Slurm exporter's scrape wrote, less alert state and recorded series."""
        return replay.snapshot(self.query('{job="slurm-exporter"}'),
                               {"ALERTS", "ALERTS_FOR_STATE", *rules.recorded_metrics()})


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[Controller]:
    procs: list[subprocess.Popen] = []
    server: ThreadingHTTPServer | None = None
    try:
        ports = {name: free_port() for name in ("receiver", "node_exporter", "slurm", "agent")}
        state = Exporter(RECORDED.read_text())
        server = _serve(state, ports["slurm"])
        (tmp_path / "rules.yml").write_text(rules.rules_yaml())
        (tmp_path / "receiver.yml").write_text(yaml.safe_dump(
            {"global": {"evaluation_interval": "1s"}, "rule_files": [str(tmp_path / "rules.yml")]}))
        procs.append(spawn(tmp_path, "receiver", [
            PROMETHEUS, f"--config.file={tmp_path / 'receiver.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{ports['receiver']}", "--web.enable-remote-write-receiver"]))
        textfile = tmp_path / "textfile"
        textfile.mkdir()
        procs.append(spawn(tmp_path, "node_exporter", [
            NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{ports['node_exporter']}",
            f"--collector.textfile.directory={textfile}"]))
        agent_yml = tmp_path / "agent.yml"
        agent_yml.write_text(_agent_config(
            ports["receiver"], {metrics.NODE.port: ports["node_exporter"], metrics.SLURM.port: ports["slurm"]}))
        env = {"PATH": "/usr/bin:/bin", "FMC_NODE": CONTROLLER, "FMC_INSTANCE_ID": INSTANCE_ID,
               "FMC_INSTANCE_TYPE": INSTANCE_TYPE}
        # The bootstrap's unit runs exactly these flags (templates/bootstrap/exporters.sh.j2).
        procs.append(spawn(tmp_path, "agent", [
            PROMETHEUS, "--enable-feature=agent,expand-external-labels", f"--config.file={agent_yml}",
            f"--storage.agent.path={tmp_path / 'agent-wal'}", f"--web.listen-address=127.0.0.1:{ports['agent']}"],
            env=env))
        result = Controller(tmp_path, ports["receiver"], state)
        wait_until("the receiver to load the rules", lambda: get(ports["receiver"], "/api/v1/rules")["data"]["groups"],
                   result.logs)
        yield result
    finally:
        for proc in reversed(procs):
            stop(proc)
        if server is not None:
            server.shutdown()
            server.server_close()


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
    table = metrics.SLURM_EXPORTER_METRICS
    healthy_names = table - {"slurm_node_drain_reason_info"}  # only while a node is drained or down with a reason
    wait_until("the Slurm exporter's metrics", lambda: healthy_names <= _names(c, '{job="slurm-exporter"}'), c.logs)

    # From the controller's agent, named by its unit's environment; nothing outside the table leaves the node.
    series = get(c.receiver_port, "/api/v1/series", **{"match[]": '{job="slurm-exporter"}'})["data"]
    assert {(s["node"], s["instance_id"], s["instance_type"], s["project"]) for s in series} == {
        (CONTROLLER, INSTANCE_ID, INSTANCE_TYPE, "e2e")}
    sent = {s["__name__"] for s in series} - {"ALERTS", "ALERTS_FOR_STATE"}
    extra = {n for n in sent - table if n != "up" and not n.startswith("scrape_")}
    assert not extra, f"the agent sent metrics outside the exporter table: {sorted(extra)}"
    recorded = RECORDED.read_text()
    assert "go_goroutines" in recorded and "slurm_cores_pending" in recorded  # so the keep-list had work to do
    assert {s["job"] for s in series if s["__name__"] == "up"} == {metrics.SLURM.job}
    # The plan's estimate for the controller counts what arrives per partition, cluster-wide and per collector.
    estimate = metrics.node_series(gpus=0, efa_devices=0, vcpus=0, nvme_drives=0, slurm_partitions=2)
    dims = metrics.dimensions()
    arrived: dict[str, int] = {}
    for s in series:
        if s["__name__"] in table:
            arrived[dims[s["__name__"]]] = arrived.get(dims[s["__name__"]], 0) + 1
    for dim in ("cluster", "partition", "slurm_collector"):
        assert arrived[dim] == estimate.per_dimension[dim], (dim, arrived, estimate)

    # The recording rules: carol's 16 GPUs; 3 jobs pending in gpu, none down.
    wait_until("the Slurm recording rules", lambda: c.query("fmcluster:slurm_user_gpus_allocated:sum"), c.logs)
    (gpus,) = c.query("fmcluster:slurm_user_gpus_allocated:sum")
    assert (gpus["metric"]["user"], gpus["value"][1]) == ("carol", "16")

    time.sleep(3)  # a few evaluations over healthy series
    assert not c.alerts(), f"Slurm alerts active before any fault: {c.alerts()}"
    healthy = c.snapshot()

    c.exporter.text = faulty(c.exporter.text)
    alerts = wait_until(f"{sorted(SLURM_ALERTS)} to be pending",
                        lambda: (a := c.alerts()) and set(a) == SLURM_ALERTS and a, c.logs)
    assert {name: a["state"] for name, a in alerts.items()} == dict.fromkeys(SLURM_ALERTS, "pending")
    assert alerts["SlurmNodesDown"]["partition"] == "gpu" and alerts["SlurmNodesDown"]["node"] == CONTROLLER
    assert alerts["SlurmNodesDrained"]["partition"] == "debug"
    assert (alerts["SlurmJobsStuck"]["partition"], alerts["SlurmJobsStuck"]["reason"]) == ("gpu", STUCK)
    assert alerts["SlurmPartitionStalled"]["partition"] == "debug"
    assert alerts["SlurmExporterCollectorFailing"]["collector"] == "gpus"
    # The drain reasons keep the exporter's own `node` (the drained node): the external label does not override it.
    wait_until("the drain reasons", lambda: c.query("slurm_node_drain_reason_info"), c.logs)
    reasons = {r["metric"]["node"]: r["metric"] for r in c.query("slurm_node_drain_reason_info")}
    assert set(reasons) == {DOWN_NODE, DRAINED_NODE}
    assert reasons[DOWN_NODE]["reason"] == "fmcluster health: GPU XID 79"
    assert reasons[DOWN_NODE]["instance_id"] == INSTANCE_ID  # the other external labels are added
    assert table <= _names(c, '{job="slurm-exporter"}')

    # Every panel of the Slurm dashboard runs on the receiver and returns data.
    empty = []
    for where, expr in _slurm_panels():
        try:
            if not c.query(expr):
                empty.append(f"{where}: {expr}")
        except urllib.error.HTTPError as exc:
            pytest.fail(f"{where}: {expr}: {exc.read().decode(errors='replace')}")
    assert not empty, "panels without data:\n" + "\n".join(empty)

    _replay(c.tmp, healthy, c.snapshot())


FAULT_AT_S = 5 * 60
END_S = 40 * 60


def _check(minute: int, **states: str) -> dict[str, Any]:
    """A promtool check: at ``minute``, exactly these Slurm alerts in these states."""
    samples = [{"labels": f'{{alertname="{name}", alertstate="{state}"}}', "value": 1}
               for name, state in sorted(states.items())]
    return {"expr": f'count by (alertname, alertstate) (ALERTS{{alertname=~"{"|".join(sorted(SLURM_ALERTS))}"}})',
            "eval_time": f"{minute}m", "exp_samples": samples}


def _replay(tmp: Path, healthy: replay.Snapshot, fault: replay.Snapshot) -> None:
    """The faults at minute 5: the 10-minute alerts fire from 15, the 30-minute ones from 35; nothing before."""
    assert PROMTOOL, "promtool comes with the Debian package prometheus"
    assert [k for k in fault if dict(k)["__name__"] == "slurm_node_drain_reason_info"]
    assert not [k for k in healthy if dict(k)["__name__"] == "slurm_node_drain_reason_info"]
    ten = {"SlurmNodesDown", "SlurmExporterCollectorFailing"}
    thirty = SLURM_ALERTS - ten
    scenario = replay.Scenario("slurm faults", fault, [
        _check(4),
        _check(14, **dict.fromkeys(SLURM_ALERTS, "pending")),
        _check(16, **dict.fromkeys(ten, "firing"), **dict.fromkeys(thirty, "pending")),
        _check(34, **dict.fromkeys(ten, "firing"), **dict.fromkeys(thirty, "pending")),
        _check(36, **dict.fromkeys(SLURM_ALERTS, "firing")),
    ])
    proc = replay.run(PROMTOOL, tmp / "rules.yml", tmp / "replay", healthy, [scenario], FAULT_AT_S, END_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
