"""docs/teams.md: one meaning per teams key, generated from the code, never stale; every orchestrator says how it
enforces each key it takes, and the validator refuses every key it does not."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import BASE, ROOT

from fmcluster import checks, config, orchestrators
from fmcluster.config.teams import MEANING, Team
from fmcluster.errors import ConfigError
from fmcluster.generate import teamsdoc


def test_the_committed_table_is_current() -> None:
    assert (ROOT / teamsdoc.DOC).read_text(encoding="utf-8") == teamsdoc.render(), "run `make docs`"


def test_every_key_of_a_team_has_one_meaning_and_each_enforced_key_says_how() -> None:
    assert set(MEANING) == set(Team.model_fields) - {"name", "instances"} | {"guaranteed", "borrow"}
    for o in orchestrators.ORCHESTRATORS.values():
        assert [k for k, _ in o.teams_how] == list(o.teams), o.name
        assert set(o.teams) <= set(MEANING), o.name


ASK = {"members": "    members: [alice]\n", "fair_share": "    fair_share: 3\n", "lend": "    lend: false\n",
       "preempt": "    preempt: lower-priority\n"}
SHARE = {"guaranteed": "{guaranteed: 1}", "borrow": "{guaranteed: 1, borrow: 1}"}


@pytest.mark.parametrize("driver", ["parallelcluster", "hyperpod-eks"])
@pytest.mark.parametrize("key", list(MEANING))
def test_a_key_the_table_calls_refused_is_refused_by_validate(tmp_path: Path, driver: str, key: str) -> None:
    orch = {"parallelcluster": "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n",
            "hyperpod-eks": "orchestrator: {type: hyperpod-eks}\n"}[driver]
    team = "teams:\n  - name: research\n" + ASK.get(key, "") + \
        f"    instances: {{train: {SHARE.get(key, '{guaranteed: 1}')}}}\n"
    path = tmp_path / "demo.yaml"
    path.write_text(BASE + orch + team)
    refused = key not in orchestrators.get(driver).teams
    try:
        checks.validate(config.load(path))
        problems = []
    except ConfigError as err:
        problems = [p for p in err.problems if p.check == "teams-supported"]
    assert bool(problems) == refused, (key, driver, [p.message for p in problems])
