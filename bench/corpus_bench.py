"""How long a hostile or malformed project file takes to be refused: ``tests/config/corpus/``, each file loaded and
validated in this process (the refusal a user sees from ``fmcluster validate``), medians over ``--runs`` rounds.

Run with `make bench`; writes ``.bench/corpus.json``. Target: every file's median under ``TARGET_SECONDS`` on an
idle machine (the test suite checks each file's message, and the subprocess test bounds memory and time against a
hang; a wall-clock figure belongs here, where it is measured, not in a test on a loaded machine).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from fmcluster import checks, config
from fmcluster.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "config" / "corpus"
TARGET_SECONDS = 0.5


def _once(path: Path) -> float:
    start = time.perf_counter()
    try:
        checks.validate(config.load(path))
    except ConfigError:
        pass
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    files = sorted(p for p in CORPUS.glob("*.yaml") if p.name != "expected.yaml")
    for path in files:  # warm-up: imports, rule caches
        _once(path)
    times: dict[str, list[float]] = {p.name: [] for p in files}
    for _ in range(args.runs):
        for path in files:
            times[path.name].append(_once(path))
    medians = {name: round(statistics.median(values), 4) for name, values in times.items()}
    slowest = max(medians, key=medians.__getitem__)
    result = {"runs": args.runs, "median_seconds": medians, "slowest": slowest, "target_seconds": TARGET_SECONDS,
              "met": medians[slowest] <= TARGET_SECONDS}
    out = ROOT / ".bench" / "corpus.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"corpus: slowest {slowest} {medians[slowest]:.3f} s (target {TARGET_SECONDS} s, "
          f"{'met' if result['met'] else 'NOT met'}); {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
