"""What ParallelCluster needs before it applies a configuration change (``fmcluster.generate.pcluster_update``).

The table of update policies is generated from the ``aws-parallelcluster`` package in ``.venv-pcluster``
(``tools/pcluster_update_policies.py``): a test regenerates it and fails when it differs. The walk and each policy's
condition are held to ParallelCluster's own ``ConfigPatch`` and ``UpdatePolicy.check`` (the tool's ``--check``) on
pairs of configurations fmcluster generates.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
from support import ROOT, generated, project_dict

from fmcluster import pcluster_facts
from fmcluster.generate import pcluster_update as pu
from fmcluster.pcluster_update_policies import KEYS, PCLUSTER_VERSION

PYTHON = ROOT / ".venv-pcluster" / "bin" / "python"
TOOL = ROOT / "tools" / "pcluster_update_policies.py"
MODULE = ROOT / "fmcluster" / "pcluster_update_policies.py"


def _venv() -> Path:
    if PYTHON.exists():
        return PYTHON
    message = "no .venv-pcluster: run `make pcluster-venv` to read ParallelCluster's own update policies"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def test_the_policy_table_is_what_the_installed_package_says() -> None:
    done = subprocess.run([str(_venv()), str(TOOL)], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout == MODULE.read_text(encoding="utf-8"), (
        f"regenerate: .venv-pcluster/bin/python {TOOL.relative_to(ROOT)} > {MODULE.relative_to(ROOT)}")
    assert PCLUSTER_VERSION == pcluster_facts.PCLUSTER_VERSION


def test_every_policy_of_the_table_is_classified() -> None:
    assert {policy for policy, _ in KEYS.values()} <= set(pu.POLICIES), "a policy pcluster_update does not know"
    assert set(pu.POLICIES.values()) <= {pu.NOTHING, pu.FLEET, pu.LOGIN, pu.FLEET_AND_LOGIN, pu.NEVER}


def _schema_paths(node: object, path: str = "") -> set[str]:
    """Every key path of a configuration, list items as ``[]`` (free-form dicts inside a value are not descended)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}{key}"
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value) and f"{here}[]" in KEYS:
                found.add(f"{here}[]")
                for item in value:
                    found |= _schema_paths(item, f"{here}[].")
            else:
                found.add(here)
                if isinstance(value, dict) and KEYS.get(here, ("", ""))[1] == "section":
                    found |= _schema_paths(value, f"{here}.")
    return found


ACCOUNTING = {"type": "parallelcluster", "accounting": {"enabled": True}}
LOGIN = {"type": "parallelcluster", "parallelcluster": {"login_nodes": {"count": 1}}}
STOP_STRATEGY = {"type": "parallelcluster",
                 "parallelcluster": {"slurm": {"queue_update_strategy": "COMPUTE_FLEET_STOP"}}}


def _config(**changes) -> dict:
    return generated(project_dict(name="upd", **changes))


def test_every_key_fmcluster_writes_has_a_policy() -> None:
    written = set()
    for orchestrator in (ACCOUNTING, LOGIN, {"type": "parallelcluster"}):
        written |= _schema_paths(_config(orchestrator=orchestrator))
    assert written - set(KEYS) == set()
    assert "Scheduling.SlurmSettings.Database" in written  # the walk reaches the key this is about


def test_turning_accounting_on_needs_the_fleet_stopped() -> None:
    before, after = _config(orchestrator={"type": "parallelcluster"}), _config(orchestrator=ACCOUNTING)
    found = pu.updates("upd", before, after)
    database = [u for u in found if u.change.where == "Scheduling.SlurmSettings.Database"]
    assert [(u.change.describe(), u.change.policy, u.needs) for u in database] == [
        ("Scheduling.SlurmSettings.Database added", "COMPUTE_FLEET_STOP", pu.FLEET)]
    assert "needs the compute fleet stopped" in database[0].format()


def test_queue_changes_need_the_fleet_stopped_only_without_a_strategy() -> None:
    def root_volume(config: dict, size: int) -> dict:
        config = copy.deepcopy(config)
        config["Scheduling"]["SlurmQueues"][0]["ComputeSettings"]["LocalStorage"]["RootVolume"]["Size"] = size
        return config

    drain = _config(orchestrator={"type": "parallelcluster"})  # fmcluster's default: DRAIN
    assert pu.updates("upd", drain, root_volume(drain, 999)) == []
    stop = _config(orchestrator=STOP_STRATEGY)
    [update] = pu.updates("upd", stop, root_volume(stop, 999))
    assert update.change.policy == "QUEUE_UPDATE_STRATEGY" and update.needs == pu.FLEET
    assert update.change.where.endswith("ComputeSettings.LocalStorage.RootVolume.Size")


