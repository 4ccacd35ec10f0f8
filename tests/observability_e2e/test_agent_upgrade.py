"""A node booted before the move to Prometheus 3 keeps its 2.x agent's write-ahead log in
/var/lib/fmcluster-prometheus-agent; when its bundle runs again (ParallelCluster's head node on an update) the step
installs 3.x and restarts the agent on the same directory. The real 3.x agent, with the unit's flags, replays the
real 2.x agent's log and starts (Debian stable's 2.42 writes it, as the 2.53 the nodes ran did: same record format)."""

from __future__ import annotations

import os
import shutil
import urllib.request

import pytest
from support.loopback import AGENT_PROMETHEUS, agent_flags_moved, free_port, spawn, stop, wait_until

OLD = shutil.which("prometheus")
IN_CI = bool(os.environ.get("CI"))
pytestmark = pytest.mark.skipif(not (OLD and AGENT_PROMETHEUS.is_file()) and not IN_CI,
                                reason="needs Debian's prometheus and Prometheus 3 (make prometheus3)")

CONFIG = """global: {scrape_interval: 1s}
scrape_configs:
  - job_name: self
    static_configs: [{targets: ["127.0.0.1:%d"]}]
remote_write:
  - url: http://127.0.0.1:9/api/v1/write
"""


def _ready(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2) as response:  # noqa: S310 (loopback)
        return response.status == 200


def test_the_3x_agent_replays_the_2x_agent_s_log_on_the_same_directory(tmp_path) -> None:
    port = free_port()
    config = tmp_path / "agent.yml"
    config.write_text(CONFIG % port)
    wal = tmp_path / "agent-wal"
    logs = lambda: "\n".join(p.read_text() for p in tmp_path.glob("*.log"))  # noqa: E731

    old = spawn(tmp_path, "old", [OLD, "--enable-feature=agent", f"--config.file={config}",
                                  f"--storage.agent.path={wal}", f"--web.listen-address=127.0.0.1:{port}"])
    try:
        wait_until("the 2.x agent's log to hold samples",
                   lambda: _ready(port) and any(f.stat().st_size > 0 for f in (wal / "wal").glob("0*")), logs)
    finally:
        stop(old)
    new = spawn(tmp_path, "new", [str(AGENT_PROMETHEUS), *agent_flags_moved(config, wal, port)])
    try:
        wait_until("the 3.x agent on the 2.x agent's directory", lambda: _ready(port), logs)
        text = (tmp_path / "new.log").read_text()
        assert "WAL segment loaded" in text and "Agent WAL storage started" in text, text
        assert "level=ERROR" not in text, text
    finally:
        stop(new)
