"""`fmcluster plan` as a person reads it: every project and example fits 80 columns without an ellipsis,
`--wide` keeps the one-row-per-group tables, warnings and errors carry the name `suppress_warnings` takes,
GB200 figures and the checkpoint bound are shown, and offline the plan shows the table's cost and says what
--prices adds."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from support import ALL_FILES, BASE, ROOT
from typer.testing import CliRunner

from fmcluster import checks, config
from fmcluster.cli import app
from fmcluster.cli import project as cli
from fmcluster.cli.planview import print_plan
from fmcluster.errors import ConfigError

runner = CliRunner()
GB200 = ROOT / "examples" / "p6e-gb200-ultraserver.yaml"


def render(path: Path, width: int = 80, wide: bool = False) -> str:
    plan, _ = checks.validate(config.load(path))
    buffer = io.StringIO()
    print_plan(plan, Console(file=buffer, width=width, color_system=None, force_terminal=False), wide=wide)
    return buffer.getvalue()


@pytest.fixture
def narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's own consoles at 80 columns, as on a CI log or an SSH session."""
    monkeypatch.setattr(cli, "out", Console(width=80, color_system=None))
    monkeypatch.setattr(cli, "err", Console(width=80, color_system=None, stderr=True))


@pytest.mark.parametrize("path", ALL_FILES, ids=[p.stem for p in ALL_FILES])
def test_every_plan_fits_80_columns_without_cutting_anything(path: Path) -> None:
    text = render(path)
    assert "…" not in text
    too_long = [line for line in text.splitlines() if len(line.rstrip()) > 80]
    assert not too_long, too_long
    # nothing was broken inside a word either: every instance type and group name appears whole
    loaded = config.load(path)
    for group in loaded.project.compute_groups:
        assert re.search(rf"(?m)^{re.escape(group.name)}\s+{re.escape(group.instance_type)}\s", text), group.name


def test_the_80_column_check_can_fail() -> None:
    """The same plan on a 50-column console does not fit: the test above would see it."""
    text = render(GB200, width=50)
    assert "…" in text or any(len(line.rstrip()) > 50 for line in text.splitlines()) or \
        not re.search(r"(?m)^nvl72a\s+p6e-gb200\.36xlarge\s", text)


def test_the_command_at_80_columns(narrow: None) -> None:
    result = runner.invoke(app, ["plan", str(GB200)])
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout and max(len(line.rstrip()) for line in result.stdout.splitlines()) <= 80


def test_wide_keeps_one_table_row_per_group_with_every_column(tmp_path: Path) -> None:
    unsized = tmp_path / "gb200.yaml"  # the example without its pinned FSx: the planner's 1,200 GiB at 250 MB/s per TiB
    unsized.write_text(GB200.read_text().split("\nstorage:\n")[0] + "\n")  # storage is the example's last section
    text = render(unsized, width=200, wide=True)
    assert "…" not in text
    for header in ("capacity GiB", "MB/s per TiB", "aggregate GB/s", "per GPU MB/s", "write", "restore", "target"):
        assert header in text
    assert re.search(r"nvl72a\s+│\s+p6e-gb200\.36xlarge\s+│\s+18\s+│\s+capacity-block\s+│", text)
    assert "<= 26.64 TB (all HBM)" in text  # the bound, marked as one
    # times as durations, not raw seconds: 26.64 TB at 292.97 MB/s = 90,931 s = 25.3 h
    assert re.search(r"│\s+25\.3 h\s+│\s+25\.3 h\s+│\s+60 min limit \(over\)", text)
    assert "90,931" not in text


NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")


@pytest.mark.parametrize("path", ALL_FILES, ids=[p.stem for p in ALL_FILES])
def test_wide_shows_everything_the_default_view_does(path: Path) -> None:
    """Every figure of the 80-column view is in --wide too, and every section and piece of advice."""
    default, wide = render(path), render(path, width=200, wide=True)
    missing = set(NUMBER.findall(default)) - set(NUMBER.findall(wide))
    assert not missing, missing
    for phrase in ("one node of each type", "Local Zone", "services subnet", "would meet it", "checkpoint share",
                   "association /", "scheduler", "monitoring", "OS "):
        assert (phrase in _flat(default)) <= (phrase in _flat(wide)), phrase


