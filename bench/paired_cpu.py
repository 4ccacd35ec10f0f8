"""CPU seconds of some tests on two trees, runs interleaved: what a test-suite lever saves (bench/levers.md).

    .venv/bin/python bench/paired_cpu.py --label shellcheck --base /tmp/base --runs 3 -- tests/bootstrap/test_lint.py

runs ``pytest -q -n 0 -p no:cacheprovider ARGS`` in ``--base`` (a checkout of the old code: ``git worktree add
--detach /tmp/base BASE``) and in this checkout, alternately, each run cold (FMC_LINT_CACHE on an empty folder, so
every linter runs, as in CI) and with the same interpreter (this checkout's venv: the product code is the same; only
the tests differ). It measures user + system CPU of the pytest process and every process it waited for (shellcheck,
cfn-lint, bash, jsii's Node.js; ``os.wait4``), which other work on a shared machine barely moves, and wall time, which
it does. Prints the medians and writes them to ``.bench/paired-LABEL.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def run_once(tree: Path, args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, exit status) of one pytest run in ``tree``."""
    with tempfile.TemporaryDirectory(prefix="fmc-lint-cache-") as cache:
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *args],
                                cwd=tree, env=env | {"FMC_LINT_CACHE": cache}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        return usage.ru_utime + usage.ru_stime, time.monotonic() - start, os.waitstatus_to_exitcode(status)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", required=True)
    parser.add_argument("--base", type=Path, required=True, help="a checkout of the old code")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("args", nargs="+", help="pytest arguments (test files, -k ...)")
    opts = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    trees = {"before": opts.base.resolve(), "after": HERE}
    for tree in trees.values():  # warm-up: bytecode, jsii's package cache, Jinja's bytecode cache
        run_once(tree, opts.args, env)
    samples: dict[str, list[tuple[float, float, int]]] = {name: [] for name in trees}
    for i in range(opts.runs):
        order = list(trees) if i % 2 == 0 else list(reversed(trees))
        for name in order:
            samples[name].append(run_once(trees[name], opts.args, env))
            print(name, *(f"{x:.1f}" for x in samples[name][-1][:2]), samples[name][-1][2], flush=True)
    result = {"label": opts.label, "args": opts.args, "runs": opts.runs, "base": str(opts.base)}
    for name, got in samples.items():
        result[name] = {"median_cpu_seconds": round(statistics.median(c for c, _, _ in got), 2),
                        "median_wall_seconds": round(statistics.median(w for _, w, _ in got), 2),
                        "cpu_seconds": [round(c, 2) for c, _, _ in got], "exit_codes": [r for _, _, r in got]}
    out = HERE / ".bench" / f"paired-{opts.label}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
