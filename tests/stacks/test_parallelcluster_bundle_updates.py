"""A new bootstrap bundle is an update ParallelCluster applies.

Two synthesized apps of one ParallelCluster project, compared key by key as ParallelCluster compares them
(:mod:`fmcluster.generate.pcluster_update`, the package's own update policies): a bundle whose content changes (a
bootstrap template fixed, accounting turned on) changes the bootstrap pointers and the head node's OnNodeUpdated
digest (SUPPORTED), never OnNodeConfigured (UNSUPPORTED on the head node, QUEUE_UPDATE_STRATEGY on queues).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fmcluster.bootstrap import render
from fmcluster.stacks.app import synthesize
from support import BASE

from fmcluster.generate import pcluster_update

PC = BASE + "region: us-east-1\nstorage:\n  checkpoint: {parameters: 70e9}\norchestrator: {type: parallelcluster}\n"
ACCOUNTING = PC.replace("{type: parallelcluster}", "{type: parallelcluster, accounting: {enabled: true}}")
REFUSED = {"UNSUPPORTED", "QUEUE_UPDATE_STRATEGY"}


def _synth(folder: Path, text: str) -> dict[str, dict]:
    folder.mkdir(parents=True)
    (folder / "demo.yaml").write_text(text)
    return synthesize(folder / "demo.yaml", folder / "out")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return _synth(tmp_path_factory.mktemp("base") / "app", PC)


@pytest.fixture(scope="module")
def template_fixed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """The same project, synthesized from bootstrap templates with one line more in the partial every step
    includes: every bundle (the head node's and the compute nodes') has other content."""
    root = tmp_path_factory.mktemp("templates")
    templates = root / "bootstrap"
    shutil.copytree(render.TEMPLATES_DIR, templates)
    common = templates / "partials" / "common.sh.j2"
    common.write_text(common.read_text() + "# a fix\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(render, "TEMPLATES_DIR", templates)
        render._environment.cache_clear()
        try:
            return _synth(root / "app", PC)
        finally:
            render._environment.cache_clear()


@pytest.fixture(scope="module")
def accounting(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return _synth(tmp_path_factory.mktemp("accounting") / "app", ACCOUNTING)


def _config(templates: dict[str, dict]) -> dict:
    [props] = [r["Properties"] for r in templates["demo-cluster"]["Resources"].values()
               if r["Type"] == pcluster_update.CLUSTER_TYPE]
    return props["ClusterConfiguration"]


def _pointers(templates: dict[str, dict]) -> dict[str, object]:
    return {r["Properties"]["Name"]: r["Properties"]["Value"]
            for r in templates["demo-cluster"]["Resources"].values() if r["Type"] == "AWS::SSM::Parameter"}


def _where(changes: list[pcluster_update.Change]) -> dict[str, str]:
    return {c.where: c.policy for c in changes}


def test_a_fixed_template_changes_the_pointers_and_the_head_nodes_update_digest_only(base, template_fixed) -> None:
    changes = pcluster_update.changes(_config(base), _config(template_fixed))
    assert not [c.where for c in changes if c.policy in REFUSED]
    assert _where(changes) == {"HeadNode.CustomActions.OnNodeUpdated.Args": "SUPPORTED"}
    old, new = _pointers(base), _pointers(template_fixed)
    assert set(old) == set(new) == {"/fmcluster/demo/bootstrap/head-node", "/fmcluster/demo/bootstrap/compute"}
    assert all(old[name] != new[name] for name in old)  # both bundles changed: the test is not vacuous
    assert pcluster_update.template_updates(base, template_fixed) == []  # nothing to stop, nothing refused
    # the launcher and the pointers' ARNs, which OnNodeConfigured names, are the same
    before, after = (_config(t)["HeadNode"]["CustomActions"] for t in (base, template_fixed))
    assert before["OnNodeConfigured"] == after["OnNodeConfigured"]
    assert before["OnNodeUpdated"]["Script"] == after["OnNodeUpdated"]["Script"] == before["OnNodeConfigured"]["Script"]
    [old_queue], [new_queue] = (_config(t)["Scheduling"]["SlurmQueues"] for t in (base, template_fixed))
    assert old_queue["CustomActions"] == new_queue["CustomActions"]


def test_the_update_digest_is_the_one_the_head_nodes_pointer_names(template_fixed) -> None:
    config = _config(template_fixed)
    mode, pointer, digest = config["HeadNode"]["CustomActions"]["OnNodeUpdated"]["Args"]
    assert mode == "update" and pointer == config["HeadNode"]["CustomActions"]["OnNodeConfigured"]["Args"][1]
    value = _pointers(template_fixed)["/fmcluster/demo/bootstrap/head-node"]
    _, parts = value["Fn::Join"]
    assert parts[1] == digest


def test_turning_accounting_on_needs_the_fleet_stopped_and_nothing_parallelcluster_refuses(base, accounting) -> None:
    changes = pcluster_update.changes(_config(base), _config(accounting))
    assert not [c.where for c in changes if c.policy in REFUSED]
    assert _where(changes)["HeadNode.CustomActions.OnNodeUpdated.Args"] == "SUPPORTED"  # the head bundle changed
    assert [(u.change.where, u.needs) for u in pcluster_update.template_updates(base, accounting)] == [
        ("Scheduling.SlurmSettings.Database", pcluster_update.FLEET)]
