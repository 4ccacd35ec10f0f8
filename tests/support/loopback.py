"""Loopback helpers of the end-to-end metrics tests (tests/observability_e2e): free ports, the Prometheus HTTP API,
waiting, and processes started in their own session so a test stops all of its children."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

WAIT_S = 40.0
SHUTDOWN_POLL_S = 0.01
"""How often a test's HTTP server thread looks for ``shutdown()``: that call waits for the loop's next look, which
http.server makes every 0.5 s by default (half a second of every test that stops a server)."""


def serve_in_thread(server: Any) -> threading.Thread:
    """Run ``server.serve_forever`` in a daemon thread that sees ``server.shutdown()`` within
    :data:`SHUTDOWN_POLL_S`."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True)
    thread.start()
    return thread


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(port: int, path: str, **params: str) -> Any:
    url = f"http://127.0.0.1:{port}{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (loopback only)
        return json.load(response)


def wait_until(what: str, probe: Callable[[], Any], logs: Callable[[], str], timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except OSError as exc:  # not listening yet
            last = exc
        else:
            if last:
                return last
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}\n{logs()}")


def spawn(tmp: Path, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    log = (tmp / f"{name}.log").open("wb")
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


BATCH_SEND_DEADLINE = "500ms"
"""How long the loopback agent holds a part-full batch before it sends it. The shipped config leaves it at
Prometheus' default (5s: asserted below), which on AMP costs nothing; a test waits it out after every change (its
1 s scrapes fill no 1,000-sample batch), so here the latency is scaled with the scrape interval. The queue's
capacity, batch size and shards stay as shipped."""


def agent_config(receiver_port: int, ports: dict[int, int], *, gpu: bool, slurm: bool = False) -> str:
    """The rendered node agent config (``render_node_agent_config``); only the remote-write endpoint, sigv4, the
    part-full batch's deadline (:data:`BATCH_SEND_DEADLINE`) and the target ports changed: ``ports`` maps each port
    the config scrapes to the loopback port serving it."""
    import yaml

    from fmcluster.bootstrap import collector

    config = yaml.safe_load(collector.render_node_agent_config("e2e", gpu=gpu, slurm=slurm, scrape_interval="1s"))
    targets = [t for job in config["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]]
    assert sorted(targets) == sorted(f"localhost:{port}" for port in ports), targets
    for job in config["scrape_configs"]:
        for sc in job["static_configs"]:
            sc["targets"] = [f"127.0.0.1:{ports[int(t.rsplit(':', 1)[1])]}" for t in sc["targets"]]
    (write,) = config["remote_write"]
    assert write["url"] == collector.NODE_REMOTE_WRITE_MARKER and "sigv4" in write
    del write["sigv4"]
    assert "batch_send_deadline" not in write["queue_config"], "the shipped deadline is the one to test with"
    write["queue_config"]["batch_send_deadline"] = BATCH_SEND_DEADLINE
    write["url"] = f"http://127.0.0.1:{receiver_port}/api/v1/write"
    return yaml.safe_dump(config, sort_keys=False)


AGENT_PROMETHEUS = Path(__file__).resolve().parents[2] / ".tools/prometheus3/usr/bin/prometheus"
"""The Prometheus 3 LTS line the nodes run as their agent (bootstrap/versions.yaml pins 3.5.4 from GitHub): Debian sid's
package, unpacked by ``make prometheus3`` (tools/fetch_prometheus3.sh). Debian's stable ``prometheus`` (2.42) is the
receiver that stands in for Amazon Managed Prometheus; it does not know the agent's ``--agent`` flag."""
AGENT_PROMTOOL = AGENT_PROMETHEUS.with_name("promtool")


def agent_unit_flags() -> list[str]:
    """The flags of the agent's ``ExecStart=`` in the unit the exporters step writes (templates/bootstrap/exporters.sh.j2),
    rendered for a GPU node: exactly what a node runs."""
    import shlex

    from fmcluster.bootstrap import render
    from support.sandbox import context_for, make_project

    step = render.render_files(context_for(make_project(), "gpu", "compute"))["steps/90-exporters.sh"]
    (line,) = [line for line in step.splitlines() if line.startswith("ExecStart=/usr/local/bin/prometheus ")]
    return shlex.split(line.removeprefix("ExecStart="))[1:]


def spawn_agent(tmp: Path, prometheus: str, agent_port: int, config: str, node: str, instance_id: str,
                instance_type: str) -> subprocess.Popen:
    """The node's Prometheus agent with the flags and environment the bootstrap's unit gives it
    (:func:`agent_unit_flags`), only its paths and port moved into the test's folder."""
    agent_yml = tmp / "agent.yml"
    agent_yml.write_text(config)
    env = {"PATH": "/usr/bin:/bin", "FMC_NODE": node, "FMC_INSTANCE_ID": instance_id, "FMC_INSTANCE_TYPE": instance_type}
    flags = agent_flags_moved(agent_yml, tmp / "agent-wal", agent_port)
    return spawn(tmp, "agent", [prometheus, *flags], env=env)


def agent_flags_moved(config: Path, wal: Path, port: int) -> list[str]:
    """:func:`agent_unit_flags` with the config file, the log directory and the listening address moved to a test's."""
    moved = {"--config.file": str(config), "--storage.agent.path": str(wal), "--web.listen-address": f"127.0.0.1:{port}"}
    flags = [f"{flag.split('=', 1)[0]}={moved[flag.split('=', 1)[0]]}" if flag.split("=", 1)[0] in moved else flag
             for flag in agent_unit_flags()]
    assert sum(flag.split("=", 1)[0] in moved for flag in flags) == len(moved), flags
    return flags
