"""Fixtures for the bootstrap tests (helpers live in bootstrap_support.py: every test folder
shares one `conftest` module name, so nothing is imported from here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bootstrap_support import FSX, Image, Sandbox, build_sandbox, fake_artifacts, make_project, test_versions

from fmcluster.bootstrap import render


@pytest.fixture
def p5_context() -> render.BootstrapContext:
    project = make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster")
    versions = test_versions(fake_artifacts())
    return render.context_for(project, "gpu", "compute", fsx=FSX, versions=versions)


@pytest.fixture
def make_sandbox(tmp_path: Path):
    def make(ctx: render.BootstrapContext, image: Image | None = None, **kw) -> Sandbox:
        return build_sandbox(tmp_path / "sb", ctx, image or Image(), **kw)

    return make
