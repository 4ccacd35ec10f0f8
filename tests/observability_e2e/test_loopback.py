"""End to end on loopback: the project's own exporters, agent config and rules, run for real.

One GPU node, all on 127.0.0.1 with free ports:

- a real node_exporter (Debian ``prometheus-node-exporter``) with the bootstrap unit's textfile flag,
  reading what the rendered EFA counters script (``files/fmcluster-efa-counters``) wrote from a fixture
  sysfs; its ``--path.procfs`` is a copy of /proc (links) whose ``1/mounts`` adds an FSx for Lustre
  mount on a plain directory (no root, no Lustre server on loopback);
- a small HTTP server serving dcgm-exporter text for every field of the counters file we ship;
- a Prometheus agent running the rendered per-node config (``render_node_agent_config``) with the
  bootstrap's flags; the test changes the remote-write URL (to the receiver), removes ``sigv4``, sends a
  part-full batch after 0.5 s instead of Prometheus' default 5 s (``support.loopback.BATCH_SEND_DEADLINE``) and
  points the two ``localhost:<table port>`` targets at the free ports the exporters got (asserted to
  be the table's ports first);
- a Prometheus receiver (``--web.enable-remote-write-receiver``) loading ``rules_yaml()`` as shipped,
  evaluating every second.

Asserted through the receiver's HTTP API: every metric the exporter table lists for a GPU node
arrives, carrying the node's external labels; every Prometheus panel of every dashboard runs and
returns data; injected faults (XID 79, a double-bit ECC increment, EFA error counters increasing, the
Lustre mount gone, node_exporter stopped) each make their alert pending or firing.

Alerts whose ``for:`` is longer than a test can wait (FsxMountMissing, ExporterTargetDown: 10m) and the
dead node (NodeNotReporting: nothing arrives at all, so its last samples must first leave the rule's
2-minute window) are then proven to fire by replay (``support.replay``): the series the receiver held when the
node was healthy and after each fault, label for label, go through the real ``promtool test rules``
over 20 simulated minutes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.error
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from fmcluster.bootstrap import render
from support import replay
from support.loopback import AGENT_PROMETHEUS, agent_config, serve_in_thread, spawn_agent
from support.loopback import free_port as _free_port
from support.loopback import get as _get
from support.loopback import spawn as _spawn
from support.loopback import stop as _stop
from support.loopback import wait_until as _wait_until
from support.sandbox import context_for, make_project

from fmcluster.generate import dashboards, metrics, rules

PROMETHEUS = shutil.which("prometheus")  # the receiver: Debian stable's, the stand-in for Amazon Managed Prometheus
AGENT = str(AGENT_PROMETHEUS) if AGENT_PROMETHEUS.is_file() else None  # the node's agent: Prometheus 3 (make prometheus3)
PROMTOOL = shutil.which("promtool")
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
AMTOOL = shutil.which("amtool")

NODE = "ip-10-0-1-23"
INSTANCE_ID = "i-0123456789abcdef0"
INSTANCE_TYPE = "p5.48xlarge"
GPUS = 8
EFA_DEVICE = "rdmap16s27"

# Skipped only outside CI: .ci/run sets CI=true and installs the packages, so there a missing one fails.
IN_CI = bool(os.environ.get("CI"))
pytestmark = pytest.mark.skipif(
    not (PROMETHEUS and AGENT and NODE_EXPORTER) and not IN_CI,
    reason="needs the Debian packages prometheus and prometheus-node-exporter (.ci/run installs them) and "
           "Prometheus 3 for the agent (make prometheus3)",
)


# --- the static DCGM exporter ---------------------------------------------------------------------


@dataclass
class DcgmState:
    """What the fake dcgm-exporter reports; tests change it to inject faults."""

    xid: dict[int, int] = field(default_factory=dict)
    dbe: dict[int, int] = field(default_factory=dict)


def dcgm_text(state: DcgmState) -> str:
    """dcgm-exporter's text format for every field of our counters file, one series per GPU."""
    fields = metrics.dcgm_fields()
    driver = [name for name, kind in fields.items() if kind == "label"]
    lines: list[str] = []
    for name, kind in fields.items():
        if kind == "label":
            continue
        lines.append(f"# HELP {name} {name}.")
        lines.append(f"# TYPE {name} {kind}")
        for gpu in range(GPUS):
            labels = {
                "gpu": str(gpu), "UUID": f"GPU-00000000-0000-0000-0000-00000000000{gpu}",
                "device": f"nvidia{gpu}", "modelName": "NVIDIA H100 80GB HBM3", "Hostname": NODE,
                **{label: "580.105.08" for label in driver},
            }
            value = {"DCGM_FI_DEV_XID_ERRORS": state.xid.get(gpu, 0),
                     "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": state.dbe.get(gpu, 0),
                     "DCGM_FI_DEV_GPU_TEMP": 40}.get(name, 0)
            rendered = ",".join(f'{k}="{v}"' for k, v in labels.items())
            lines.append(f"{name}{{{rendered}}} {value}")
    return "\n".join(lines) + "\n"


