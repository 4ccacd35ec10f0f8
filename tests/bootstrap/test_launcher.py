"""The launcher: every ParallelCluster node's custom action. It reads its role's bootstrap pointer (an SSM
parameter), downloads the script the pointer names, refuses one whose sha256 differs, and runs it with the
pointer's arguments; in update mode only the digest it was given.

The AWS CLI is the sandbox's stub (support.sandbox): `ssm get-parameter` answers from ssm/, `s3 cp` from s3/, each
call logged; the command lines it takes are held against botocore's service models."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import botocore.session
import pytest
from fmcluster.bootstrap import render
from support.sandbox import BEHAVIOURS, SAFE_TOOLS, SHELLCHECK, _write_stub

POINTER = "arn:aws:ssm:eu-west-1:123456789012:parameter/fmcluster/demo/bootstrap/compute"
SCRIPT = "#!/bin/bash\nset -euo pipefail\nprintf '%s\\n' \"$@\" >\"${FMC_ROOT}/ran\"\n"


@dataclass
class Node:
    path: Path
    env: dict[str, str]

    @property
    def root(self) -> Path:
        return self.path / "root"

    def point(self, *fields: str) -> None:
        (self.path / "ssm").mkdir(exist_ok=True)
        (self.path / "ssm" / POINTER.replace(":", "_").replace("/", "_")).write_text(" ".join(fields) + "\n")

    def upload(self, name: str, content: str) -> str:
        (self.path / "s3" / name).write_text(content)
        return f"s3://cdk-hnb659fds-assets-123456789012-eu-west-1/{name}"

    def launch(self, *args: str) -> subprocess.CompletedProcess:
        launcher = self.path / render.LAUNCHER_NAME
        return subprocess.run(["bash", str(launcher), *args], env=self.env, capture_output=True, text=True,
                              timeout=60)

    def calls(self) -> list[str]:
        log = self.path / "calls.log"
        return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def node(tmp_path: Path) -> Node:
    """A node with the launcher, the AWS CLI's stub, `sleep`'s (logged, instant) and harmless real tools only."""
    for sub in ("stubs", "safebin", "s3", "root"):
        (tmp_path / sub).mkdir()
    for tool in SAFE_TOOLS:
        if real := shutil.which(tool, path="/usr/bin:/bin"):
            (tmp_path / "safebin" / tool).symlink_to(real)
    for name in ("aws", "sleep"):
        _write_stub(tmp_path / "stubs" / name, BEHAVIOURS.get(name, ""))
    (tmp_path / render.LAUNCHER_NAME).write_text(render.launcher_script())
    env = {"PATH": f"{tmp_path / 'stubs'}:{tmp_path / 'safebin'}", "SANDBOX": str(tmp_path),
           "FMC_ROOT": str(tmp_path / "root"), "FMC_RETRY_BASE_DELAY": "1", "LANG": "C", "HOME": str(tmp_path)}
    return Node(tmp_path, env)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_it_is_shellcheck_clean_strict_and_one_fixed_text() -> None:
    text = render.launcher_script()
    checked = subprocess.run([SHELLCHECK, "-s", "bash", "-"], input=text, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout
    assert [line for line in text.splitlines() if line and not line.startswith("#")][0] == "set -euo pipefail"
    # every deployed cluster's OnNodeConfigured names the launcher by its content hash (ParallelCluster never
    # updates OnNodeConfigured): other content is an update ParallelCluster refuses on every cluster
    assert hashlib.sha256(text.encode()).hexdigest() == render.LAUNCHER_SHA256, "see render.LAUNCHER_SHA256"


def test_it_reads_the_pointer_downloads_checks_and_runs_the_script_with_its_arguments(node: Node) -> None:
    url = node.upload("abc.sh", SCRIPT)
    node.point(url, _sha(SCRIPT), "s3://bucket/bundles.zip", "https://aps.example/api/v1/remote_write")
    result = node.launch("configure", POINTER)
    assert result.returncode == 0, result.stderr
    assert (node.root / "ran").read_text().splitlines() == ["s3://bucket/bundles.zip",
                                                            "https://aps.example/api/v1/remote_write"]
    # the pointer's Region is the one called; the script comes from where the pointer says
    read, fetch = node.calls()
    assert read == f"aws ssm get-parameter --region eu-west-1 --name {POINTER} --query Parameter.Value --output text"
    assert fetch.startswith(f"aws s3 cp --only-show-errors --region eu-west-1 {url} ")
    assert f"configure: running {url} (sha256 {_sha(SCRIPT)})" in result.stderr


def test_a_script_whose_sha256_differs_is_not_run(node: Node) -> None:
    url = node.upload("abc.sh", SCRIPT + "echo tampered\n")
    node.point(url, _sha(SCRIPT))
    result = node.launch("configure", POINTER)
    assert result.returncode == 1
    assert f"{url} has sha256 {_sha(SCRIPT + 'echo tampered' + chr(10))}, the pointer {POINTER} says " \
           f"{_sha(SCRIPT)}: not running it" in result.stderr
    assert not (node.root / "ran").exists()
    assert not list((node.root / "var/lib/fmcluster/launch").iterdir())  # nothing of it is kept
    assert (node.root / "var/lib/fmcluster/status").read_text().startswith("failed: ")


def test_update_runs_only_the_digest_it_was_given(node: Node) -> None:
    url = node.upload("abc.sh", SCRIPT)
    node.point(url, _sha(SCRIPT), "s3://bucket/bundles.zip")
    stale = node.launch("update", POINTER, "0" * 64)
    assert stale.returncode == 1 and "this update expects " + "0" * 64 in stale.stderr
    assert not [c for c in node.calls() if c.startswith("aws s3 ")]  # refused before downloading anything
    result = node.launch("update", POINTER, _sha(SCRIPT))
    assert result.returncode == 0, result.stderr
    assert (node.root / "ran").read_text() == "s3://bucket/bundles.zip\n"


def test_the_pointer_read_is_retried_with_backoff(node: Node) -> None:
    url = node.upload("abc.sh", SCRIPT)
    node.point(url, _sha(SCRIPT))
    (node.path / "fail").mkdir()
    (node.path / "fail" / "ssm-get-parameter").write_text("2\n")
    result = node.launch("configure", POINTER)
    assert result.returncode == 0, result.stderr
    assert [c for c in node.calls() if c.startswith("sleep")] == ["sleep 1", "sleep 2"]
    assert "attempt 2/5 failed" in result.stderr


@pytest.mark.parametrize(("args", "pointer", "message"), [
    ((), None, "usage: "),
    (("configure",), None, "usage: "),
    (("update", POINTER), None, "usage: "),
    (("update", POINTER, "abc"), None, "abc is not a sha256 digest"),
    (("configure", "/fmcluster/demo/bootstrap/compute"), None, "is not the ARN of an SSM parameter"),
    (("configure", POINTER), ("s3://b/k.sh",), "not '<s3 URL> <sha256> [args...]'"),
    (("configure", POINTER), ("https://b/k.sh", "0" * 64), "not an s3:// URL"),
    (("configure", POINTER), ("s3://b/k.sh", "xyz"), "xyz, not a sha256 digest"),
    (("configure", POINTER), None, "cannot read the bootstrap pointer"),  # no such parameter
])
def test_bad_arguments_and_pointers_stop_it_naming_what(node: Node, args, pointer, message) -> None:
    if pointer is not None:
        node.point(*pointer)
    (node.path / "fail").mkdir()
    result = node.launch(*args)
    assert result.returncode == 1 and message in result.stderr, result.stderr
    assert not (node.root / "ran").exists()


def test_its_aws_commands_are_the_services_own() -> None:
    """`aws ssm get-parameter --name` is GetParameter(Name), which takes an ARN, and Parameter.Value is in its
    answer; `aws s3 cp` of one object is GetObject (botocore's service models)."""
    session = botocore.session.get_session()
    get = session.get_service_model("ssm").operation_model("GetParameter")
    assert "Name" in get.input_shape.required_members and "ARN" in get.input_shape.members["Name"].documentation
    assert "Value" in get.output_shape.members["Parameter"].members
    assert "GetObject" in session.get_service_model("s3").operation_names
