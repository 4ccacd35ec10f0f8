"""`fmcluster plan` shows what a project costs without any AWS account: per hour running, per month idle, per month
after destroy, for every project and example; `plan --prices` with no credentials still prints the plan, exits 0
and says in one line that live prices were not read; `plan -o json` carries the same figures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support import ALL_FILES, ROOT, clean_aws_home
from typer.testing import CliRunner

from fmcluster import config
from fmcluster.cli import app
from fmcluster.cli.plancost import LIVE_NOT_READ
from fmcluster.generate.costs import project_cost as cost_summary
from fmcluster.plan import make_plan

runner = CliRunner()
TOTAL = re.compile(r"^total\s.*?~?([\d,]+\.\d\d)\+?\s+~?([\d,]+\.\d\d)\+?\s+~?([\d,]+\.\d\d)\+?\s*$", re.MULTILINE)


@pytest.fixture
def no_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No credentials, no profile, no Region: a user's machine before `aws configure`."""
    clean_aws_home(tmp_path, monkeypatch, "")
    monkeypatch.setenv("FMCLUSTER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")  # the total row on one line
    return tmp_path


@pytest.mark.parametrize("path", ALL_FILES, ids=[p.stem for p in ALL_FILES])
def test_every_plan_shows_the_three_figures_without_an_account(path: Path, no_account: Path) -> None:
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 0, result.output
    [totals] = TOTAL.findall(result.stdout)
    c = cost_summary(make_plan(config.load(path).project))
    expected = (c.total(c.running_per_hour), c.total(c.idle_per_month), c.total(c.after_destroy_per_month))
    assert tuple(float(t.replace(",", "")) for t in totals) == pytest.approx(expected, abs=0.005)
    assert "running /h" in result.stdout and "idle /month" in result.stdout and "destroyed /month" in result.stdout
    # no line the project creates is unpriced: no `?` cell, no "not in the table" note
    cost_table = result.stdout.split("cost (USD)", 1)[1].split("\nprices:", 1)[0]
    assert not re.search(r"(^|\s)\?(\s|$)", cost_table, re.MULTILINE), cost_table
    assert "?: not in the table" not in result.stdout


def test_plan_prices_without_credentials_prints_the_plan_and_one_line(no_account: Path) -> None:
    result = runner.invoke(app, ["plan", str(ROOT / "projects" / "default.yaml"), "--prices"])
    assert result.exit_code == 0, result.output
    said = [line for line in result.stderr.splitlines() if "live prices" in line]
    assert len(said) == 1 and said[0].startswith(f"warning: {LIVE_NOT_READ}: no AWS credentials found")
    assert not [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert TOTAL.search(result.stdout) and "compute groups" in result.stdout


def test_plan_json_carries_the_figures_and_why_live_prices_were_not_read(no_account: Path) -> None:
    path = ROOT / "examples" / "p5-slurm-accounting.yaml"
    result = runner.invoke(app, ["plan", str(path), "-o", "json", "--prices"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    c = cost_summary(make_plan(config.load(path).project))
    assert data["cost"]["idle_per_month"]["total_usd"] == round(c.total(c.idle_per_month), 2)
    assert data["cost"]["after_destroy_per_month"]["complete"] is True  # every kept resource priced
    assert data["cost"]["after_destroy_per_month"]["estimated"] is True  # the file system's tier: an estimate
    assert data["cost"]["live_prices"]["read"] is False
    assert data["cost"]["live_prices"]["why_not"].startswith("no AWS credentials found")
    assert "prices" not in data
