"""Where synthesis time goes. Run by `make bench` after ``synth_bench.py``; writes ``.bench/profile.json``.

One fresh process per count (1 and 20 projects like the default one, as ``synth_bench.make_projects`` makes them),
each running ``app.py``'s ``main()`` in process under cProfile, with every jsii request counted and timed:

- ``jsii``: round trips by request kind (create, invoke, get...), per project beyond the first; the count is
  deterministic, so a change that adds round trips shows even on a noisy machine;
- ``jsii.seconds``: wall time spent waiting on jsii's Node.js process (its construct work, and ``synth``: CDK's
  synthesis and cdk-nag);
- ``python``: this process's own CPU (``time.process_time``: Node.js excluded), and the functions that take most.

The profiler slows Python down; compare the shares and counts, not the seconds, with ``synth.json``.
"""

from __future__ import annotations

import collections
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from synth_bench import _env, make_projects  # noqa: E402


def child(projects: Path, outdir: Path) -> dict:
    os.environ.update(_env(projects, outdir, "all"))
    from jsii._kernel.providers import process

    kinds: collections.Counter[str] = collections.Counter()
    waited: collections.Counter[str] = collections.Counter()
    send = process._NodeProcess.send

    def counted(self, request, response_type):  # noqa: ANN001, ANN202
        start = time.perf_counter()
        try:
            return send(self, request, response_type)
        finally:
            kind = type(request).__name__.removesuffix("Request")
            name = getattr(request, "method", None) if kind == "Invoke" else None
            kinds[kind] += 1
            waited["synth" if name == "synth" else kind] += time.perf_counter() - start

    process._NodeProcess.send = counted
    profile = cProfile.Profile()
    cpu, wall = time.process_time(), time.perf_counter()
    profile.enable()
    from fmcluster.stacks.app import main

    main()
    profile.disable()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    stats = pstats.Stats(profile)
    top = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:15]  # by own time
    return {
        "wall_seconds": round(wall, 3),
        "python_cpu_seconds": round(cpu, 3),
        "jsii": {"round_trips": sum(kinds.values()), "by_kind": dict(kinds.most_common()),
                 "seconds": {k: round(v, 3) for k, v in waited.most_common()}},
        "python_top_own_time": [{"function": f"{Path(f).name}:{line}({fn})", "calls": nc, "seconds": round(tt, 3)}
                                for (f, line, fn), (_, nc, tt, _, _) in top],
    }


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(child(Path(sys.argv[2]), Path(sys.argv[3]))))
        return
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        for count in (1, 20):
            folder = Path(tmp) / str(count)
            folder.mkdir()
            make_projects(folder, count)
            done = subprocess.run([sys.executable, __file__, "--child", str(folder), str(Path(tmp) / f"out{count}")],
                                  cwd=ROOT, capture_output=True, text=True, check=True)
            result[f"projects_{count}"] = json.loads(done.stdout.splitlines()[-1])
    one, twenty = result["projects_1"], result["projects_20"]
    result["per_added_project"] = {
        "jsii_round_trips": round((twenty["jsii"]["round_trips"] - one["jsii"]["round_trips"]) / 19, 1),
        "python_cpu_seconds": round((twenty["python_cpu_seconds"] - one["python_cpu_seconds"]) / 19, 3),
        "jsii_wait_seconds": round((sum(twenty["jsii"]["seconds"].values())
                                    - sum(one["jsii"]["seconds"].values())) / 19, 3),
    }
    (ROOT / ".bench").mkdir(exist_ok=True)
    (ROOT / ".bench" / "profile.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k == "per_added_project"}
                     | {f"{k}_jsii": v["jsii"] for k, v in result.items() if k.startswith("projects_")}, indent=2))


if __name__ == "__main__":
    main()
