"""teams: one model for every scheduler; shares name real groups and add up; what the orchestrator cannot
enforce is refused at the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import BASE

from fmcluster import checks, config, orchestrators
from fmcluster.errors import ConfigError

TEAMS = """\
teams:
  - name: research
    members: [alice, bob]
    fair_share: 3
    instances: {train: {guaranteed: 1, borrow: 1}}
  - name: prod
    members: [carol]
    instances: {train: {guaranteed: 1}}
"""


def _problems(text: str, tmp_path: Path) -> list:
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        checks.validate(config.load(path))
    return info.value.problems


@pytest.fixture
def everything_enforced(monkeypatch):
    """ParallelCluster as if it enforced every part of teams: the checks below are about the model itself."""
    import dataclasses
    pc = orchestrators.ORCHESTRATORS["parallelcluster"]
    full = dataclasses.replace(pc, teams=("members", "fair_share", "guaranteed", "borrow", "lend", "preempt"))
    monkeypatch.setitem(orchestrators.ORCHESTRATORS, "parallelcluster", full)
    return "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n"


def test_the_model_reads_the_example_shape() -> None:
    project = config.parse(BASE + TEAMS).project
    research, prod = project.teams
    assert research.members == ["alice", "bob"] and research.fair_share == 3
    assert (research.instances["train"].guaranteed, research.instances["train"].borrow) == (1, 1)
    assert prod.fair_share == 1 and prod.lend is True and prod.preempt == "never"


@pytest.mark.parametrize("bad, message, line", [
    ("teams:\n  - name: a\n  - name: a\n", "team name 'a' is used twice", 9),
    ("teams:\n  - name: Research\n", "'Research' is not a valid value", 8),
    ("teams:\n  - name: a\n    members: [alice, Bob]\n", "'Bob' is not a user name", 9),
    ("teams:\n  - name: a\n    members: [alice, alice]\n", "'alice' is listed twice", 9),
    ("teams:\n  - name: a\n    fair_share: 101\n", "101 is not allowed: fair_share must be at most 100", 9),
])
def test_bad_teams_are_refused_at_their_line(bad: str, message: str, line: int, tmp_path: Path) -> None:
    problems = _problems(BASE + bad, tmp_path)
    assert problems[0].message.startswith(message) or message in problems[0].message, problems[0].format()
    assert problems[0].line == line, problems[0].format()


def test_an_orchestrator_without_teams_refuses_them(tmp_path: Path) -> None:
    problems = _problems(BASE + TEAMS, tmp_path)
    assert [(p.check, p.path) for p in problems] == [("teams-supported", "teams")]
    assert "orchestrator.type none has no teams" in problems[0].message


def test_a_part_the_orchestrator_cannot_enforce_is_refused_at_its_field(tmp_path: Path, monkeypatch) -> None:
    import dataclasses
    pc = orchestrators.ORCHESTRATORS["parallelcluster"]
    monkeypatch.setitem(orchestrators.ORCHESTRATORS, "parallelcluster",
                        dataclasses.replace(pc, teams=("members", "fair_share", "guaranteed"), teams_why="why"))
    problems = _problems(BASE + "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n" + TEAMS,
                         tmp_path)
    assert [(p.check, p.path, p.line) for p in problems] == [
        ("teams-supported", "teams[0].instances.train.borrow", 12)]
    assert problems[0].message.endswith("cannot enforce a team's borrow: why")


def test_shares_name_real_groups_and_fit(tmp_path: Path, everything_enforced: str) -> None:
    text = BASE + everything_enforced + ("teams:\n  - name: a\n    instances: {trian: {guaranteed: 1}}\n"
                                         "  - name: b\n    instances: {train: {guaranteed: 1, borrow: 2}}\n")
    problems = _problems(text, tmp_path)
    assert [(p.check, p.path) for p in problems] == [("teams-groups", "teams[0].instances.trian"),
                                                     ("teams-groups", "teams[1].instances.train")]
    assert "which the project does not have" in problems[0].message and "train" in problems[0].hint
    assert "1 + 2 = 3 instances of 'train', which has 2" in problems[1].message


def test_guaranteed_counts_add_up_within_the_group(tmp_path: Path, everything_enforced: str) -> None:
    text = BASE + everything_enforced + ("teams:\n  - name: a\n    instances: {train: {guaranteed: 2}}\n"
                                         "  - name: b\n    instances: {train: {guaranteed: 1}}\n")
    problems = _problems(text, tmp_path)
    assert [(p.check, p.path) for p in problems] == [("teams-groups", "teams[1].instances.train.guaranteed")]
    assert "guaranteed 3 instances of 'train' (a 2 + b 1), which has 2" in problems[0].message


def test_borrowing_without_lending_is_refused(tmp_path: Path, everything_enforced: str) -> None:
    text = BASE + everything_enforced + ("teams:\n  - name: a\n    lend: false\n"
                                         "    instances: {train: {guaranteed: 1, borrow: 1}}\n")
    problems = _problems(text, tmp_path)
    assert [(p.check, p.path) for p in problems] == [("teams-borrow-needs-lend", "teams[0].instances.train.borrow")]


def test_fitting_teams_pass(tmp_path: Path, everything_enforced: str) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(BASE + everything_enforced + TEAMS)
    checks.validate(config.load(path))
