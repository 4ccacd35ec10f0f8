"""Small builders for test project files."""

from __future__ import annotations

import textwrap

BASE = """\
name: demo
availability_zone_id: use1-az6
compute_groups:
  - name: train
    instance_type: p5.48xlarge
    count: 2
"""


def project_text(extra: str = "", base: str = BASE) -> str:
    return base + textwrap.dedent(extra)
