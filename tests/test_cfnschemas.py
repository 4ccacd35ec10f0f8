"""The guard reads cfn-lint's resource schemas itself (:mod:`fmcluster.generate.cfnschemas`): the same schema cfn-lint
gives, from the folder cfn-lint would choose, without importing cfn-lint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cfnlint.schema.manager import ProviderSchemaManager
from support import ROOT

from fmcluster import guard
from fmcluster.generate import cfnschemas

JUDGED = sorted({*guard.STATEFUL_TYPES, *guard.CUSTOM_NAMES, *guard.SCHEMA_GAPS,
                 "AWS::EC2::Subnet", "AWS::EC2::VPC", "AWS::EC2::SecurityGroup", "AWS::EC2::LaunchTemplate",
                 "AWS::IAM::Role", "AWS::KMS::Key", "AWS::CDK::Metadata", "Custom::AWSCDKOpenIdConnectProvider"})
"""What the guard compares (its stateful and custom-named types) and what it meets beside them in our templates."""


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    for cached in (cfnschemas.resource_schema, cfnschemas._hashes):
        cached.cache_clear()
    yield
    for cached in (cfnschemas.resource_schema, cfnschemas._hashes):
        cached.cache_clear()


@pytest.mark.parametrize("resource_type", JUDGED)
def test_the_schema_is_the_one_cfn_lint_gives(resource_type: str, fresh: None) -> None:
    assert cfnschemas.schema_dirs() is not None, "cfn-lint's schema folder was not found: the guard asks cfn-lint"
    expected = ProviderSchemaManager().get_resource_schema("us-east-1", resource_type).schema
    assert cfnschemas.resource_schema(resource_type) == expected


def test_a_newer_cache_wins_as_in_cfn_lint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    """`cfn-lint --update-specs` writes newer schemas to the cache folder: both readers take them, an older cache is
    ignored by both, and the schema read is the cache's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = tmp_path / "aws" / "cfn-lint" / "schemas"
    (cache / "providers").mkdir(parents=True)
    (cache / "resources").mkdir()
    (cache / "providers" / "us-east-1.json").write_text(json.dumps({"AWS::FSx::FileSystem": "cafe"}))
    marked = {"typeName": "AWS::FSx::FileSystem", "createOnlyProperties": ["/properties/Marked"]}
    (cache / "resources" / "cafe.json").write_text(json.dumps(marked))
    for date, chosen in (("2001-01-01T00:00:00Z", "bundled"), ("2999-01-01T00:00:00Z", "cache")):
        (cache / "version.json").write_text(json.dumps({"schema_date": date}))
        cfnschemas.resource_schema.cache_clear()
        cfnschemas._hashes.cache_clear()
        theirs = ProviderSchemaManager._resolve_schema_dirs()
        assert [d.resolve() for d in cfnschemas.schema_dirs()] == [d.resolve() for d in theirs], date
        assert (cfnschemas.schema_dirs()[0].parent == cache) == (chosen == "cache")
        got = cfnschemas.resource_schema("AWS::FSx::FileSystem")
        assert (got == marked) == (chosen == "cache"), got.get("createOnlyProperties")
        assert got == ProviderSchemaManager().get_resource_schema("us-east-1", "AWS::FSx::FileSystem").schema


def test_the_guard_does_not_import_cfn_lint() -> None:
    """cfn-lint's package loads every lint rule (about 1.3 s of CPU): `fmcluster deploy` and `plan --against` read
    create-only paths without it."""
    code = ("import sys; from fmcluster import guard; "
            "paths = guard.create_only_paths('AWS::FSx::FileSystem'); "
            "assert '/properties/SubnetIds' in paths, paths; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cfnlint'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
