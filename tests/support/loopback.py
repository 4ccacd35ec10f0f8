"""Loopback helpers of the end-to-end metrics tests (tests/observability_e2e): free ports, the Prometheus HTTP API,
waiting, and processes started in their own session so a test stops all of its children."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

WAIT_S = 40.0


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
