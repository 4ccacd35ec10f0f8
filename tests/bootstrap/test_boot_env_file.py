"""Values known only at deploy time beside a bundle (HyperPod lifecycle): the metrics URL reaches the agent."""

from __future__ import annotations

from support.sandbox import Image, context_for, make_project

URL = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-12345678-abcd-ef01-2345-6789abcdef01/api/v1/remote_write"


def _sandbox(make_sandbox):
    project = make_project("p5.48xlarge", "ubuntu-22.04", "hyperpod")
    ctx = context_for(project, "gpu", "compute")  # the real versions.yaml
    return make_sandbox(ctx, Image())


def test_the_metrics_url_beside_the_bundle_starts_the_agent(make_sandbox):
    sb = _sandbox(make_sandbox)
    (sb.bundle / "fmcluster.env").write_text(f"FMC_METRICS_REMOTE_WRITE_URL={URL}\n")
    res = sb.run()
    assert res.rc == 0, res.out
    assert URL in (sb.root / "etc/fmcluster/prometheus-agent.yml").read_text()
    assert any(c.startswith("systemctl enable") and "fmcluster-prometheus-agent" in c for c in res.calls), res.calls


def test_without_it_the_agent_waits_and_says_so(make_sandbox):
    sb = _sandbox(make_sandbox)
    res = sb.run()
    assert res.rc == 0, res.out
    assert "FMC_METRICS_REMOTE_WRITE_URL is not set" in res.log
    assert not (sb.root / "etc/fmcluster/prometheus-agent.yml").exists()


def test_anything_else_in_the_file_stops_the_node(make_sandbox):
    sb = _sandbox(make_sandbox)
    (sb.bundle / "fmcluster.env").write_text("LD_PRELOAD=/tmp/evil.so\n")
    res = sb.run()
    assert res.rc != 0 and "unexpected line" in res.out + res.log
