"""Fixtures shared by the account-command tests."""

from __future__ import annotations

import importlib.util

import pytest
from moto import mock_aws
from support import ROOT

MOTO_REGION = "us-east-1"


@pytest.fixture
def moto(monkeypatch: pytest.MonkeyPatch):
    """In-process moto in MOTO_REGION with test credentials, and the rehearsal's teardown patches
    (tests/rehearsal/moto_teardown.py: what moto's delete paths lack)."""
    spec = importlib.util.spec_from_file_location("moto_teardown", ROOT / "tests" / "rehearsal" / "moto_teardown.py")
    patch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(patch)
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_DEFAULT_REGION", MOTO_REGION)):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        patch.install(monkeypatch.setattr)
        yield
