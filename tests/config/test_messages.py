"""Messages in the user's words beyond the corpus: a key one level off in either direction, a union inside a
mapping's values, a word where a mapping belongs -- each one message, naming the key's reference section."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import BASE

from fmcluster import config
from fmcluster.errors import ConfigError


def _problems(tmp_path: Path, extra: str) -> list:
    path = tmp_path / "demo.yaml"
    path.write_text(BASE + extra)
    with pytest.raises(ConfigError) as refused:
        config.load(path)
    return refused.value.problems


@pytest.mark.parametrize(("extra", "path", "message", "hint"), [
    ("vpc_cidr: 10.1.0.0/16\n", "vpc_cidr", "'vpc_cidr' belongs under network:",
     "move it there (network.vpc_cidr); see docs/project-file.md#networkvpc_cidr"),
    ("storage:\n  fsx:\n    checkpoint: {parameters: 7e9}\n", "storage.fsx.checkpoint",
     "'checkpoint' belongs one level up, under storage", "move it there (storage.checkpoint)"),
    ("    type: reservation\n", "compute_groups[0].type", "'type' belongs under capacity:", "move it there"),
    ("orchestrator:\n  type: parallelcluster\n  parallelcluster:\n    slurm:\n      custom_settings: {A: [1]}\n",
     "orchestrator.parallelcluster.slurm.custom_settings.A", "a list of 1 is not allowed",
     "write text, a whole number, true or false"),
    ("network: 10.0.0.0/16\n", "network", "should be a mapping (key: value lines), not '10.0.0.0/16'",
     "write it as key: value lines; see docs/project-file.md#network"),
])
def test_one_message_in_the_user_s_words(tmp_path: Path, extra: str, path: str, message: str, hint: str) -> None:
    problems = _problems(tmp_path, extra)
    assert [(p.path, p.message) for p in problems] == [(path, message)]
    assert problems[0].hint.startswith(hint), problems[0].hint