def test_the_figure_comparison_can_fail() -> None:
    """The per-type table left out of --wide (as it was) is seen by the test above."""
    default = render(GB200)
    wide = render(GB200, width=200, wide=True).replace("740", "").replace("8.00", "")
    assert set(NUMBER.findall(default)) - set(NUMBER.findall(wide))


def _wide_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("│")]


@pytest.mark.parametrize("path", ALL_FILES, ids=[p.stem for p in ALL_FILES])
def test_wide_into_a_pipe_cuts_and_folds_nothing(path: Path) -> None:
    """`plan --wide | cat`: not a terminal, 80 columns reported; the tables widen instead of cutting or folding."""
    text = render(path, width=80, wide=True)
    assert "…" not in text
    plan, _ = checks.validate(config.load(path))
    rows = _wide_rows(text)
    # one line per table row: each group in the compute and EFA tables, each type, one FSx row when created
    types = {g.instance_type for g in plan.groups}
    assert len(rows) == 2 * len(plan.groups) + len(types) + (len(plan.groups) > 1) + bool(plan.storage.created)
    for g in plan.groups:
        assert re.search(rf"│ {re.escape(g.name)}\s+│ {re.escape(g.instance_type)}\s+│", text), g.name
    if plan.storage.created:
        assert any(plan.storage.deployment_type in r and "│" in r.split(plan.storage.deployment_type)[1] for r in rows)


def test_wide_on_a_narrow_terminal_folds_and_never_cuts() -> None:
    buffer = io.StringIO()
    plan, _ = checks.validate(config.load(GB200))
    print_plan(plan, Console(file=buffer, width=80, color_system=None, force_terminal=True), wide=True)
    text = buffer.getvalue()
    assert "…" not in text and max(len(line.rstrip()) for line in text.splitlines()) <= 80


def test_the_wide_command_piped(narrow: None) -> None:
    result = runner.invoke(app, ["plan", str(GB200), "--wide"])
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout and "PERSISTENT_2" in result.stdout
    assert re.search(r"│ nvl72a\s+│ p6e-gb200\.36xlarge\s+│", result.stdout)


def test_gb200_figures_are_shown() -> None:
    text = render(GB200)
    # 36 x 4 GPUs x 2.5 PF = 360 PF BF16 dense; 8 TB/s per GPU; 22.5 TB NVMe and 740 GB HBM per instance
    assert "360.0 PF BF16 dense" in text and "26.64 TB HBM" in text
    assert re.search(r"p6e-gb200\.36xlarge\s+4 GB200\s+740\s+8\.00\s+unconfirmed\s+22\.50", text)
    assert "unknown" not in text


def _unsized(tmp_path: Path) -> Path:
    """Two p5.48xlarge with the planner's FSx (1,200 GiB at 250 MB/s per TiB): too slow for the bound."""
    path = tmp_path / "unsized.yaml"
    path.write_text(BASE)
    return path


def test_default_project_shows_a_checkpoint_bound_and_per_gpu_throughput(tmp_path: Path) -> None:
    text = render(_unsized(tmp_path))
    assert "at most 1.28 TB: all GPU memory, an upper bound" in text
    assert "up to 73 min each (over the 60 min limit)" in text  # 1.28 TB at 292.97 MB/s = 4,369 s
    assert "18.3 MB/s per GPU" in text  # 292.97 MB/s / 16 GPUs
    assert "1,200 GiB at 500 MB/s per TiB (the smallest" in text


def test_a_described_checkpoint_is_shown_as_such() -> None:
    text = render(ROOT / "examples" / "p5en-capacity-block.yaml")
    assert "1.12 TB (storage.checkpoint)" in text and "48 s each; target 60 s (met)" in text
    assert "upper bound" not in text