def _scenarios() -> dict[str, tuple[dict, dict]]:
    base = _config(orchestrator={"type": "parallelcluster"})
    grown = copy.deepcopy(base)
    grown["Scheduling"]["SlurmQueues"][0]["ComputeResources"][0]["MaxCount"] += 2
    shrunk = copy.deepcopy(base)
    shrunk["Scheduling"]["SlurmQueues"][0]["ComputeResources"][0]["MaxCount"] = 1
    queue = copy.deepcopy(base)
    extra = copy.deepcopy(queue["Scheduling"]["SlurmQueues"][0])
    extra["Name"] = "extra"
    queue["Scheduling"]["SlurmQueues"].append(extra)
    bundle = copy.deepcopy(base)
    bundle["HeadNode"]["CustomActions"]["OnNodeConfigured"]["Script"] += ".v2"
    bundle["Scheduling"]["SlurmQueues"][0]["CustomActions"]["OnNodeConfigured"]["Script"] += ".v2"
    stop = _config(orchestrator=STOP_STRATEGY)
    stop_volume = copy.deepcopy(stop)
    stop_volume["Scheduling"]["SlurmQueues"][0]["ComputeSettings"]["LocalStorage"]["RootVolume"]["Size"] += 100
    login = _config(orchestrator=LOGIN)
    login_type = copy.deepcopy(login)
    login_type["LoginNodes"]["Pools"][0]["InstanceType"] = "m7i.4xlarge"
    login_count = copy.deepcopy(login)
    login_count["LoginNodes"]["Pools"][0]["Count"] = 2
    return {
        "accounting on": (base, _config(orchestrator=ACCOUNTING)),
        "accounting off": (_config(orchestrator=ACCOUNTING), base),
        "more nodes": (base, grown), "fewer nodes": (grown, shrunk), "a queue added": (base, queue),
        "a queue removed": (queue, base), "a new bootstrap": (base, bundle),
        "root volume, COMPUTE_FLEET_STOP strategy": (stop, stop_volume),
        "login node type": (login, login_type), "login node count": (login, login_count),
        "login nodes added": (base, login), "unchanged": (base, base),
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    """ParallelCluster's own ConfigPatch and condition checkers on each scenario (fleet and login nodes running)."""
    python = _venv()
    folder = tmp_path_factory.mktemp("patches")
    pairs = []
    for name, (before, after) in _scenarios().items():
        slug = name.replace(" ", "-").replace(",", "")
        (folder / f"{slug}.base.json").write_text(json.dumps(before))
        (folder / f"{slug}.target.json").write_text(json.dumps(after))
        pairs += [str(folder / f"{slug}.base.json"), str(folder / f"{slug}.target.json")]
    # every scenario in one run of the tool (one start of ParallelCluster), each pair checked on its own
    done = subprocess.run([str(python), str(TOOL), "--check", *pairs], capture_output=True, text=True, timeout=120,
                          check=True)
    results = json.loads(done.stdout)
    assert len(results) == len(_scenarios())
    return dict(zip(_scenarios(), results))


@pytest.mark.parametrize("scenario", sorted(_scenarios()))
def test_changes_and_conditions_match_parallelclusters_own(scenario: str, reference) -> None:
    before, after = _scenarios()[scenario]
    found = pu.changes(before, after)
    ours = [{"where": c.where, "policy": c.policy, "is_list": c.is_list,
             "passes": pu.needs(c, before, after, found) == pu.NOTHING} for c in found]
    theirs = [{"where": r["where"], "policy": r["policy"], "is_list": r["is_list"],
               "passes": r["result"] == "SUCCEEDED"} for r in reference[scenario]]
    assert ours == theirs


def test_the_scenarios_cover_each_outcome(reference) -> None:
    """The comparison above is no formality: ParallelCluster refuses some, passes others."""
    results = {r["result"] for changes in reference.values() for r in changes}
    assert {"SUCCEEDED", "ACTION NEEDED", "FAILED"} <= results, results


def test_a_cluster_in_the_templates_is_compared_by_stack_role_and_logical_id() -> None:
    def template(config: dict, name: str = "upd-slurm") -> dict:
        return {"Resources": {"Cluster": {"Type": pu.CLUSTER_TYPE, "Properties": {
            "ClusterName": name, "ClusterConfiguration": config}}}}

    before, after = _config(orchestrator={"type": "parallelcluster"}), _config(orchestrator=ACCOUNTING)
    [update] = [u for u in pu.template_updates({"upd-cluster": template(before)}, {"upd-cluster": template(after)})
                if u.needs == pu.FLEET]
    assert update.cluster == "upd-slurm"
    assert pu.template_updates({}, {"upd-cluster": template(after)}) == []  # a first deploy creates the cluster
    [renamed] = pu.template_updates({"upd-cluster": template(before)}, {"upd-cluster": template(before, "other")})
    assert renamed.needs == pu.NEVER and renamed.change.key == "ClusterName"
