"""Fixtures for the bootstrap tests (helpers live in bootstrap_support.py: every test folder
shares one `conftest` module name, so nothing is imported from here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fmcluster.bootstrap import context
from support.sandbox import (
    FSX,
    Image,
    Sandbox,
    build_sandbox,
    context_for,
    make_project,
)


@pytest.fixture
def p5_context() -> context.BootstrapContext:
    project = make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster")
    return context_for(project, "gpu", "compute", fsx=FSX)  # the real versions.yaml


@pytest.fixture
def make_sandbox(tmp_path: Path):
    def make(ctx: context.BootstrapContext, image: Image | None = None, **kw) -> Sandbox:
        return build_sandbox(tmp_path / "sb", ctx, image or Image(), **kw)

    return make