def _dcgm_server(state: DcgmState, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = dcgm_text(state).encode()
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    serve_in_thread(server)
    return server


# --- the stack ------------------------------------------------------------------------------------


@dataclass
class Stack:
    tmp: Path
    receiver_port: int
    node_exporter: subprocess.Popen
    dcgm: DcgmState
    efa_script: Path
    procfs: Path
    procs: list[subprocess.Popen]

    def logs(self) -> str:
        out = []
        for log in sorted(self.tmp.glob("*.log")):
            out.append(f"--- {log.name} (tail)\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:]))
        return "\n".join(out)

    def set_efa_counter(self, counter: str, value: int) -> None:
        (self.tmp / "sys/class/infiniband" / EFA_DEVICE / "ports/1/hw_counters" / counter).write_text(f"{value}\n")
        self.run_efa_script()

    def run_efa_script(self) -> None:
        proc = subprocess.run(["bash", str(self.efa_script), "--once"], capture_output=True, text=True, timeout=20,
                              env={"FMC_ROOT": str(self.tmp), "PATH": "/usr/bin:/bin"})
        assert proc.returncode == 0, proc.stderr

    def alerts(self) -> dict[str, str]:
        """alertname -> state of this node's active alerts on the receiver."""
        data = _get(self.receiver_port, "/api/v1/alerts")["data"]["alerts"]
        return {a["labels"]["alertname"]: a["state"] for a in data if a["labels"].get("node") == NODE}

    def snapshot(self) -> replay.Snapshot:
        """Every series of this node the receiver answers with now, less alert state and recorded series."""
        result = _get(self.receiver_port, "/api/v1/query", query=f'{{node="{NODE}"}}')["data"]["result"]
        return replay.snapshot(result, {"ALERTS", "ALERTS_FOR_STATE", *rules.recorded_metrics()})


LUSTRE_DEVICE = "10.0.1.5@tcp:/abcdefgh"


def _procfs_with_lustre(tmp: Path) -> Path:
    """/proc for node_exporter, with an FSx for Lustre mount added to ``1/mounts`` (what its filesystem
    collector reads); every other entry links to the real /proc. The mount point is a plain directory,
    which statfs answers for: a loopback test has neither root nor a Lustre server to mount."""
    procfs = tmp / "proc"
    (procfs / "1").mkdir(parents=True)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            (procfs / entry).symlink_to(Path("/proc") / entry)
    mountpoint = tmp / "fsx"
    mountpoint.mkdir()
    mounts = Path("/proc/1/mounts").read_text()
    (procfs / "1/mounts").write_text(mounts + f"{LUSTRE_DEVICE} {mountpoint} lustre rw,relatime,flock 0 0\n")
    return procfs


def _unmount_lustre(procfs: Path) -> None:
    mounts = procfs / "1/mounts"
    mounts.write_text("".join(line for line in mounts.read_text().splitlines(keepends=True) if " lustre " not in line))


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    procs: list[subprocess.Popen] = []
    server: ThreadingHTTPServer | None = None
    try:
        # EFA counters: the rendered script over a fixture sysfs.
        script = tmp_path / "fmcluster-efa-counters"
        script.write_text(render.render_files(context_for(make_project(), "gpu", "compute"))["files/fmcluster-efa-counters"])
        counters = tmp_path / "sys/class/infiniband" / EFA_DEVICE / "ports/1/hw_counters"
        counters.mkdir(parents=True)
        for counter in metrics.EFA_COUNTERS:
            (counters / counter).write_text("0\n")
        textfile = tmp_path / "var/lib/fmcluster/textfile"
        _monitoring_status(textfile, missing=0)

        procfs = _procfs_with_lustre(tmp_path)

        ports = {name: _free_port() for name in ("receiver", "node_exporter", "dcgm", "agent")}
        dcgm = DcgmState()
        server = _dcgm_server(dcgm, ports["dcgm"])

        (tmp_path / "rules.yml").write_text(rules.rules_yaml())
        (tmp_path / "receiver.yml").write_text(yaml.safe_dump(
            {"global": {"evaluation_interval": "1s"}, "rule_files": [str(tmp_path / "rules.yml")]}))
        procs.append(_spawn(tmp_path, "receiver", [
            PROMETHEUS, f"--config.file={tmp_path / 'receiver.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{ports['receiver']}", "--web.enable-remote-write-receiver"]))

        node_exporter = _spawn(tmp_path, "node_exporter", [
            NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{ports['node_exporter']}",
            f"--collector.textfile.directory={textfile}", f"--path.procfs={procfs}"])
        procs.append(node_exporter)

        config = agent_config(ports["receiver"], {metrics.NODE.port: ports["node_exporter"],
                                                  metrics.DCGM.port: ports["dcgm"]}, gpu=True)
        procs.append(spawn_agent(tmp_path, AGENT, ports["agent"], config, NODE, INSTANCE_ID, INSTANCE_TYPE))

        result = Stack(tmp_path, ports["receiver"], node_exporter, dcgm, script, procfs, procs)
        result.run_efa_script()
        _wait_until("the receiver to load the rules", lambda: _get(ports["receiver"], "/api/v1/rules")["data"]["groups"],
                    result.logs)
        yield result
    finally:
        for proc in reversed(procs):
            _stop(proc)
        if server is not None:
            server.shutdown()
            server.server_close()


GRAFANA_VARIABLES = {"$node": NODE, "$__rate_interval": "5m", "$__interval": "1m"}
"""What Grafana substitutes before a panel's query reaches Prometheus."""


def _panel_queries(*, slurm: bool = False) -> Iterator[tuple[str, str]]:
    """Every Prometheus query of the GPU node's dashboards (``slurm``: of the Slurm dashboard only)."""
    for uid, model in dashboards.build_dashboards("e2e").items():
        if ("slurm" in uid) is not slurm:
            continue
        for panel in model.get("panels", []):
            for inner in [panel, *panel.get("panels", [])]:
                for target in inner.get("targets", []):
                    if target["datasource"]["type"] == "prometheus":
                        expr = target["expr"]
                        for variable, value in GRAFANA_VARIABLES.items():
                            expr = expr.replace(variable, value)
                        assert "$" not in expr, f"{uid}/{inner['title']}: unsubstituted variable in {expr}"
                        yield f"{uid}/{inner['title']}", expr


def _empty_panels(port: int, queries: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (where, query) of ``queries`` that return no data; a query the receiver rejects fails the test."""
    empty = []
    for where, expr in queries:
        try:
            result = _get(port, "/api/v1/query", query=expr)["data"]["result"]
        except urllib.error.HTTPError as exc:
            pytest.fail(f"{where}: {expr}: {exc.read().decode(errors='replace')}")
        if not result:
            empty.append((where, expr))
    return empty


def _names(port: int) -> set[str]:
    return set(_get(port, "/api/v1/label/__name__/values")["data"])


def _monitoring_status(textfile: Path, missing: int) -> None:
    """fmcluster-monitoring.prom as the exporters step writes it (its printf line, run by bash)."""
    step = render.render_files(context_for(make_project(), "gpu", "compute"))["steps/90-exporters.sh"]
    (line,) = [ln for ln in step.splitlines() if ln.lstrip().startswith("printf '# HELP fmcluster_monitoring_missing")]
    textfile.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(["bash", "-c", line.strip().replace('"${n}"', str(missing)).rstrip(" \\")],
                         capture_output=True, text=True, check=True).stdout
    (textfile / "fmcluster-monitoring.prom").write_text(out)


def test_every_table_metric_arrives_and_injected_faults_fire_their_alerts(stack: Stack):
    expected = metrics.produced(gpu=True, slurm=False)  # the Slurm exporter's: test_slurm_loopback.py
    _wait_until("every metric of the exporter table", lambda: expected <= _names(stack.receiver_port), stack.logs)
    missing = expected - _names(stack.receiver_port)
    assert not missing

    # Every table metric came from this node's agent, named by the unit's environment (external labels).
    series = [s for s in _get(stack.receiver_port, "/api/v1/series", **{"match[]": '{node="%s"}' % NODE})["data"]
              if s["__name__"] in expected]  # not the receiver's own ALERTS series
    assert {s["__name__"] for s in series} >= expected
    assert {(s["instance_id"], s["instance_type"], s["project"]) for s in series} == {(INSTANCE_ID, INSTANCE_TYPE, "e2e")}
    up = {s["job"] for s in series if s["__name__"] == "up"}
    assert up == {job for job, _port in metrics.scrape_targets(gpu=True)}

    # The agent's keep-list: nothing but the table's metrics (and Prometheus' own per-target series) leaves the node.
    sent = {s["__name__"] for s in _get(stack.receiver_port, "/api/v1/series", **{"match[]": f'{{node="{NODE}"}}'})["data"]}
    extra = {n for n in sent - expected if not n.startswith("scrape_") and n not in ("ALERTS", "ALERTS_FOR_STATE")}
    assert not extra, f"the agent sent metrics outside the exporter table: {sorted(extra)[:10]}"
    # The plan's series estimate counts what arrives, for every dimension this host does not decide
    # (mounts, network devices and disks are the host's): 8 GPUs, 1 EFA device, this host's CPUs.
    cpus = sum(1 for line in Path("/proc/stat").read_text().splitlines() if line[:3] == "cpu" and line[3:4].isdigit())
    estimate = metrics.node_series(gpus=GPUS, efa_devices=1, vcpus=cpus, nvme_drives=0)
    arrived: dict[str, int] = {}
    dims = metrics.dimensions()
    for s in series:
        arrived[dims[s["__name__"]]] = arrived.get(dims[s["__name__"]], 0) + 1
    for dim in ("node", "cpu", "gpu", "efa_device", "target"):
        assert arrived[dim] == estimate.per_dimension[dim], (dim, arrived, estimate)

    # The catalog rule sees all 8 GPUs of a p5.48xlarge through the shipped recording rule.
    count = _get(stack.receiver_port, "/api/v1/query", query=f'count(DCGM_FI_DEV_GPU_TEMP{{node="{NODE}"}})')
    assert count["data"]["result"][0]["value"][1] == str(GPUS)

    faults = {"GpuXid79FellOffBus", "GpuEccDoubleBitErrors", "EfaWorkRequestErrors", "EfaUnresponsiveRemote",
              "FsxMountMissing", "ExporterTargetDown"}
    time.sleep(3)  # a few evaluations over healthy series
    before = stack.alerts()
    assert not faults & set(before), f"fault alerts active before any fault: {before}"
    assert "NodeNotReporting" not in before
    healthy = stack.snapshot()

    stack.dcgm.xid[3] = 79
    stack.dcgm.dbe[5] = 1
    stack.set_efa_counter("rdma_read_wr_err", 4)
    stack.set_efa_counter("unresponsive_remote_events", 2)
    firing = {"GpuXid79FellOffBus", "GpuEccDoubleBitErrors", "EfaWorkRequestErrors", "EfaUnresponsiveRemote"}
    alerts = _wait_until(f"{sorted(firing)} to fire",
                         lambda: (a := stack.alerts()) and all(a.get(n) == "firing" for n in firing) and a,
                         stack.logs)
    detail = _get(stack.receiver_port, "/api/v1/alerts")["data"]["alerts"]
    by_name = {a["labels"]["alertname"]: a["labels"] for a in detail if a["labels"].get("node") == NODE}
    assert by_name["GpuXid79FellOffBus"]["gpu"] == "3" and by_name["GpuXid79FellOffBus"]["xid"] == "79"
    assert by_name["GpuEccDoubleBitErrors"]["gpu"] == "5"
    assert by_name["EfaWorkRequestErrors"]["device"] == EFA_DEVICE
    assert "ExporterTargetDown" not in alerts

    # Every Prometheus panel of every dashboard runs on the receiver without error and returns data
    # from this node. Panels that show problems (non-zero XIDs, nodes without Lustre) are empty on a
    # healthy node: they must return data once the fault is there (XID now, Lustre below).
    empty = _empty_panels(stack.receiver_port, _panel_queries())
    _unmount_lustre(stack.procfs)
    alerts = _wait_until("FsxMountMissing (pending: its for: is 10m)",
                         lambda: (a := stack.alerts()).get("FsxMountMissing") in ("pending", "firing") and a,
                         stack.logs)
    assert "ExporterTargetDown" not in alerts
    lustre_gone = stack.snapshot()
    still_empty = _empty_panels(stack.receiver_port, empty)
    assert not still_empty, "panels without data:\n" + "\n".join(f"{w}: {e}" for w, e in still_empty)

    _stop(stack.node_exporter)
    alerts = _wait_until("ExporterTargetDown for node-exporter (pending: its for: is 10m)",
                         lambda: (a := stack.alerts()).get("ExporterTargetDown") in ("pending", "firing") and a,
                         stack.logs)
    down = [a["labels"] for a in _get(stack.receiver_port, "/api/v1/alerts")["data"]["alerts"]
            if a["labels"]["alertname"] == "ExporterTargetDown"]
    assert [(d["job"], d["node"]) for d in down] == [(metrics.NODE.job, NODE)]
    # dcgm-exporter still answers, so the node as a whole still reports.
    assert "NodeNotReporting" not in alerts
    exporter_down = stack.snapshot()

    _replay_long_alerts(stack.tmp, healthy, lustre_gone, exporter_down)


FAULT_AT_S = 5 * 60
END_S = 20 * 60
WATCHED = ("FsxMountMissing", "ExporterTargetDown", "NodeNotReporting")


def _alerts_at(minute: int, *expected: tuple[str, str, dict[str, str]]) -> dict[str, Any]:
    """A promtool check: at ``minute``, exactly ``expected`` (name, state, extra labels) of the WATCHED alerts."""
    node = {"node": NODE, "instance_id": INSTANCE_ID, "instance_type": INSTANCE_TYPE}
    samples = []
    for name, state, extra in expected:
        labels = {"alertname": name, "alertstate": state, **node, **extra}
        samples.append({"labels": "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}", "value": 1})
    return {"expr": f'count by (alertname, alertstate, node, instance_id, instance_type, job) '
                    f'(ALERTS{{alertname=~"{"|".join(WATCHED)}"}})',
            "eval_time": f"{minute}m", "exp_samples": samples}


def _replay_long_alerts(tmp: Path, healthy: replay.Snapshot, lustre_gone: replay.Snapshot,
                        exporter_down: replay.Snapshot) -> None:
    """Fault at minute 5: each long alert pending before its ``for:`` has passed, firing after, no other."""
    assert PROMTOOL, "promtool comes with the Debian package prometheus"
    # The fault snapshots really lost what the fault takes away (else the replay proves nothing).
    assert not [k for k in lustre_gone if ("fstype", "lustre") in k] and [k for k in healthy if ("fstype", "lustre") in k]
    lost = [k for k in exporter_down if ("job", metrics.NODE.job) in k
            and dict(k)["__name__"] != "up" and not dict(k)["__name__"].startswith("scrape_")]
    assert not lost, lost[:3]
    job = {"job": metrics.NODE.job}
    scenarios = [
        # The mount is gone at 5m: pending from then, firing once its for: (10m) has passed.
        replay.Scenario("lustre unmounted", lustre_gone, [
            _alerts_at(4), _alerts_at(14, ("FsxMountMissing", "pending", {})),
            _alerts_at(16, ("FsxMountMissing", "firing", {}))]),
        # node_exporter stopped at 5m: up=0 for its job, its series stale; dcgm-exporter still answers.
        replay.Scenario("node_exporter stopped", exporter_down, [
            _alerts_at(4), _alerts_at(14, ("ExporterTargetDown", "pending", job)),
            _alerts_at(16, ("ExporterTargetDown", "firing", job))]),
        # The node dies at 5m: its agent sends nothing more. Its last samples leave the rule's 2-minute
        # window at 7m, so the alert is pending from 7m15s and fires after its for: (2m), ~4 minutes in.
        replay.Scenario("node dead", None, [
            _alerts_at(7), _alerts_at(8, ("NodeNotReporting", "pending", {})),
            _alerts_at(10, ("NodeNotReporting", "firing", {})), _alerts_at(19, ("NodeNotReporting", "firing", {}))]),
    ]
    proc = replay.run(PROMTOOL, tmp / "rules.yml", tmp / "replay", healthy, scenarios, FAULT_AT_S, END_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.skipif(not AMTOOL and not IN_CI, reason="needs amtool (Debian prometheus-alertmanager; .ci/run installs it)")
def test_amtool_accepts_the_rendered_alertmanager_definition(tmp_path: Path):
    definition = yaml.safe_load(rules.alertmanager_definition("arn:aws:sns:us-east-1:123456789012:fmcluster-alerts",
                                                              "us-east-1"))
    config = tmp_path / "alertmanager.yml"
    config.write_text(definition["alertmanager_config"])
    proc = subprocess.run([AMTOOL, "check-config", str(config)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout + proc.stderr
