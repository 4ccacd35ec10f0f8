"""Shipped projects pass their own checks: ``projects/*.yaml`` and every ``examples/*.yaml`` validate with no
warning (a newcomer's first `make synth` or `fmcluster new` must not open with a warning about our own file)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import ALL_FILES

from fmcluster import checks, config


@pytest.mark.parametrize("path", ALL_FILES, ids=[p.stem for p in ALL_FILES])
def test_a_shipped_project_validates_with_no_warning(path: Path) -> None:
    _, warnings = checks.validate(config.load(path))
    assert [w.format() for w in warnings] == []