def test_offline_the_plan_shows_the_tables_cost_and_what_the_flag_adds() -> None:
    out = " ".join(render(ROOT / "projects" / "default.yaml").split())
    assert "cost (USD)" in out and "running /h idle /month destroyed /month" in out
    assert "live prices: `plan --prices` reads the project Region's on-demand prices" in out


def test_warnings_print_the_name_suppress_warnings_takes(narrow: None, tmp_path: Path) -> None:
    _, warnings = checks.validate(config.load(_unsized(tmp_path)))
    assert warnings
    result = runner.invoke(app, ["plan", str(_unsized(tmp_path))])
    assert result.exit_code == 0, result.output
    for warning in warnings:
        assert f"[{warning.check}]" in result.stderr, warning.check


def test_errors_print_their_name_too(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(BASE.replace("count: 2", "count: 300") + "network:\n  compute_subnet_prefix: 24\n")
    with pytest.raises(ConfigError) as refused:
        checks.validate(config.load(path))
    names = {p.check for p in refused.value.problems}
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    for name in names:
        assert f"[{name}]" in result.stderr


def test_markup_in_a_file_is_printed_as_written(tmp_path: Path) -> None:
    """A name in brackets, or any other text from the file, is never taken for console markup."""
    path = tmp_path / "demo.yaml"
    path.write_text(BASE + "suppress_warnings: ['[bold]x[/bold]']\n")
    result = runner.invoke(app, ["validate", str(path)])
    assert "'[bold]x[/bold]'" in result.stderr and "[suppressed-warning-exists]" in result.stderr


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_default_plan_shows_a_slurm_cluster_head_node_queue_and_nodes() -> None:
    text = _flat(render(ROOT / "projects" / "default.yaml"))
    assert "Slurm AWS ParallelCluster 3.16.1, cluster default-slurm, created by cdk deploy" in text
    assert "head node m7i.4xlarge, 200 GiB root (ubuntu2204)" in text
    assert "queue train 2 x p5.48xlarge (0 static); ONDEMAND" in text


def test_a_project_without_a_scheduler_says_what_it_gets() -> None:
    text = _flat(render(ROOT / "examples" / "p5-odcr.yaml"))
    assert "launch templates only: `cdk deploy` starts no node and no scheduler" in text
    assert "own" not in text.split("EFA and addresses")[1].split("PG:")[0]  # a reservation made without a group


def test_placement_groups_and_local_zones_are_explained() -> None:
    odcr = _flat(render(ROOT / "examples" / "p5-odcr-placement-group.yaml"))
    assert re.search(r"train 1 ENA \+ 32 EFA .* own", odcr) and "own: the reservation's own group, by name" in odcr
    gb200 = _flat(render(ROOT / "examples" / "p6e-gb200-ultraserver.yaml"))
    assert "nodes in use1-dfw2-az1 (us-east-1-dfw-2a); the NAT gateway, FSx, the endpoints" in gb200
    assert "services subnet 10.15.1.0/24 in use1-az4" in gb200


def test_the_plan_lists_each_roles_exporters_from_the_exporter_table() -> None:
    text = _flat(render(ROOT / "projects" / "default.yaml"))
    assert ("GPU nodes node_exporter, efa-counters, dcgm-exporter (ports 9100, 9400), and a Prometheus agent "
            "remote-writing to the workspace") in text
    assert "other nodes node_exporter (port 9100)" in text
    assert "other nodes" not in _flat(render(ROOT / "examples" / "p5-odcr.yaml"))  # no scheduler: GPU nodes only


def test_the_slurm_controller_s_exporter_and_series_are_shown_where_a_node_of_ours_runs_slurmctld() -> None:
    text = _flat(render(ROOT / "projects" / "default.yaml"))  # ParallelCluster: the head node runs slurmctld
    assert ("Slurm controller node_exporter, slurm-metrics (port 9100), and a Prometheus agent "
            "remote-writing to the workspace") in text
    # node_exporter's 56 without CPUs (fmcluster_monitoring_missing among them) + 1 `up` + the Slurm metrics: 7 cluster-wide (the timestamp among them), 9 per
    # partition (one group), one per Slurm command (2); per-user, per-reason and per-drained-node series are not
    # counted
    assert "series, Slurm ~75 on the Slurm controller's node (+ 8 per vCPU)" in text
    # AWS runs PCS's slurmctld: its login node collects them
    pcs = _flat(render(ROOT / "examples" / "p5-pcs.yaml"))
    assert "Slurm controller" not in pcs and "login nodes node_exporter, slurm-metrics (port 9100)" in pcs
    assert "series, Slurm ~75 on each login node" in pcs


def test_the_plan_estimates_active_series_against_the_workspace_quota(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _flat(render(ROOT / "examples" / "p5-odcr.yaml"))
    # One p5.48xlarge by hand: 192 vCPUs x 8 CPU modes, 32 EFA devices x 18 counters, 8 GPUs x the
    # 34 metric rows of the DCGM counters file, 6 per-node metrics (fmcluster_monitoring_missing among them), 2 `up`,
    # assumed 8 mounts x 5, 3 network devices x 2, (8 NVMe + 2) disks x 2.
    p5 = 192 * 8 + 32 * 18 + 8 * 34 + 6 + 2 + 8 * 5 + 3 * 2 + 10 * 2
    assert f"~{p5:,} active series per node" in text
    assert "10,000,000 active series" in text and "OVER" not in text
    # GB200's vCPUs and drives are unconfirmed: the plan says what it left out instead of guessing.
    assert "plus its cpu and disk series (unconfirmed for p6e-gb200.36xlarge)" in _flat(render(GB200))
    monkeypatch.setattr("fmcluster.cli.planservices.AMP_ACTIVE_SERIES_QUOTA", 10_000)
    assert "OVER the quota: ask for an increase" in _flat(render(ROOT / "examples" / "p5-odcr.yaml"))


def test_the_checkpoint_share_of_wall_time_is_shown(tmp_path: Path) -> None:
    """interval_minutes: 30 on the p5en example: 47.8 s every 30 min = 2.7%, within 5%, in both views."""
    path = tmp_path / "p5en.yaml"
    path.write_text((ROOT / "examples" / "p5en-capacity-block.yaml").read_text().replace(
        "    target_write_seconds: 60\n",
        "    target_write_seconds: 60\n    interval_minutes: 30\n    node_failures_per_1000_node_days: 5\n"))
    for text in (_flat(render(path)), _flat(render(path, width=200, wide=True))):
        assert "checkpoint time 2.7% of wall time writing: 48 s every 30 min" in text
        # 32 nodes x 5 / 1,000 = 0.16 a day: 0.16 x 47.8 s / 86,400 s and 0.16 x 900 s / 86,400 s
        assert "0.16 node failures a day over 32 nodes: <0.1% restoring (48 s each), 0.2% redoing lost work" in text
        assert "checkpoint share 2.7% writing and restoring (within 5%)" in text
        assert re.search(r"under 5% from [\d,]+ GiB at \d+ MB/s per TiB \(the smallest file system\)", text)


def test_a_training_plan_is_named_in_words_never_cut_inside_its_arn() -> None:
    """At 60 columns the ARN (one 60-character token) was folded in the middle of its ID; the plan names the plan,
    its Region and account instead, each a short word (the ARN stays in -o json)."""
    import os

    from typer.testing import CliRunner

    from fmcluster.cli import app
    from support import ROOT

    path = str(ROOT / "examples" / "p6e-gb200-hyperpod-training-plan.yaml")
    text = CliRunner().invoke(app, ["plan", path], env={**os.environ, "COLUMNS": "60"}).output
    [line] = [line for line in text.splitlines() if "training plan " in line]
    assert "gb200 in us-east-1, account 111122223333" in line
    assert "arn:aws:sagemaker" not in text
    data = CliRunner().invoke(app, ["plan", path, "-o", "json"]).output
    assert "arn:aws:sagemaker:us-east-1:111122223333:training-plan/gb200" in data
