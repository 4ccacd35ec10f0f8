"""Acceptance and the first job on a project whose teams Slurm enforces: they run as a team (--account), on the
team's nodes of each group, since Slurm refuses a job of a user in no team and one larger than the team's cap."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import ROOT
from typer.testing import CliRunner

from fmcluster.bootstrap.acceptance import AccountError, render_acceptance
from fmcluster.cli import app
from fmcluster.config import load
from fmcluster.plan import make_plan

TEAMS = ROOT / "examples" / "p5-slurm-accounting.yaml"  # research: alice, bob; prod: carol, bob; 2 of gpu's 4 each
NO_TEAMS = ROOT / "examples" / "p5-parallelcluster.yaml"


def _cluster(path: Path):
    return make_plan(load(str(path)).project).cluster


@pytest.mark.parametrize("account, words", [
    (None, "no --account: the project has teams (research, prod)"),
    ("ops", "--account ops is not a team: the project has teams (research, prod)")])
def test_a_teams_project_needs_one_of_its_teams(tmp_path: Path, account, words: str) -> None:
    with pytest.raises(AccountError, match="pass --account TEAM") as info:
        render_acceptance(_cluster(TEAMS), tmp_path, account=account)
    assert words in str(info.value)


def test_account_without_teams_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AccountError, match="no teams Slurm enforces"):
        render_acceptance(_cluster(NO_TEAMS), tmp_path, account="prod")


@pytest.mark.parametrize("command", [["acceptance", "render"], ["acceptance", "first-job"]])
def test_the_cli_refuses_a_teams_project_without_account_and_sizes_to_the_team(tmp_path: Path, command) -> None:
    refused = CliRunner().invoke(app, [*command, str(TEAMS), "--out", str(tmp_path / "a")])
    assert refused.exit_code == 2 and "pass --account TEAM" in refused.output
    ok = CliRunner().invoke(app, [*command, str(TEAMS), "--out", str(tmp_path / "b"), "--account", "prod"])
    assert ok.exit_code == 0, ok.output
    script = tmp_path / "b" / ("gpu/node-checks.sbatch" if command[1] == "render" else "first-job/gpu.sbatch")
    text = script.read_text()
    assert "#SBATCH --account=prod\n" in text and "#SBATCH --nodes=2\n" in text
