"""The collector config: rendered from the project, valid for promtool in agent mode."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml
from fmcluster.bootstrap import collector, render
from fmcluster.bootstrap.collector import CollectorContext, render_collector_config
from support.sandbox import context_for, make_project

from fmcluster.config import parse
from fmcluster.generate import metrics
from fmcluster.plan import make_plan

PROJECT = """\
name: llama
region: us-east-1
availability_zone_id: use1-az6
compute_groups:
  - {name: big, instance_type: p5.48xlarge, count: 4}
  - {name: new, instance_type: p6-b200.48xlarge, count: 2}
orchestrator: {type: parallelcluster}
"""


def _context(**changes: object) -> CollectorContext:
    return dataclasses.replace(CollectorContext.from_plan(make_plan(parse(PROJECT).project).cluster), **changes)


def _check(promtool: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool, "check", "config", "--agent", str(path)], capture_output=True, text=True,
                          timeout=60, check=False)


@pytest.mark.parametrize("discovery", ["ec2", "file"])
def test_config_passes_promtool_agent_check(promtool: str, tmp_path: Path, discovery: str) -> None:
    sd_file = tmp_path / "nodes.json"
    sd_file.write_text(json.dumps([{"targets": ["10.1.2.3"], "labels": {"node": "ip-10-1-2-3",
                                                                         "instance_type": "ml.p5.48xlarge"}}]))
    path = tmp_path / "agent.yml"
    path.write_text(render_collector_config(_context(discovery=discovery, file_sd_path=str(sd_file))))
    result = _check(promtool, path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr


def test_jobs_ports_and_discovery_filters() -> None:
    config = yaml.safe_load(render_collector_config(_context()))
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {e.job for e in metrics.EXPORTERS}
    for exporter in (metrics.DCGM, metrics.NODE, metrics.EFA):
        sd = jobs[exporter.job]["ec2_sd_configs"][0]
        assert sd["port"] == exporter.port and sd["region"] == "us-east-1"
        filters = {f["name"]: f["values"] for f in sd["filters"]}
        assert filters["tag:fmcluster:project"] == ["llama"]
        assert filters["instance-state-name"] == ["running"]
    gpu_filter = {f["name"]: f["values"] for f in jobs["dcgm-exporter"]["ec2_sd_configs"][0]["filters"]}
    assert gpu_filter["instance-type"] == ["p5.48xlarge", "p6-b200.48xlarge"]
    node_filter = {f["name"] for f in jobs["node-exporter"]["ec2_sd_configs"][0]["filters"]}
    assert "instance-type" not in node_filter
    targets = {r.get("target_label") for r in jobs["dcgm-exporter"]["relabel_configs"]}
    assert {"node", "instance_type", "instance_id"} <= targets
    # EFA counters come through node_exporter's port: nothing is scraped on a port nothing listens on
    assert {(name, job["ec2_sd_configs"][0]["port"]) for name, job in jobs.items()} == {
        ("node-exporter", 9100), ("dcgm-exporter", 9400)}


def test_remote_write_uses_sigv4_and_the_workspace_endpoint() -> None:
    endpoint = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1234/"
    config = yaml.safe_load(render_collector_config(_context(prometheus_endpoint=endpoint)))
    (remote,) = config["remote_write"]
    assert remote["url"] == endpoint + "api/v1/remote_write"
    assert remote["sigv4"] == {"region": "us-east-1"}
    assert config["global"]["external_labels"] == {"project": "llama"}


def test_offline_render_uses_a_placeholder_endpoint() -> None:
    config = yaml.safe_load(render_collector_config(_context()))
    assert collector.PLACEHOLDER_WORKSPACE_ID in config["remote_write"][0]["url"]


def test_no_slurm_job_while_no_slurm_exporter_is_installed() -> None:
    config = yaml.safe_load(render_collector_config(_context()))
    assert not [job for job in config["scrape_configs"] if "slurm" in job["job_name"]]


def test_scrape_interval_and_timeout() -> None:
    config = yaml.safe_load(render_collector_config(_context(scrape_interval="15s")))
    assert config["global"] == {"scrape_interval": "15s", "scrape_timeout": "15s", "external_labels": {"project": "llama"}}


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="duration"):
        _context(scrape_interval="soon")
    with pytest.raises(ValueError, match="https"):
        _context(prometheus_endpoint="http://example")
    project = parse(PROJECT.replace("region: us-east-1\n", "")).project
    with pytest.raises(ValueError, match="region"):
        CollectorContext.from_plan(make_plan(project).cluster)


def test_template_uses_strict_undefined() -> None:
    env = collector._environment()
    assert env.undefined is jinja2.StrictUndefined
    with pytest.raises((jinja2.UndefinedError, TypeError)):  # tojson of an undefined value raises TypeError
        env.get_template(collector.TEMPLATE).render(project="x")


# --- the per-node agent every node runs -------------------------------------------------------------


@pytest.mark.parametrize("gpu", [True, False])
def test_node_agent_config_passes_promtool_and_scrapes_only_this_nodes_exporters(
        promtool: str, tmp_path: Path, gpu: bool) -> None:
    text = collector.render_node_agent_config("llama", gpu=gpu)
    path = tmp_path / "agent.yml"
    path.write_text(text)
    result = _check(promtool, path)
    assert result.returncode == 0, result.stdout + result.stderr
    config = yaml.safe_load(text)
    targets = {job["job_name"]: job["static_configs"][0]["targets"] for job in config["scrape_configs"]}
    want = {job: [f"localhost:{port}"] for job, port in metrics.scrape_targets(gpu=gpu)}
    assert targets == want
    assert ("dcgm-exporter" in targets) is gpu
    # a node names itself: the rules group and alert by node, instance_id and instance_type
    assert config["global"]["external_labels"] == {
        "project": "llama", "node": "${FMC_NODE}", "instance_id": "${FMC_INSTANCE_ID}",
        "instance_type": "${FMC_INSTANCE_TYPE}"}
    (remote,) = config["remote_write"]
    assert remote["url"] == collector.NODE_REMOTE_WRITE_MARKER and remote["sigv4"] == {}


def test_every_node_bundle_carries_the_agent_and_the_step_installs_it() -> None:
    for role, group in (("compute", "gpu"), ("head", None)):
        ctx = context_for(make_project(), group, role)
        files = render.render_files(ctx)
        assert yaml.safe_load(files["files/prometheus-agent.yml"]) == yaml.safe_load(
            collector.render_node_agent_config(ctx.project, gpu=ctx.gpu))
        step = files["steps/90-exporters.sh"]
        assert "install_prometheus_agent" in step and collector.NODE_REMOTE_WRITE_MARKER in step
        assert ctx.artifacts()["prometheus"].sha256 in step
        assert "--enable-feature=agent,expand-external-labels" in step
