"""The replacement guard: `fmcluster plan NEW --against OLD` refuses changes that would replace data."""

from __future__ import annotations

from pathlib import Path

import pytest
from fmcluster.stacks.app import synthesize
from support import BASE
from typer.testing import CliRunner

from fmcluster import guard
from fmcluster.cli import REPLACEMENT_EXIT, app

OLD = BASE + """storage:
  fsx:
    throughput_per_tib: 250
    associations:
      - file_system_path: /datasets
"""


@pytest.fixture(scope="module")
def old_templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("old")
    (folder / "demo.yaml").write_text(OLD)
    return synthesize(folder / "demo.yaml", folder / "out")


def _replacements(old_templates, tmp_path: Path, new_text: str) -> list[guard.Replacement]:
    (tmp_path / "demo.yaml").write_text(new_text)
    return guard.compare(old_templates, synthesize(tmp_path / "demo.yaml", tmp_path / "out"))


def test_raising_throughput_and_adding_an_association_pass(old_templates, tmp_path: Path) -> None:
    new = OLD.replace("throughput_per_tib: 250", "throughput_per_tib: 1000") + "      - file_system_path: /checkpoints\n"
    assert _replacements(old_templates, tmp_path, new) == []


def test_reordering_associations_passes(old_templates, tmp_path: Path) -> None:
    new = OLD.replace("      - file_system_path: /datasets\n",
                      "      - file_system_path: /aaa-first\n      - file_system_path: /datasets\n")
    assert _replacements(old_templates, tmp_path, new) == []


def test_changing_deployment_type_is_refused(old_templates, tmp_path: Path) -> None:
    new = BASE + "storage:\n  fsx:\n    deployment_type: SCRATCH_2\n"
    found = {(r.type, r.reason.split(" ")[0]) for r in _replacements(old_templates, tmp_path, new)}
    assert ("AWS::FSx::FileSystem", "LustreConfiguration/DeploymentType") in found


def test_changing_the_subnet_is_refused(old_templates, tmp_path: Path) -> None:
    new = OLD + "network:\n  compute_subnet_prefix: 21\n"
    found = _replacements(old_templates, tmp_path, new)
    fs = next(r for r in found if r.type == "AWS::FSx::FileSystem")
    assert "SubnetIds refers to demo-network/ComputeSubnet" in fs.reason and "CidrBlock" in fs.reason
    assert any(r.type == "AWS::FSx::DataRepositoryAssociation" for r in found)


def test_enabling_efa_is_refused(old_templates, tmp_path: Path) -> None:
    new = OLD.replace("    throughput_per_tib: 250\n", "    throughput_per_tib: 250\n    efa_enabled: true\n    metadata: {mode: AUTOMATIC}\n")
    found = _replacements(old_templates, tmp_path, new)
    assert any(r.logical_id == "FileSystem" for r in found)


def test_removing_an_association_is_refused(old_templates, tmp_path: Path) -> None:
    new = OLD.replace("    associations:\n      - file_system_path: /datasets\n", "")
    [found] = _replacements(old_templates, tmp_path, new)
    assert found.type == "AWS::FSx::DataRepositoryAssociation" and "no longer" in found.reason


def test_cli_exits_3_and_allow_replace_overrides(tmp_path: Path) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(OLD.replace("name: demo", "name: demo"))
    new.write_text(BASE + "storage:\n  fsx:\n    deployment_type: SCRATCH_2\n")
    runner = CliRunner()
    result = runner.invoke(app, ["plan", str(new), "--against", str(old)])
    assert result.exit_code == REPLACEMENT_EXIT == 3
    assert "demo-storage/FileSystem" in result.stderr and "DeploymentType" in result.stderr
    result = runner.invoke(app, ["plan", str(new), "--against", str(old), "--allow-replace"])
    assert result.exit_code == 0 and "replaces" in result.stderr


def test_schema_gaps_are_still_gaps() -> None:
    """When cfn-lint's schemas start to list one of these as create-only, drop it from SCHEMA_GAPS."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    for kind, paths in guard.SCHEMA_GAPS.items():
        declared = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", kind).schema.get("createOnlyProperties", [])
        assert not set(paths) & set(declared)


def test_shrinking_capacity_is_refused() -> None:
    def template(capacity: int) -> dict:
        return {"demo-storage": {"Resources": {"FileSystem": {"Type": "AWS::FSx::FileSystem", "Properties": {
            "FileSystemType": "LUSTRE", "SubnetIds": ["s"], "StorageCapacity": capacity}}}}}
    assert guard.compare(template(2400), template(4800)) == []
    [found] = guard.compare(template(4800), template(2400))
    assert "shrinks" in found.reason
