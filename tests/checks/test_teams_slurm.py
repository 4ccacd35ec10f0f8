"""What each Slurm orchestrator enforces of ``teams`` (its ``teams`` trait), and teams needing accounting."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import BASE, ROOT

from fmcluster import checks, config
from fmcluster.errors import ConfigError

TEAMS = """\
teams:
  - name: research
    members: [alice, bob]
    fair_share: 3
    instances: {train: {guaranteed: 1, borrow: 1}}
"""


def _problems(text: str, tmp_path: Path) -> list:
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        checks.validate(config.load(path))
    return [(p.check, p.path, p.message) for p in info.value.problems]


def test_parallelcluster_with_accounting_takes_members_shares_and_caps(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(BASE + "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n" + TEAMS)
    checks.validate(config.load(path))


@pytest.mark.parametrize("part", ["lend: false", "preempt: lower-priority"])
def test_parallelcluster_refuses_what_a_cap_cannot_do(tmp_path: Path, part: str) -> None:
    text = BASE + "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n" + \
        TEAMS.replace("    fair_share: 3\n", f"    fair_share: 3\n    {part}\n").replace("borrow: 1", "borrow: 0")
    [(check, at, message)] = _problems(text, tmp_path)
    assert check == "teams-supported" and at == f"teams[0].{part.split(':')[0]}"
    assert "not a reservation" in message


def test_teams_without_accounting_are_refused(tmp_path: Path) -> None:
    [(check, at, message)] = _problems(BASE + "orchestrator: {type: parallelcluster}\n" + TEAMS, tmp_path)
    assert (check, at) == ("teams-need-accounting", "teams") and "accounting, which is off" in message


@pytest.mark.parametrize("orchestrator, words", [
    ("hyperpod", "cannot set AccountingStorageEnforce"),
    ("pcs", "cannot create accounts, users or QoS in AWS PCS's managed accounting")])
def test_hyperpod_and_pcs_say_why_they_take_no_teams(tmp_path: Path, orchestrator: str, words: str) -> None:
    example = {"hyperpod": "p5en-hyperpod.yaml", "pcs": "p5-pcs.yaml"}[orchestrator]
    text = (ROOT / "examples" / example).read_text()
    problems = _problems(text + TEAMS.replace("train", config.parse(text).project.compute_groups[0].name), tmp_path)
    assert [p[0] for p in problems] == ["teams-supported"] and words in problems[0][2]
