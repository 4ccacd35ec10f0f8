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
    instances: {train: {guaranteed: 1}}
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


@pytest.mark.parametrize("part, at", [("preempt: lower-priority", "teams[0].preempt"),
                                      ("borrow", "teams[0].instances.train.borrow")])
def test_parallelcluster_refuses_what_slurm_without_preemption_cannot_do(tmp_path: Path, part: str, at: str) -> None:
    """Borrowed nodes could not be taken back (no preemption): a borrower could keep another team from its
    guaranteed nodes, so borrowing is refused on Slurm; so are priority classes within a team."""
    team = TEAMS.replace("{guaranteed: 1}", "{guaranteed: 1, borrow: 1}") if part == "borrow" else \
        TEAMS.replace("    fair_share: 3\n", f"    fair_share: 3\n    {part}\n")
    [(check, where, message)] = _problems(BASE + "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n"
                                          + team, tmp_path)
    assert (check, where) == ("teams-supported", at)
    assert "configures no preemption" in message


def test_parallelcluster_takes_lend_false(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(BASE + "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n"
                    + TEAMS.replace("    fair_share: 3\n", "    fair_share: 3\n    lend: false\n"))
    checks.validate(config.load(path))


def test_teams_without_accounting_are_refused(tmp_path: Path) -> None:
    [(check, at, message)] = _problems(BASE + "orchestrator: {type: parallelcluster}\n" + TEAMS, tmp_path)
    assert (check, at) == ("teams-need-accounting", "teams") and "accounting, which is off" in message


@pytest.mark.parametrize("orchestrator, words", [
    ("hyperpod", "cannot set AccountingStorageEnforce"),
    ("pcs", "fmcluster's login-node bundle has no step that creates the accounts, users and QoS")])
def test_hyperpod_and_pcs_say_why_they_take_no_teams(tmp_path: Path, orchestrator: str, words: str) -> None:
    example = {"hyperpod": "p5en-hyperpod.yaml", "pcs": "p5-pcs.yaml"}[orchestrator]
    text = (ROOT / "examples" / example).read_text()
    problems = _problems(text + TEAMS.replace("train", config.parse(text).project.compute_groups[0].name), tmp_path)
    assert [p[0] for p in problems] == ["teams-supported"] and words in problems[0][2]


PC = "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n"
TWO_GROUPS = BASE + """\
  - name: infer
    instance_type: p5.48xlarge
    count: 2
orchestrator:
  type: parallelcluster
  parallelcluster: {queues: {gpu: [train, infer]}}
  accounting: {enabled: true}
teams:
  - name: research
    members: [alice]
    instances: {train: {guaranteed: 1}, infer: {guaranteed: 1}}
  - name: prod
    members: [carol]
    instances: {train: {guaranteed: 1}}
"""


def test_differing_shares_in_one_queue_are_refused_naming_the_team_and_queue(tmp_path: Path) -> None:
    [(check, at, message)] = _problems(TWO_GROUPS, tmp_path)
    assert (check, at) == ("teams-one-share-per-queue", "teams[1].instances")  # research: the same in both
    assert "team 'prod' has different shares of the groups in queue 'gpu' (train 1 + 0, infer 0 + 0)" in message
    path = tmp_path / "ok.yaml"  # the same share in each group of the queue: accepted
    path.write_text(TWO_GROUPS.replace("{train: {guaranteed: 1}}\n", "{train: {guaranteed: 1}, infer: {guaranteed: 1}}\n"))
    checks.validate(config.load(path))


@pytest.mark.parametrize("setting, word", [
    ("AccountingStorageEnforce: associations", "drops limits,qos"),
    ("accountingstorageenforce: 'associations,qos'", "drops limits"),
    ("PriorityType: priority/basic", "turns off the fair share"),
])
def test_custom_settings_that_weaken_teams_are_refused_naming_both_keys(tmp_path: Path, setting: str,
                                                                        word: str) -> None:
    text = BASE + ("orchestrator:\n  type: parallelcluster\n  parallelcluster: {slurm: {custom_settings: {"
                   + setting + "}}}\n  accounting: {enabled: true}\n") + TEAMS
    [(check, at, message)] = _problems(text, tmp_path)
    key = setting.split(":")[0]
    assert (check, at) == ("teams-slurm-settings", f"orchestrator.parallelcluster.slurm.custom_settings.{key}")
    assert word in message and "`teams`" in message


def test_custom_settings_that_keep_what_teams_need_are_taken(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(BASE + ("orchestrator:\n  type: parallelcluster\n  parallelcluster: {slurm: {custom_settings: "
                            "{AccountingStorageEnforce: 'associations,limits,qos,safe'}}}\n"
                            "  accounting: {enabled: true}\n") + TEAMS)
    checks.validate(config.load(path))


def test_fair_share_off_beside_teams_is_refused(tmp_path: Path) -> None:
    text = BASE + "orchestrator: {type: parallelcluster, accounting: {enabled: true, fair_share: false}}\n" + TEAMS
    [(check, at, message)] = _problems(text, tmp_path)
    assert (check, at) == ("teams-fair-share", "orchestrator.accounting.fair_share")
