"""Synthesize every example (and the default project) in one app run, or compare two such runs byte for byte.

    python bench/snapshot.py synth OUTDIR     # `cdk synth -c project=all` over examples/ + projects/
    python bench/snapshot.py diff OLD NEW     # every file of the two cdk.out folders, byte for byte

A change made for speed must leave every template and asset as it was: synthesize before, synthesize after,
and diff. The run also holds a project with a rule file of its own (``extra_rule_files``), which no example has.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

EXTRA_RULES = """groups:
  - name: team-own
    rules:
      - alert: TeamJobStuck
        expr: 'sum(rate(slurm_job_state_changes_total[30m])) == 0 and on() slurm_jobs_running > 0'
        for: 1h
        labels: {severity: warning}
        annotations:
          summary: "No job changed state for an hour while jobs run: a long line that PyYAML folds somewhere, \\
            libyaml elsewhere"
"""


def synth(outdir: Path) -> None:
    projects = ROOT / ".bench" / "snapshot-projects"  # one fixed place: a path could show in the output
    shutil.rmtree(projects, ignore_errors=True)
    projects.mkdir(parents=True)
    for path in [*sorted((ROOT / "examples").glob("*.yaml")), ROOT / "projects" / "default.yaml"]:
        name = re.search(r"^name: *(\S+)", path.read_text(), re.M).group(1)  # a project file is named as its project
        shutil.copy(path, projects / f"{name}.yaml")
    (projects / "own-rules.rules.yml").write_text(EXTRA_RULES)
    text = (ROOT / "projects" / "default.yaml").read_text()
    assert "\nobservability:" not in text, "projects/default.yaml has an observability section: edit own-rules"
    body = text.replace("name: default", "name: own-rules").replace("10.0.0.0/16", "10.99.0.0/16")
    (projects / "own-rules.yaml").write_text(body + "observability: {extra_rule_files: [own-rules.rules.yml]}\n")
    shutil.rmtree(outdir, ignore_errors=True)
    path = f"{ROOT / 'node_modules' / '.bin'}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "FMCLUSTER_PROJECTS_DIR": str(projects), "CDK_OUTDIR": str(outdir),
           "CDK_CONTEXT_JSON": json.dumps({"project": "all"})}
    subprocess.run([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env, check=True)


def diff(old: Path, new: Path) -> int:
    def files(base: Path) -> set[str]:
        return {str(p.relative_to(base)) for p in base.rglob("*") if p.is_file()}

    a, b = files(old), files(new)
    problems = [f"only in {old}: {name}" for name in sorted(a - b)]
    problems += [f"only in {new}: {name}" for name in sorted(b - a)]
    problems += [f"differs: {name}" for name in sorted(a & b) if not filecmp.cmp(old / name, new / name, shallow=False)]
    for line in problems:
        print(line)
    print(f"{len(a & b)} files compared, {len(problems)} differences")
    return 1 if problems else 0


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "synth":
        synth(Path(sys.argv[2]).resolve())
    elif len(sys.argv) == 4 and sys.argv[1] == "diff":
        sys.exit(diff(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
