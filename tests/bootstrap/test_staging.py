"""Monitoring artefacts staged at deploy (fmcluster.bootstrap.staging, fmcluster.stacks.staging): what the bundles
list, the asset each cluster stack publishes for it (its source the command ``fmcluster bootstrap stage``, its key the
sha256), what the node roles may read, the command itself against an HTTPS server on loopback (a certificate made
here, trusted through SSL_CERT_FILE as a corporate proxy's would be), and the exporters step on a node in the sandbox:
the staged copy first, the release's URL when it is missing or wrong, the sha256 checked either way.

The deploy-time path through the CDK CLI's publisher is the rehearsal's (tests/rehearsal: the objects in place, the
command never run)."""

from __future__ import annotations

import datetime
import hashlib
import http.server
import ipaddress
import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fmcluster.bootstrap import staging, versions
from support.loopback import serve_in_thread
from support.sandbox import Image, build_sandbox, context_for, make_project, sha

FMCLUSTER = str(Path(sys.executable).parent / "fmcluster")


# --- what the deployment stages ---------------------------------------------------------------------------------------

def test_each_cluster_stack_stages_what_its_bundles_list_and_its_nodes_may_read_it(synthesized) -> None:
    pinned = versions.load_versions()
    pins = {(art.url, art.sha256) for arch in ("x86_64", "aarch64") for art in (
        versions.resolve(pinned.node_exporter.tarball, "node_exporter.tarball", pinned.node_exporter.version, arch),
        versions.resolve(pinned.prometheus.tarball, "prometheus.tarball", pinned.prometheus.version, arch))}
    bundles_root = synthesized.outdir / "fmcluster-bundles"
    checked = 0
    for project in sorted(p.name for p in bundles_root.iterdir()):
        stack = f"{project}-cluster"
        listed = staging.from_manifests(bundles_root / project)
        assets = synthesized.staged_assets(stack)
        assert sorted(assets) == [a["sha256"] for a in listed], project
        for artefact in listed:
            assert assets[artefact["sha256"]] == staging.stage_command(artefact)
            assert (artefact["url"], artefact["sha256"]) in pins, artefact  # the pins, nothing else
        template = synthesized.template(stack)
        policies = json.dumps([r for r in template["Resources"].values()
                               if r["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")])
        for key in assets:
            assert f"/{key}" in policies, f"{project}: no node role may read the staged {key}"
        checked += bool(assets)
    assert checked >= 5, "examples of every Slurm orchestrator and self-managed stage their nodes' artefacts"


def test_a_node_without_exporters_lists_nothing() -> None:
    project = make_project()
    ctx = context_for(project, "gpu", "compute")
    assert [a["name"] for a in staging.staged(ctx)] == ["node_exporter", "prometheus"]
    quiet = ctx.model_copy(update={"options": ctx.options.model_copy(update={"exporters": False})})
    assert staging.staged(quiet) == []


