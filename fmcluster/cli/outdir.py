"""The one folder commands write into by default."""

from __future__ import annotations

from pathlib import Path

OUTPUT_ROOT = Path("out")
"""Where commands write what they make, by default (git-ignored): ``out/PROJECT/`` (cluster.yaml, the diagram, the
bootstrap bundles, the acceptance jobs); ``--out`` puts it elsewhere."""


def default_out(project_name: str, what: str) -> Path:
    """``out/PROJECT/WHAT``: one git-ignored folder per project for every file a command writes by default."""
    return OUTPUT_ROOT / project_name / what
