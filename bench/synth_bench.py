"""Synth-time benchmarks. Run with `make bench`.

1. The default project against the jsii floor (a one-resource CDK app), in the same run:
   target default <= 1.5 x floor. CDK 2.27x runs a built-in CloudFormation validation
   engine on every synth (about a second); fmcluster turns it off (cfn-lint checks every
   template in the tests instead), so the run also reports the floor without that engine
   ("floor_bare") and the default project without cdk-nag, to show where time goes.
2. One project synthesized while projects/ holds 20 projects, against the same project
   alone: target within 10 %.

Each measurement is the median wall time of several fresh processes (what `cdk synth`
runs), interleaved so that machine noise hits every variant alike. Ratios, not absolute
seconds, are the result: the machines are shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _env(projects_dir: Path, outdir: Path, project: str, **context: str) -> dict[str, str]:
    path = f"{ROOT / 'node_modules' / '.bin'}{os.pathsep}{os.environ['PATH']}"
    return {**os.environ, "PATH": path, "FMCLUSTER_PROJECTS_DIR": str(projects_dir), "CDK_OUTDIR": str(outdir),
            "CDK_CONTEXT_JSON": json.dumps({"project": project, **context})}


def _time(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def make_projects(folder: Path, count: int) -> None:
    """``count`` projects like the default one, each with its own name and VPC CIDR."""
    text = (ROOT / "projects" / "default.yaml").read_text()
    for i in range(count):
        name = "default" if i == 0 else f"team-{i:02d}"
        body = text.replace("name: default", f"name: {name}").replace("10.0.0.0/16", f"10.{i}.0.0/16")
        (folder / f"{name}.yaml").write_text(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="runs per variant (>= 5)")
    args = parser.parse_args()
    runs = max(5, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        alone, among = tmp_path / "alone", tmp_path / "among20"
        alone.mkdir()
        among.mkdir()
        make_projects(alone, 1)
        make_projects(among, 20)
        out = tmp_path / "out"
        floor = [sys.executable, str(ROOT / "bench" / "floor_app.py")]
        app = [sys.executable, str(ROOT / "app.py")]
        variants = {
            "floor": (floor, _env(alone, out, "default")),
            "floor_bare": (floor, {**_env(alone, out, "default"), "FLOOR_BARE": "1"}),
            "default": (app, _env(alone, out, "default")),
            "default_without_nag": (app, _env(alone, out, "default", nag="false")),
            "default_among_20": (app, _env(among, out, "default")),
        }
        samples: dict[str, list[float]] = {name: [] for name in variants}
        for name, (cmd, env) in variants.items():  # warm-up: file caches, .pyc
            _time(cmd, env)
        for _ in range(runs):
            for name, (cmd, env) in variants.items():
                shutil.rmtree(out, ignore_errors=True)
                samples[name].append(_time(cmd, env))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    result = {
        "runs": runs,
        "median_seconds": {k: round(v, 3) for k, v in medians.items()},
        "default_over_floor": round(medians["default"] / medians["floor"], 3),
        "default_over_floor_bare": round(medians["default"] / medians["floor_bare"], 3),
        "default_without_nag_over_floor_bare": round(medians["default_without_nag"] / medians["floor_bare"], 3),
        "among_20_over_alone": round(medians["default_among_20"] / medians["default"], 3),
        "targets": {"default_over_floor": 1.5, "among_20_over_alone": 1.10},
    }
    result["met"] = {
        "default_over_floor": result["default_over_floor"] <= 1.5,
        "among_20_over_alone": result["among_20_over_alone"] <= 1.10,
    }
    (ROOT / ".bench").mkdir(exist_ok=True)
    (ROOT / ".bench" / "synth.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
