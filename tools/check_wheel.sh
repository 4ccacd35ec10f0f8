#!/usr/bin/env bash
# The built wheel installs into a fresh virtual environment and works from there: `fmcluster plan`,
# `--version`, `fmcluster new` in a folder without projects/ (the default project ships inside it),
# `fmcluster bootstrap render` and a synthesis of the default project, with every template shipped
# and no generic top-level import name (stacks, bootstrap, templates) installed.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$repo/.venv/bin/pip" wheel --quiet --no-deps --wheel-dir "$work/dist" "$repo"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet "$work"/dist/fmcluster-*.whl

mkdir -p "$work/run/projects"
cp "$repo/projects/default.yaml" "$work/run/projects/"
cd "$work/run"
"$work/venv/bin/fmcluster" plan default > plan.txt
"$work/venv/bin/fmcluster" --version | grep '^fmcluster [0-9]' >/dev/null
# A fresh folder with no projects/: `new` copies the default project shipped inside the wheel.
mkdir "$work/fresh"
(cd "$work/fresh" && "$work/venv/bin/fmcluster" new first-team > new.txt \
  && "$work/venv/bin/fmcluster" validate first-team > validate.txt)
"$work/venv/bin/fmcluster" bootstrap render default --out bundles > render.txt
ls bundles/*/bootstrap.sh bundles/*/steps/99-healthcheck.sh > /dev/null
for name in stacks bootstrap templates; do
  if "$work/venv/bin/python" -c "import $name" 2> /dev/null; then
    echo "check_wheel: the wheel installs a top-level '$name' package" >&2
    exit 1
  fi
done
# jsii needs Node >= 22: the project's own, as `make` uses it.
PATH="$repo/node_modules/.bin:$PATH" "$work/venv/bin/python" - <<'PY' 2> synth.err
from pathlib import Path

from fmcluster.stacks.app import synthesize

stacks = synthesize("projects/default.yaml", Path("cdk.out"))
assert sorted(stacks) == ["default-cluster", "default-network", "default-observability", "default-storage"], stacks
PY
echo "check_wheel: ok ($(basename "$work"/dist/*.whl) installs and plans, renders and synthesizes the default project)"
