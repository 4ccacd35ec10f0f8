"""The PCS plan helpers: node groups, queues, size and the plan's scheduler section (data, and text by cli.planpcs)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from support import ROOT

from fmcluster import config
from fmcluster.cli.planpcs import scheduler_rows
from fmcluster.generate import pcs
from fmcluster.plan import make_plan


def _plan(name: str):
    return make_plan(config.load(ROOT / "examples" / name).project)


def test_scheduler_data_of_the_capacity_block_example() -> None:
    data = pcs.scheduler_data(_plan("p5en-pcs-capacity-block.yaml"))
    assert data["type"] == "pcs" and data["size"] == "MEDIUM" and data["nodes"] == 33
    assert data["cluster_name"] == "p5en-pcs-capacity-b-m-<subnet ID>"
    assert [(n["name"], n["min_count"], n["max_count"], n["purchase_option"]) for n in data["node_groups"]] == [
        ("train", 32, 32, "CAPACITY_BLOCK"), ("login", 1, 1, "ONDEMAND")]
    assert data["queues"] == [{"name": "train", "node_groups": ["train"]}]


def test_scheduler_rows_read_as_text() -> None:
    plan = _plan("p5-pcs.yaml")
    table = Table.grid()
    table.add_column()
    table.add_column()
    scheduler_rows(plan, pcs.scheduler_data(plan), table)
    console = Console(width=200, record=True)
    console.print(table)
    text = console.export_text()
    assert "AWS PCS cluster p5-pcs-s-<subnet ID>, Slurm 25.05" in text and "size SMALL (up to 32 nodes, 5 planned)" in text
    assert "stopped after 1800 s idle" in text and "1 x m7i.2xlarge" in text
    assert "queue gpu" in text and "4 x p5.48xlarge (0 static, ONDEMAND)" in text
