"""The per-node agent config: valid for promtool in agent mode, scraping only the node's own exporters."""

from __future__ import annotations

import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml
from fmcluster.bootstrap import collector, render
from support.sandbox import context_for, make_project

from fmcluster.generate import metrics

PROJECT = """\
name: llama
region: us-east-1
availability_zone_id: use1-az6
compute_groups:
  - {name: big, instance_type: p5.48xlarge, count: 4}
  - {name: new, instance_type: p6-b200.48xlarge, count: 2}
orchestrator: {type: parallelcluster}
"""


def _check(promtool: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool, "check", "config", "--agent", str(path)], capture_output=True, text=True,
                          timeout=60, check=False)


def test_scrape_interval_and_timeout() -> None:
    config = yaml.safe_load(collector.render_node_agent_config("llama", gpu=True, scrape_interval="15s"))
    assert (config["global"]["scrape_interval"], config["global"]["scrape_timeout"]) == ("15s", "15s")
    config = yaml.safe_load(collector.render_node_agent_config("llama", gpu=True, scrape_interval="1m"))
    assert (config["global"]["scrape_interval"], config["global"]["scrape_timeout"]) == ("1m", "20s")


def test_a_bad_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="duration"):
        collector.render_node_agent_config("llama", gpu=True, scrape_interval="soon")


def test_slurm_metrics_pass_node_exporter_s_keep_list_only_on_the_slurmctld_node() -> None:
    for gpu in (True, False):
        config = yaml.safe_load(collector.render_node_agent_config("llama", gpu=gpu))
        assert not [job for job in config["scrape_configs"] if "slurm" in job["job_name"]]
        assert "slurm_" not in yaml.safe_dump(config)
    config = yaml.safe_load(collector.render_node_agent_config("llama", gpu=False, slurm=True))
    (node,) = [job for job in config["scrape_configs"] if job["job_name"] == metrics.NODE.job]
    kept = set(node["metric_relabel_configs"][0]["regex"].split("|"))
    assert metrics.SLURM_METRICS <= kept and metrics.NODE_EXPORTER_METRICS <= kept


def test_template_uses_strict_undefined() -> None:
    env = collector._environment()
    assert env.undefined is jinja2.StrictUndefined
    with pytest.raises((jinja2.UndefinedError, TypeError)):  # tojson of an undefined value raises TypeError
        env.get_template(collector.TEMPLATE).render(project="x")


# --- the per-node agent every node runs -------------------------------------------------------------


@pytest.mark.parametrize(("gpu", "slurm"), [(True, False), (False, False), (False, True)])
def test_node_agent_config_passes_promtool_and_scrapes_only_this_nodes_exporters(
        agent_promtool: str, tmp_path: Path, gpu: bool, slurm: bool) -> None:
    text = collector.render_node_agent_config("llama", gpu=gpu, slurm=slurm)
    path = tmp_path / "agent.yml"
    path.write_text(text)
    result = _check(agent_promtool, path)  # the agent's own version (Prometheus 3) reads it
    assert result.returncode == 0, result.stdout + result.stderr
    config = yaml.safe_load(text)
    targets = {job["job_name"]: job["static_configs"][0]["targets"] for job in config["scrape_configs"]}
    want = {job: [f"localhost:{port}"] for job, port in metrics.scrape_targets(gpu=gpu, slurm=slurm)}
    assert targets == want
    assert ("dcgm-exporter" in targets) is gpu
    assert set(targets) <= {metrics.NODE.job, metrics.DCGM.job}  # Slurm's metrics come with node_exporter's
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
            collector.render_node_agent_config(ctx.project, gpu=ctx.gpu, slurm=ctx.slurm_metrics))
        # ParallelCluster's head node runs slurmctld: its agent keeps the Slurm metrics of its node_exporter too
        assert ("slurm_queue_pending" in files["files/prometheus-agent.yml"]) is (role == "head")
        step = files["steps/90-exporters.sh"]
        assert "install_prometheus_agent" in step and collector.NODE_REMOTE_WRITE_MARKER in step
        assert ctx.artifacts()["prometheus"].sha256 in step
        # Prometheus 3 runs as an agent with --agent only: the 2.x feature flag is ignored there (a warning), and
        # --storage.agent.path then stops it (tests/observability_e2e run the unit's flags on the real 3.x binary)
        assert "ExecStart=/usr/local/bin/prometheus --agent " in step and "--enable-feature=agent" not in step
