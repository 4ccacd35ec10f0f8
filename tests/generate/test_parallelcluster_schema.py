"""Every generated configuration against ParallelCluster's own schema and offline validators.

The ``aws-parallelcluster`` package lives in ``.venv-pcluster`` (it pins CDK v1 and jsii 1.85);
``tools/pcluster_validate.py`` runs there, once, over every config written here.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from support import ALL_FILES, ROOT, generated, load, moto_instance_types, project_dict

from fmcluster import catalog, config
from fmcluster import pcluster_facts as support
from fmcluster.generate import placeholders

PYTHON = ROOT / ".venv-pcluster" / "bin" / "python"
TOOL = ROOT / "tools" / "pcluster_validate.py"

ALLOWED_WARNINGS = {
    # fmcluster uses SSM Session Manager, never a key pair.
    "KeyPairValidator": "If you do not specify a key pair",
    # A reservation made outside a placement group launches without one: a new group would be
    # unrelated to the reservation (PlacementGroupCapacityReservationValidator warns about that).
    # On-demand queues always get a group (tests/generate/test_parallelcluster.py), so only
    # reservation queues reach this warning.
    "EfaPlacementGroupValidator": "Placement group is disabled for queue",
}


def _venv() -> Path:
    if PYTHON.exists():
        return PYTHON
    message = "no .venv-pcluster: run `make pcluster-venv` to validate against the real ParallelCluster schema"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def _projects() -> dict[str, config.LoadedProject]:
    """Every project and example file using ParallelCluster, every example turned into one, and one
    project per catalog type ParallelCluster supports (capacity block and on-demand)."""
    out: dict[str, config.LoadedProject] = {}
    for path in ALL_FILES:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if data.get("orchestrator", {}).get("type") == "parallelcluster":
            out[f"file-{path.stem}"] = config.load(path)
        else:
            data = copy.deepcopy(data)
            data["orchestrator"] = {"type": "parallelcluster"}
            out[f"as-pc-{path.stem}"] = load(data, str(path))
    for name, instance in catalog.CATALOG.items():
        if not support.supports_instance_type(name):
            continue
        slug = name.split(".")[0].replace("-", "")
        block = 9 if instance.ultraservers else 4
        groups = [{"name": "block", "instance_type": name, "count": block,
                   "capacity": {"type": "capacity-block", "reservation_id": "cr-0fedcba9876543210"}}]
        out[f"type-{slug}-block"] = load(project_dict(name=f"t-{slug}-b", os="ubuntu-24.04", compute_groups=groups))
        if not instance.ultraservers:
            groups = [{"name": "od", "instance_type": name, "count": 2},
                      {"name": "odcr", "instance_type": name, "count": 2,
                       "capacity": {"type": "reservation", "reservation_id": "cr-0123456789abcdef0"}}]
            out[f"type-{slug}-od"] = load(project_dict(
                name=f"t-{slug}-o", compute_groups=groups,
                orchestrator={"type": "parallelcluster", "parallelcluster": {
                    "login_nodes": {"count": 1}, "slurm": {"custom_settings": {"SuspendTimeout": 600}}}}))
    # Slurm accounting: SlurmSettings.Database, the client group on the head node, fair share and GPU TRES
    out["accounting"] = load(project_dict(name="acct", orchestrator={
        "type": "parallelcluster",
        "accounting": {"enabled": True, "tres": ["gres/gpu", "license/matlab"]}}))
    return out


def _facts() -> dict:
    """Answers for the lookups registration needs: moto's snapshot of DescribeInstanceTypes (and,
    for types moto lacks, a record of the catalog's confirmed figures only), the placeholder subnet
    and file system."""
    moto = moto_instance_types()
    wanted = set(catalog.CATALOG) | {"m7i.4xlarge", "m7g.4xlarge", "m7i.2xlarge", "m7g.2xlarge"}
    types = {t: moto[t] for t in wanted if t in moto}
    for name in set(catalog.CATALOG) - set(types):
        it = catalog.get(name)
        types[name] = {
            "InstanceType": name,
            "ProcessorInfo": {"SupportedArchitectures": [it.architecture]},
            "GpuInfo": {"Gpus": [{"Count": it.gpus, "Manufacturer": "NVIDIA", "Name": it.gpu_model}]},
            "NetworkInfo": {"EfaSupported": True, "MaximumNetworkCards": it.network_cards,
                            "EfaInfo": {"MaximumEfaInterfaces": it.max_efa_interfaces},
                            "NetworkCards": [{"NetworkCardIndex": i, "MaximumNetworkInterfaces": n or 1}
                                             for i, n in enumerate(it.max_enis_per_card)]},
        }
    net = placeholders.NETWORK
    return {
        "instance_types": types,
        "subnets": {net.compute_subnet_id: {"SubnetId": net.compute_subnet_id, "VpcId": net.vpc_id,
                                            "AvailabilityZone": "us-east-1a", "AvailabilityZoneId": "use1-az6",
                                            "CidrBlock": "10.0.0.0/20", "State": "available"}},
        "file_systems": {"fs-00000000000000000": {
            "FileSystemId": "fs-00000000000000000", "FileSystemType": "LUSTRE", "Lifecycle": "AVAILABLE",
            "SubnetIds": [net.compute_subnet_id], "NetworkInterfaceIds": ["eni-00000000000000000"],
            "VpcId": net.vpc_id, "LustreConfiguration": {"DeploymentType": "PERSISTENT_2"}}},
    }


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    python = _venv()
    folder = tmp_path_factory.mktemp("pcluster")
    projects = _projects()
    for key, loaded in projects.items():
        (folder / f"{key}.yaml").write_text(yaml.safe_dump(generated(loaded)), encoding="utf-8")
    (folder / "facts.json").write_text(json.dumps(_facts()), encoding="utf-8")
    files = sorted(str(p) for p in folder.glob("*.yaml"))
    done = subprocess.run([str(python), str(TOOL), "--facts", str(folder / "facts.json"), *files],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.stdout, done.stderr
    out = json.loads(done.stdout)
    out["keys"] = {str(folder / f"{k}.yaml"): k for k in projects}
    return out


def test_every_generated_config_loads_with_the_real_schema(report):
    errors = {report["keys"][f]: r["schema_errors"] for f, r in report["configs"].items() if r["schema_errors"]}
    assert errors == {}
    assert len(report["configs"]) >= len(catalog.CATALOG) + 8


def test_offline_validators_find_no_errors_and_only_expected_warnings(report):
    unexpected = []
    for path, result in report["configs"].items():
        for failure in result["failures"]:
            allowed = ALLOWED_WARNINGS.get(failure["validator"])
            catalog_only = (failure["validator"] == "CapacityTypeValidator"
                            and failure["message"].startswith("Could not check support")
                            and "p6e-gb200" in failure["message"])  # moto has no record of it
            if failure["level"] == "WARNING" and ((allowed and failure["message"].startswith(allowed)) or catalog_only):
                continue
            unexpected.append((report["keys"][path], failure))
    assert unexpected == []


def test_placement_group_capacity_type_validator_ran_and_was_silent_for_capacity_blocks(report):
    for path, result in report["configs"].items():
        key = report["keys"][path]
        if not key.endswith("-block"):
            continue
        assert any(r.endswith(":PlacementGroupCapacityTypeValidator") for r in result["ran"]), key
        assert not [f for f in result["failures"] if f["validator"] == "PlacementGroupCapacityTypeValidator"], key


def test_the_validators_that_matter_ran_offline(report):
    ran = {r.rsplit(":", 1)[1] for result in report["configs"].values() for r in result["ran"]}
    assert {"NameValidator", "EfaValidator", "EfaPlacementGroupValidator", "PlacementGroupCapacityTypeValidator",
            "CapacityTypeValidator", "ComputeResourceSizeValidator", "SharedStorageMountDirValidator",
            "InstanceArchitectureCompatibilityValidator", "MaxCountValidator"} <= ran


def test_the_accounting_database_passes_the_schema_and_its_validators(report):
    path = next(p for p, k in report["keys"].items() if k == "accounting")
    result = report["configs"][path]
    written = yaml.safe_load(Path(path).read_text(encoding="utf-8"))["Scheduling"]["SlurmSettings"]
    assert set(written["Database"]) == {"Uri", "UserName", "PasswordSecretArn"}
    assert {"AccountingStorageTRES": "gres/gpu,license/matlab"} in written["CustomSlurmSettings"]
    assert result["schema_errors"] == {} or not result["schema_errors"]
    ran = {r.rsplit(":", 1)[1] for r in result["ran"]}
    # the URI's form, the cluster name with accounting (here the file's stem), the settings ParallelCluster keeps
    assert {"DatabaseUriValidator", "ClusterNameValidator", "CustomSlurmSettingsValidator"} <= ran, sorted(ran)
    assert [f for f in result["failures"] if f["validator"] in ran and f["level"] == "ERROR"] == []


def test_support_constants_match_the_installed_package():
    python = _venv()
    done = subprocess.run([str(python), str(TOOL), "--package-facts"], capture_output=True, text=True, timeout=60)
    pkg = json.loads(done.stdout)["package"]
    assert pkg["version"] == support.PCLUSTER_VERSION
    assert tuple(pkg["SUPPORTED_OSES"]) == support.SUPPORTED_OSES
    assert tuple(pkg["SUPPORTED_OSES_FOR_P6E_GB200"]) == tuple(sorted(support.OSES_BY_INSTANCE_PREFIX["p6e-gb200"]))
    assert sorted(pkg["SUPPORTED_OSES_FOR_P6_B300"]) == sorted(support.OSES_BY_INSTANCE_PREFIX["p6-b300"])
    assert {k: tuple(v) for k, v in pkg["ULTRASERVER_CAPACITY_BLOCK_ALLOWED_SIZE_DICT"].items()} == \
        support.ULTRASERVER_BLOCK_SIZES
    assert (pkg["NAME_REGEX"], pkg["NAME_MAX_LENGTH"]) == (support.NAME_REGEX, support.NAME_MAX_LENGTH)
    assert pkg["PCLUSTER_NAME_REGEX"] == support.CLUSTER_NAME_REGEX.replace("^[", "^([").replace("}$", "})$")
    assert pkg["MAX_NUMBER_OF_QUEUES"] == support.MAX_QUEUES
    assert pkg["PCLUSTER_NAME_MAX_LENGTH_SLURM_ACCOUNTING"] == support.ACCOUNTING_CLUSTER_NAME_MAX
    assert pkg["MAX_COMPUTE_RESOURCES_PER_QUEUE"] == support.MAX_COMPUTE_RESOURCES_PER_QUEUE
    from fmcluster.checks.parallelcluster import TAG_VALUE

    assert pkg["PCLUSTER_TAG_VALUE_REGEX"] == TAG_VALUE
    assert set(pkg["INSTANCE_TYPES_WITH_FIRST_INTERFACE_ENA"]) <= set(support.SUPPORTED_INSTANCE_PREFIXES)


def test_the_teams_slurm_settings_pass_the_schema_and_its_validators(report):
    """p5-slurm-accounting has teams: slurm.conf enforces associations, limits and QoS and weighs fair share and QoS
    (fmcluster.generate.slurmteams), and ParallelCluster's CustomSlurmSettingsValidator (its deny lists) takes it."""
    path = next(p for p, k in report["keys"].items() if k == "file-p5-slurm-accounting")
    result = report["configs"][path]
    written = yaml.safe_load(Path(path).read_text(encoding="utf-8"))["Scheduling"]["SlurmSettings"]
    custom = {k: v for item in written["CustomSlurmSettings"] for k, v in item.items()}
    assert custom["AccountingStorageEnforce"] == "associations,limits,qos"
    assert custom["PriorityType"] == "priority/multifactor"
    assert custom["PriorityWeightFairshare"] > 0 and custom["PriorityWeightQOS"] > 0
    assert not result["schema_errors"]
    assert "CustomSlurmSettingsValidator" in {r.rsplit(":", 1)[1] for r in result["ran"]}
    assert [f for f in result["failures"] if f["level"] == "ERROR"] == []
