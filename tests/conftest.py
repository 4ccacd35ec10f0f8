"""Fixtures: an offline guard for every test, and one synthesis of every project per test session."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import pytest
import support
from filelock import FileLock
from support import ALL_FILES, BLOCKED, ROOT, Synthesized


def _one_model_loader_and_no_default_amis() -> None:
    """What the suite's own boto3 and moto sessions cost, not what the product does. botocore gives every session a
    model loader of its own, and moto makes new sessions (boto3's default one at each ``mock_aws()``, more for its
    Region lists): each parsed EC2's ~6 MB model again. Here every botocore session of the process takes
    :func:`fmcluster.aws.session.shared_loader`, the one loader per data path the CLI's sessions share already
    (tests/aws/test_session.py puts botocore's own back to prove the CLI shares it by itself). And moto's EC2 in this
    process loads no default AMIs (18,000 images per backend, ~0.25 s each ``mock_aws()``): no product code and no
    test reads an image, and an instance launched from an unknown AMI is the same either way (moto's
    ``MOTO_EC2_LOAD_DEFAULT_AMIS=false``, set in this process alone: the rehearsal's moto server keeps its images)."""
    import botocore.session
    import moto.settings

    from fmcluster.aws.session import shared_loader

    botocore.session.create_loader = shared_loader
    moto.settings.ec2_load_default_amis = lambda: False


_one_model_loader_and_no_default_amis()


@pytest.fixture(autouse=True, scope="session")
def _no_network() -> None:
    socket.socket.connect = support._guarded_connect  # type: ignore[method-assign]
    socket.create_connection = support._guarded_create_connection  # type: ignore[assignment]
    socket.getaddrinfo = support._guarded_getaddrinfo  # type: ignore[assignment]
    yield
    socket.socket.connect = support._real_connect  # type: ignore[method-assign]
    socket.create_connection = support._real_create_connection  # type: ignore[assignment]
    socket.getaddrinfo = support._real_getaddrinfo  # type: ignore[assignment]


@pytest.fixture(autouse=True)
def _fail_on_network() -> None:
    BLOCKED.clear()
    yield
    attempts, BLOCKED[:] = list(BLOCKED), []
    if attempts:
        pytest.fail(f"test tried to leave the machine: {attempts}; use moto or botocore's Stubber")


@pytest.fixture(autouse=True)
def _no_state_between_invocations() -> None:
    """What one CLI invocation leaves in this process does not reach the next test: the AWS session that error
    messages name (`fmcluster.aws.session._current`), and the width a module-level rich Console froze from COLUMNS
    when its module was first imported under another test's COLUMNS (rich reads COLUMNS once, in __init__; unset,
    it reads the live value). A user's process runs one command; the suite runs thousands in a worker, in any order."""
    yield
    session = sys.modules.get("fmcluster.aws.session")
    if session is not None:
        session._current.clear()
    console_type = getattr(sys.modules.get("rich.console"), "Console", None)
    if console_type is None:
        return
    for name, module in list(sys.modules.items()):
        if name.startswith("fmcluster.cli") and module is not None:
            for value in vars(module).values():
                if isinstance(value, console_type):
                    value._width = None


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Synthesized:
    """Every project and example, synthesized once per test run: with pytest-xdist the first worker
    builds the cloud assembly and the others wait for it (a file lock) and read it."""
    from fmcluster.stacks.app import build, new_app

    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent
    outdir = shared / "synthesized-cdk.out"
    outcome = shared / "synthesized-outcome.json"
    with FileLock(str(shared / "synthesized.lock")):
        if not outcome.exists():
            app = new_app(outdir=str(outdir), context=json.loads((ROOT / "cdk.json").read_text())["context"])
            build(app, [str(p) for p in ALL_FILES])
            error = None
            try:
                app.synth()
            except RuntimeError as exc:  # cdk-nag refused; the report says why and the nag test shows it
                error = str(exc)
            outcome.write_text(json.dumps({"error": error}))
    error = json.loads(outcome.read_text())["error"]
    manifest = json.loads((outdir / "manifest.json").read_text()) if (outdir / "manifest.json").exists() else {"artifacts": {}}
    templates = {
        name: json.loads((outdir / art["properties"]["templateFile"]).read_text())
        for name, art in manifest["artifacts"].items()
        if art["type"] == "aws:cloudformation:stack"
    }
    report_path = outdir / "validation-report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    return Synthesized(outdir, templates, report, error)


INSTALL_HINT = "promtool not found; install it with `apt-get install prometheus` (Debian/Ubuntu)"


@pytest.fixture(scope="session")
def promtool() -> str:
    """Path to promtool. CI (CI=true) must have it; a workstation without it skips these tests."""
    path = shutil.which("promtool")
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(INSTALL_HINT + " -- CI must install it (.ci/run)", pytrace=False)
        pytest.skip(INSTALL_HINT)
    return path


@pytest.fixture(scope="session")
def agent_promtool() -> str:
    """promtool of the Prometheus 3 line the nodes run as their agent (``make prometheus3``): it checks the agent's
    config as the agent reads it. CI must have it; a workstation without it skips."""
    from support.loopback import AGENT_PROMTOOL

    if not AGENT_PROMTOOL.is_file():
        hint = "Prometheus 3's promtool not found; `make prometheus3` fetches it (tools/fetch_prometheus3.sh)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(hint + " -- CI must have it (.ci/run runs make test, which runs it)", pytrace=False)
        pytest.skip(hint)
    return str(AGENT_PROMTOOL)


SLOW_FIRST = ("tests/rehearsal/", "tests/observability_e2e/", "tests/bootstrap/test_slurm_teams_real.py",
              "tests/aws/test_failures.py::test_an_endpoint_that")
"""Tests that take tens of seconds each: started first, so that with pytest-xdist they run beside the many short
ones instead of after them (collection order would leave them for last and the run would end on one busy worker).
`make test` runs `--dist worksteal`: each worker starts on half of the collection (the first half holds these, in
a row), and a worker that runs dry takes half of the other's queue, so both end together. (`--dist load`, xdist's
default, sends the first quarter of each worker's share as one block and refills only a worker that is not busy
with a long test: the first worker carried every slow test and about 300 others before it got anything else.)"""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not any(item.nodeid.startswith(prefix) for prefix in SLOW_FIRST))


@pytest.fixture(scope="session")
def real_slurm(tmp_path_factory: pytest.TempPathFactory):
    """A real Slurm on loopback (MariaDB, slurmdbd, slurmctld, one slurmd: support.real_slurm), started once per
    session (per xdist worker) and shared; each test that takes it starts from an empty accounting database
    (``real_slurm.reset()``, by the ``slurm`` fixture). CI (CI=true) must be able to start it; a workstation that
    cannot (not root, or the packages missing) skips these tests."""
    from support import real_slurm as rs
    why = rs.missing()
    if why is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{rs.INSTALL_HINT} ({why}) -- CI must install it (.ci/run)", pytrace=False)
        pytest.skip(f"{rs.INSTALL_HINT} ({why})")
    # not under pytest's 0700 tmp: the members' sbatch reads slurm.conf there
    tmp = Path(tempfile.mkdtemp(prefix="fmcluster-slurm-"))
    tmp.chmod(0o755)
    try:
        sl = rs.start(tmp)
        try:
            yield sl
        finally:
            sl.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
