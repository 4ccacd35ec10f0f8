"""README.md's and the docs pages' examples are true (docs/*.md: what README used to hold, tests/test_docs.py):
every YAML block is a project that validates with no error or warning, and every `fmcluster ...` and `make ...`
command they show exists, with every option it names."""

from __future__ import annotations

import re
from pathlib import Path

from typing import Any

import pytest
import typer.main
import yaml
from support import ROOT

from fmcluster import checks, config
from fmcluster.cli import app
from fmcluster.config.project import Project

README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = {"README.md": README} | {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
                                 for p in sorted((ROOT / "docs").rglob("*.md"))}
TEXT = "\n".join(PAGES.values())
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", TEXT, re.S | re.M)
README_BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README, re.S | re.M)
YAML_BLOCKS = [body for lang, body in BLOCKS if lang == "yaml"]


def commands(program: str) -> list[str]:
    """Every command line for ``program`` that README and the docs pages show: in code blocks (with their
    continuation lines) and in inline code that starts with the program's name."""
    found: list[str] = []
    for lang, body in BLOCKS:
        if lang == "yaml":
            continue
        previous = False  # the line above is one of this program's commands
        for line in body.splitlines():
            text = line.split(" #", 1)[0].rstrip()
            if text.startswith(program + " "):
                found.append(text)
                previous = True
            elif previous and line[:1].isspace() and text.strip().startswith(("[", "-")):
                found[-1] += " " + text.strip()  # a continuation line of the command above
            else:
                previous = False
    found += [span for span in re.findall(r"`([^`\n]+)`", TEXT) if span.startswith(program + " ")]
    return found


FMCLUSTER = commands("fmcluster")
MAKE = commands("make")


def test_readme_shows_commands_and_projects() -> None:
    assert len(FMCLUSTER) > 20 and len(MAKE) > 5 and len(YAML_BLOCKS) >= 2


PROJECT_BLOCKS = [body for body in YAML_BLOCKS if re.search(r"^name:", body, re.M)]
FRAGMENTS = [body for body in YAML_BLOCKS if body not in PROJECT_BLOCKS]
"""A block with a top-level ``name:`` is a whole project; one without is a part of one (a section to add)."""


@pytest.mark.parametrize("index", range(len(PROJECT_BLOCKS)))
def test_every_yaml_block_validates_with_no_warning(index: int, tmp_path: Path) -> None:
    path = tmp_path / f"readme-{index}.yaml"
    path.write_text(PROJECT_BLOCKS[index], encoding="utf-8")
    _, warnings = checks.validate(config.load(path))  # raises ConfigError, listing every error
    assert [w.format() for w in warnings] == []


def unknown_top_level_keys(fragment: str) -> list[str]:
    """What of a project's part (``orchestrator: {...}`` to add to one) is not a project's top-level key."""
    data = yaml.safe_load(fragment)
    return sorted(set(data) - set(Project.model_fields)) if isinstance(data, dict) else [repr(data)]


def test_every_yaml_fragment_names_project_keys() -> None:
    assert {block: unknown_top_level_keys(block) for block in FRAGMENTS if unknown_top_level_keys(block)} == {}
    assert unknown_top_level_keys("orchestrator: {type: pcs}\nnetwrok: {}\n") == ["netwrok"]


def _resolve(line: str) -> tuple[Any, list[str]]:
    """The (click) command a README line names, and the options it gives; fails on a subcommand that does not exist."""
    command = typer.main.get_command(app)
    for word in line.split()[1:]:
        if not hasattr(command, "commands") or word.startswith(("-", "[")):
            break
        assert word in command.commands, f"{line!r}: {command.name or 'fmcluster'} has no command {word!r}"
        command = command.commands[word]
    options = re.findall(r"(?<![\w/.-])(--?[A-Za-z][\w-]*)", line)
    return command, options


@pytest.mark.parametrize("line", FMCLUSTER)
def test_every_fmcluster_command_exists_with_its_options(line: str) -> None:
    command, options = _resolve(line)
    known = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)} | {"--help"}
    if command.context_settings.get("ignore_unknown_options"):  # `deploy` passes what it does not know to `cdk deploy`
        options = [o for o in options if o in known or not o.startswith("--") or o.startswith("--allow")]
    assert [o for o in options if o not in known] == [], f"{line!r}: options {command.name} does not take"


def test_a_misspelt_command_or_option_is_caught() -> None:
    with pytest.raises(AssertionError):
        _resolve("fmcluster capacity serch --count 2")
    command, options = _resolve("fmcluster plan PROJECT --widest")
    assert "--widest" in options and "--widest" not in {o for p in command.params for o in p.opts}


def _make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", makefile, re.M))


@pytest.mark.parametrize("line", MAKE)
def test_every_make_command_is_a_target(line: str) -> None:
    words = [w for w in line.split()[1:] if "=" not in w]
    assert words and all(w in _make_targets() for w in words), f"{line!r}: targets are {sorted(_make_targets())}"


QUICK_PATH = next(body for lang, body in README_BLOCKS
                  if "fmcluster new llama-pretrain" in body and "destroy" in body)
"""The block of README's "From a new project to a first job, and back": one command a step."""


def test_the_first_screen_says_what_it_is_and_how_to_set_up() -> None:
    first = README.split("\n## ", 2)
    assert first[0].lstrip().startswith("# fmcluster") and "training cluster on AWS" in first[0]
    assert first[1].startswith("Set up") and "make synth" in first[1] and "make test" in first[1]
    assert README.index("## From a new project to a first job") < README.index("## A project file")


def test_the_quick_path_walks_from_new_to_destroy_in_order() -> None:
    steps = [line.split("#", 1)[0].split() for line in QUICK_PATH.splitlines() if line.strip()]
    words = [" ".join(s[:3]) if s[1] in ("acceptance", "dashboards") else " ".join(s[:2]) for s in steps]
    assert words == ["fmcluster new", "fmcluster validate", "fmcluster plan", "fmcluster preflight", "cdk bootstrap",
                     "fmcluster deploy", "fmcluster status", "fmcluster connect", "fmcluster acceptance render",
                     "fmcluster acceptance first-job", "fmcluster dashboards push", "fmcluster destroy"]


def test_the_quick_path_s_offline_steps_run_as_written_on_a_fresh_folder(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """new, validate, plan (with its cost, no credentials), acceptance render and first-job, literally as README
    writes them, in an empty folder: the steps that call AWS are rehearsed against moto (tests/rehearsal) and by
    their own tests."""
    from typer.testing import CliRunner

    from fmcluster.cli import app as cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(tmp_path / "projects"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    runner = CliRunner()
    offline = ("new", "validate", "plan", "acceptance")
    for line in QUICK_PATH.splitlines():
        words = line.split("#", 1)[0].split()
        if not words or words[0] != "fmcluster" or words[1] not in offline:
            continue
        result = runner.invoke(cli, words[1:])
        assert result.exit_code == 0, (line, result.output)
    assert (tmp_path / "projects" / "llama-pretrain.yaml").is_file()
    assert (tmp_path / "acceptance" / "first-job").is_dir()