# --- the command the publisher runs -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def https_server(tmp_path_factory) -> Iterator[tuple[str, Path, dict[str, bytes]]]:
    """An HTTPS server on 127.0.0.1 with a certificate made here; (base URL, the CA file, the files it serves)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder = tmp_path_factory.mktemp("https")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    files = {"/release/prometheus-9.9.9.linux-amd64.tar.gz": b"a release tarball\n" * 1000}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(body or b"not found")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    serve_in_thread(server)
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", folder / "cert.pem", files
    finally:
        server.shutdown()
        server.server_close()


def _stage(tmp_path: Path, ca: Path, url: str, digest: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SSL_CERT_FILE": str(ca), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return subprocess.run([FMCLUSTER, "bootstrap", "stage", "--name", "prometheus", "--sha256", digest, url],
                          env=env, capture_output=True, text=True, timeout=60, check=False)


def test_stage_prints_the_path_of_a_verified_copy_and_reuses_it(tmp_path, https_server) -> None:
    base, ca, files = https_server
    path, body = next(iter(files.items()))
    first = _stage(tmp_path, ca, base + path, hashlib.sha256(body).hexdigest())
    assert first.returncode == 0, first.stderr
    staged = Path(first.stdout.strip())  # stdout is the path alone: the publisher uploads that file
    assert first.stdout == f"{staged}\n" and staged.read_bytes() == body
    assert staged.parent == tmp_path / "cache/fmcluster/artefacts" / hashlib.sha256(body).hexdigest()
    # the next deploy (of another project) finds it in the cache, without the network
    again = _stage(tmp_path, ca, "https://127.0.0.1:9" + path, hashlib.sha256(body).hexdigest())
    assert again.returncode == 0 and again.stdout == first.stdout, again.stderr


def test_a_download_that_is_not_the_pinned_file_is_refused_and_nothing_is_kept(tmp_path, https_server) -> None:
    base, ca, files = https_server
    path, body = next(iter(files.items()))
    pinned = "0" * 64
    proc = _stage(tmp_path, ca, base + path, pinned)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (f"fmcluster: prometheus from {base + path} has sha256 {hashlib.sha256(body).hexdigest()}, "
                           f"not the pinned {pinned}: nothing staged (bootstrap/versions.yaml pins it)\n")
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]


@pytest.mark.parametrize(("url", "message"), [
    ("/release/missing.tar.gz", "cannot download prometheus from {base}/release/missing.tar.gz: Not Found"),
    ("http-scheme", "prometheus: http://127.0.0.1/x.tar.gz is not an https URL"),
])
def test_a_download_that_fails_says_so_in_one_line(tmp_path, https_server, url: str, message: str) -> None:
    base, ca, _ = https_server
    target = "http://127.0.0.1/x.tar.gz" if url == "http-scheme" else base + url
    proc = _stage(tmp_path, ca, target, "1" * 64)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == f"fmcluster: {message.format(base=base)}\n"


# --- on a node ---------------------------------------------------------------------------------------------------------

def _fake_prometheus(version: str) -> bytes:
    from support.sandbox import _targz

    top = f"prometheus-{version}.linux-amd64"
    return _targz({f"{top}/prometheus": (f"#!/bin/sh\necho 'prometheus, version {version} (branch: HEAD)'\n", 0o755)})


def _node(tmp_path: Path, staged: bool, bucket: str | None = "cdk-hnb659fds-assets-123456789012-us-east-1"):
    """A GPU node whose Prometheus is older than the pin (the step replaces it); the pin's digest is a fake tarball's,
    served by the release URL and, when ``staged``, by the deployment's bucket."""
    tarball = _fake_prometheus(versions.load_versions().prometheus.version)
    data = versions.load_versions().model_dump()
    data["prometheus"]["tarball"]["sha256"]["x86_64"] = sha(tarball)
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "compute",
                      versions=versions.Versions.model_validate(data))
    sb = build_sandbox(tmp_path / "sb", ctx, Image())
    (sb.root / "usr/local/bin/prometheus").write_text("#!/bin/sh\necho 'prometheus, version 2.53.4 (branch: HEAD)'\n")
    url = ctx.artifacts()["prometheus"].url
    (sb.path / "files" / url.rsplit("/", 1)[1]).write_bytes(tarball)
    if staged:
        (sb.path / "s3").mkdir(exist_ok=True)
        (sb.path / "s3" / sha(tarball)).write_bytes(tarball)
    if bucket is not None:
        sb.env["FMC_ARTEFACTS_BUCKET"] = bucket
    return ctx, sb, tarball, url


def _curl_calls(res, url: str) -> list[str]:
    return [c for c in res.calls if c.startswith("curl ") and url in c]


def test_the_node_takes_the_staged_copy_and_never_asks_the_release(tmp_path) -> None:
    ctx, sb, tarball, url = _node(tmp_path, staged=True)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    bucket = sb.env["FMC_ARTEFACTS_BUCKET"]
    assert f"aws s3 cp --only-show-errors s3://{bucket}/{sha(tarball)} " in "\n".join(res.calls)
    assert not _curl_calls(res, url)
    assert f"verified sha256 of prometheus {ctx.versions.prometheus.version} (staged in s3://{bucket})" in res.log
    assert ctx.versions.prometheus.version in subprocess.run([sb.root / "usr/local/bin/prometheus", "--version"],
                                                             capture_output=True, text=True, check=True).stdout


def test_a_copy_not_staged_comes_from_the_release_with_a_warning(tmp_path) -> None:
    ctx, sb, tarball, url = _node(tmp_path, staged=False)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert f"is not staged in s3://{sb.env['FMC_ARTEFACTS_BUCKET']} ({sha(tarball)}): downloading {url}" in res.out
    assert _curl_calls(res, url)
    assert not (sb.root / "var/lib/fmcluster/monitoring-degraded/prometheus-agent").exists()


def test_a_staged_copy_that_is_not_the_pin_is_discarded_for_the_release(tmp_path) -> None:
    ctx, sb, tarball, url = _node(tmp_path, staged=True)
    (sb.path / "s3" / sha(tarball)).write_bytes(b"tampered")
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert f"has sha256 {sha(b'tampered')}, not prometheus {ctx.versions.prometheus.version}'s" in res.out
    assert _curl_calls(res, url)


def test_without_a_bucket_the_node_asks_the_release_as_before(tmp_path) -> None:
    ctx, sb, tarball, url = _node(tmp_path, staged=True, bucket=None)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert not [c for c in res.calls if c.startswith("aws s3 cp") and sha(tarball) in c]
    assert _curl_calls(res, url)


def test_deploy_runs_the_cdk_cli_with_this_fmcluster_first_on_path(monkeypatch) -> None:
    """The publisher finds ``fmcluster`` on PATH; a user who runs a virtual environment's fmcluster without activating
    it still deploys."""
    import shutil

    from fmcluster.cli.deploy import cdk_env

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    env = cdk_env()
    assert env["PATH"].endswith(":/usr/bin:/bin")
    assert shutil.which(staging.STAGE_COMMAND[0], path=env["PATH"]) == FMCLUSTER
