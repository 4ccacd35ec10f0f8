"""Shared fixtures: the promtool binary (a hard failure in CI, a skip with a hint locally)."""

from __future__ import annotations

import os
import shutil

import pytest

INSTALL_HINT = "promtool not found; install it with `apt-get install prometheus` (Debian/Ubuntu)"


@pytest.fixture(scope="session")
def promtool() -> str:
    """Path to promtool. CI (CI=true) must have it; a workstation without it skips these tests."""
    path = shutil.which("promtool")
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(INSTALL_HINT + " -- CI must install it (.ci/run)", pytrace=False)
        pytest.skip(INSTALL_HINT)
    return path
