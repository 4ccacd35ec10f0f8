"""The exporter table against every query: each metric a rule, recording rule or dashboard panel reads is
produced by an exporter of ``fmcluster.generate.metrics.EXPORTERS`` on the nodes that query concerns.

Expressions are parsed with promql-parser (the Rust ``promql-parser`` crate's Python binding), and the
metric names are taken from the vector selectors of the syntax tree: no regular expressions.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import promql_parser
import pytest
from fmcluster.bootstrap import render, versions
from support.promql import metric_names
from support.sandbox import context_for, make_project

from fmcluster.generate import dashboards, metrics, rules


def _queries() -> Iterator[tuple[str, str]]:
    """(where, expression) for every rule, recording rule and Prometheus dashboard target."""
    for group in rules.rule_groups():
        for rule in group["rules"]:
            yield f"rule {group['name']}/{rule.get('alert') or rule.get('record')}", rule["expr"]
    for uid, model in dashboards.build_dashboards("llama").items():
        for panel in model.get("panels", []):
            for inner in [panel, *panel.get("panels", [])]:
                for target in inner.get("targets", []):
                    if target["datasource"]["type"] == "prometheus":
                        yield f"dashboard {uid}/{inner['title']}", target["expr"]


QUERIES = list(_queries())


def _gpu_query(where: str, names: set[str]) -> bool:
    """A query about GPU nodes: it lives in a GPU/EFA rule group or dashboard, or reads a GPU-only metric."""
    return bool(re.search(r"gpu|xid|efa", where.split("/")[0])) or bool(names & (metrics.produced() - metrics.produced(gpu=False)))


@pytest.mark.parametrize(("where", "expr"), QUERIES, ids=[w for w, _ in QUERIES])
def test_every_queried_metric_is_produced_on_the_nodes_it_concerns(where: str, expr: str) -> None:
    names = metric_names(expr)
    # only the catalog's recording rules are constants (vector(8)); every alert and panel reads a metric
    assert names or where.startswith(f"rule {rules.CATALOG_GROUP}/"), f"{where}: {expr} reads no metric"
    # Slurm's metrics come from one node (the controller's): only a Slurm rule group or dashboard may read them
    slurm = "slurm" in where.split("/")[0]
    available = metrics.produced(gpu=_gpu_query(where, names), slurm=slurm) | rules.recorded_metrics()
    missing = names - available
    assert not missing, f"{where} reads {sorted(missing)}, which no exporter in the table produces there"


def test_queries_were_found() -> None:
    kinds = {where.split(" ")[0] for where, _ in QUERIES}
    assert kinds == {"rule", "dashboard"} and len(QUERIES) > 30


def test_the_parser_reads_names_from_the_syntax_tree() -> None:
    expr = ('sum by (node) (rate(DCGM_FI_DEV_MADE_UP{node=~"$node", job="by"}[$__rate_interval])) '
            '/ on (node) group_left (instance_type) max_over_time(up[1h:1m]) unless absent(foo offset 5m)')
    assert metric_names(expr) == {"DCGM_FI_DEV_MADE_UP", "up", "foo"}
    with pytest.raises(ValueError):
        promql_parser.parse("sum by (node) (rate(x[5m])")


def test_a_gpu_metric_is_not_available_to_a_query_about_every_node() -> None:
    assert "DCGM_FI_DEV_XID_ERRORS" in metrics.produced(gpu=True)
    assert "DCGM_FI_DEV_XID_ERRORS" not in metrics.produced(gpu=False)
    assert "node_amazonefa_tx_pkts" not in metrics.produced(gpu=False)


def test_every_scraped_port_is_one_the_bootstrap_opens() -> None:
    v = versions.load_versions()
    listening = {v.node_exporter.port, v.dcgm_exporter.port}
    assert {port for _job, port in metrics.scrape_targets(gpu=True)} == listening
    controller = {port for _job, port in metrics.scrape_targets(gpu=False, slurm=True)}
    assert controller == {v.node_exporter.port}  # the Slurm metrics come through node_exporter's textfile collector
    assert {e.port for e in metrics.EXPORTERS} <= listening | controller


def test_slurm_metrics_are_only_on_the_controller_s_node() -> None:
    assert "slurm_queue_pending" in metrics.produced(slurm=True)
    assert "slurm_queue_pending" not in metrics.produced(gpu=True, slurm=False)
    assert not metrics.SLURM.gpu_only
    # the table's roles are those whose bundles carry the collector, on every Slurm orchestrator
    from support.sandbox import context_for, make_project

    from fmcluster.bootstrap.context import ROLES
    carrying = {role for name in ("parallelcluster", "hyperpod", "pcs") for role in ROLES
                if context_for(make_project("p5.48xlarge", "ubuntu-22.04", name), "gpu", role).slurm_metrics}
    assert carrying == set(metrics.SLURM.roles) == {"head", "login"}


def test_efa_script_publishes_the_names_the_table_lists(tmp_path: Path) -> None:
    script = tmp_path / "efa-counters"
    script.write_text(render.render_files(context_for(make_project(), "gpu", "compute"))["files/fmcluster-efa-counters"])
    for device in ("rdmap16s27", "rdmap32s27"):
        counters = tmp_path / f"sys/class/infiniband/{device}/ports/1/hw_counters"
        counters.mkdir(parents=True)
        for counter in metrics.EFA_COUNTERS:
            (counters / counter).write_text("7\n")
    proc = subprocess.run(["bash", str(script), "--once"], env={"FMC_ROOT": str(tmp_path), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "var/lib/fmcluster/textfile/efa.prom").read_text()
    samples = [line for line in text.splitlines() if not line.startswith("#")]
    assert {line.split("{")[0] for line in samples} == metrics.EFA_EXPORTER_METRICS
    assert len(samples) == 2 * len(metrics.EFA_COUNTERS)
    # the text format wants each metric's samples together, after its one TYPE line
    order = [line.split("{")[0] for line in samples]
    assert order == sorted(order, key=order.index) and len(set(order)) == len([t for t in text.splitlines()
                                                                               if t.startswith("# TYPE")])
