"""`fmcluster plan` says what can lose data before a deploy does: an auto-sized FSx with the advice to pin it,
and each data repository association's flows in words (which deletions reach S3)."""

from __future__ import annotations

import io

from rich.console import Console
from support import BASE

from fmcluster import checks, config
from fmcluster.cli.planview import print_plan


def render(text: str) -> str:
    plan, _ = checks.validate(config.parse(text))
    buffer = io.StringIO()
    print_plan(plan, Console(file=buffer, width=200, color_system=None, force_terminal=False))
    return buffer.getvalue()


def test_an_auto_sized_file_system_is_shown_with_the_advice_to_pin_it() -> None:
    out = render(BASE + "storage:\n  checkpoint: {parameters: 70e9}\n")
    line = next(line for line in out.splitlines() if line.startswith("pin it"))
    capacity = next(line for line in out.splitlines() if line.startswith("file system")).split(", ")[1].split(" ")[0]
    assert f"storage_capacity_gib: {capacity.replace(',', '')}" in line and "auto-sized" in line


def test_a_pinned_file_system_gets_no_advice() -> None:
    out = render(BASE + "storage:\n  fsx: {storage_capacity_gib: 2400}\n")
    assert "pin it" not in out and "sized by the planner" not in out


def test_the_plan_says_which_deletions_reach_s3() -> None:
    out = render(BASE + """storage:
  external_buckets: [team-datasets]
  fsx:
    associations:
      - file_system_path: /datasets
        data_repository_path: s3://team-datasets/llm/
      - file_system_path: /checkpoints
        export_events: [NEW, CHANGED, DELETED]
""")
    assert "deleting a file under /checkpoints deletes it in s3://<the demo-storage bucket>/checkpoints/" in out
    assert "/datasets <-> s3://team-datasets/llm/ (a bucket the project does not own)" in out
    assert "deleting a file under /datasets" not in out
