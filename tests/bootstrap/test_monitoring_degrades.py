"""Monitoring degrades a node instead of failing it (issue 45): a monitoring download that never comes (node_exporter's
or Prometheus's tarball, NVIDIA's repository for DCGM and dcgm-exporter) is a warning, the node finishes its bootstrap
healthy, the step names what is missing, and node_exporter's textfile collector says how many are missing (alert
MonitoringComponentMissing, tests/generate/rules/targets.test.yaml). The next run of the step tries again."""

from __future__ import annotations

from support.sandbox import REAL, Image, build_sandbox, context_for, make_project


def _sandbox(tmp_path, *old: str):
    """A node whose image lacks dcgm-exporter; each of ``old`` (node_exporter, prometheus) is an older release the
    step must replace by downloading the pinned one."""
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "compute")
    sb = build_sandbox(tmp_path / "sb", ctx, Image(dcgm_exporter=False))
    for name in old:
        (sb.root / "usr/local/bin" / name).write_text(f"#!/bin/sh\necho '{name}, version 1.0.0 (branch: HEAD)'\n")
    return ctx, sb


def _missing(sb) -> str:
    return (sb.root / "var/lib/fmcluster/textfile/fmcluster-monitoring.prom").read_text()


def test_a_node_whose_exporter_downloads_fail_still_joins_with_the_alert_metric(tmp_path):
    ctx, sb = _sandbox(tmp_path, "prometheus")
    sb.fail_download(ctx.artifacts()["prometheus"].url.rsplit("/", 1)[1], 99)  # GitHub never answers
    sb.fail_download(ctx.nvidia_repo_key.file, 99)  # nor NVIDIA's repository (DCGM, dcgm-exporter)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert "bootstrap complete" in res.out
    assert "WARNING: monitoring degraded: prometheus-agent is not installed" in res.out
    assert "WARNING: monitoring degraded: dcgm-exporter is not installed" in res.out
    assert "fmcluster_monitoring_missing 2\n" in _missing(sb)
    degraded = sb.root / "var/lib/fmcluster/monitoring-degraded"
    assert sorted(p.name for p in degraded.iterdir()) == ["dcgm-exporter", "prometheus-agent"]
    assert "could not download" in (degraded / "prometheus-agent").read_text()
    assert (sb.root / "var/lib/fmcluster/health").read_text() == "healthy\n"
    assert (sb.root / "var/lib/fmcluster/status").read_text() == "ok\n"
    # what training needs is all there; node_exporter (served by its own download) serves the count
    assert (sb.root / "usr/local/bin/node_exporter").exists()

    # NVIDIA's repository answers again (and an operator put the pinned Prometheus in place): the next run installs
    # what was missing and the count goes back to 0
    (sb.path / "fail").joinpath(ctx.nvidia_repo_key.file).write_text("0\n")
    (sb.root / "usr/local/bin/prometheus").write_text(
        f"#!/bin/sh\necho 'prometheus, version {REAL.prometheus.version} (branch: HEAD)'\n")
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert "fmcluster_monitoring_missing 0\n" in _missing(sb)
    assert not list(degraded.iterdir())
    assert f"dcgm-exporter {REAL.dcgm_exporter.version} installed" in res.log


def test_a_node_exporter_that_cannot_be_downloaded_leaves_the_node_healthy(tmp_path):
    ctx, sb = _sandbox(tmp_path, "node_exporter")
    sb.fail_download(ctx.artifacts()["node_exporter"].url.rsplit("/", 1)[1], 99)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert "WARNING: monitoring degraded: node_exporter is not installed" in res.out
    assert "WARNING: exporters: node_exporter was not installed" in res.out  # the health check says it, and passes
    assert (sb.root / "var/lib/fmcluster/health").read_text() == "healthy\n"


def test_what_training_needs_is_still_fatal(tmp_path):
    """The EFA installer is not monitoring: a node without it fails, naming the download."""
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "compute")
    sb = build_sandbox(tmp_path / "sb", ctx, Image(efa=False, dcgm_exporter=False))
    sb.fail_download(ctx.artifacts()["efa_installer"].url.rsplit("/", 1)[1], 99)
    res = sb.run()
    assert res.rc != 0
    assert "[30-efa] FAILED: could not download" in res.out
