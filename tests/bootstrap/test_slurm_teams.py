"""The slurm-teams step (89-slurm-teams): on ParallelCluster's head node the project's teams become Slurm accounts
(Fairshare=), a QoS per team and partition capping the team's nodes (GrpTRES=node=guaranteed+borrow) and each
member's associations; a second boot and an update with the same teams change nothing, an update with other teams
changes only the difference, and a slurmctld drop-in applies them again after every start.

Against the sandbox's stateful sacctmgr (support.slurm_stubs.sacctmgr), which refuses what the real one refuses."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from fmcluster.bootstrap import bundles, render
from support.sandbox import SHELLCHECK, Image, build_sandbox, install_slurm_controller

from fmcluster.config import parse
from fmcluster.plan import make_plan

STEP = "89-slurm-teams"
SCRIPT = "files/fmcluster-slurm-teams"
INSTALLED = "usr/local/sbin/fmcluster-slurm-teams"
DROPIN = "etc/systemd/system/slurmctld.service.d/fmcluster-slurm-teams.conf"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "p5-slurm-accounting.yaml"
HEAD_IMAGE = {"gpus": 0, "efa_devices": 0, "nvme_drives": 0, "driver": False}


def _cluster(text: str | None = None):
    return make_plan(parse(text if text is not None else EXAMPLE.read_text()).project).cluster


def _head_ctx(cluster):
    return bundles.dispatched_contexts(cluster)[render.HEAD_NODE_BUNDLE]


def _sandbox(tmp_path: Path, cluster=None):
    ctx = _head_ctx(cluster or _cluster())
    sb = build_sandbox(tmp_path / "sb", ctx, Image(**HEAD_IMAGE))
    install_slurm_controller(sb, ("gpu",))
    return sb


def _db(sb) -> dict:
    data = json.loads((sb.path / "state/slurm/accounting.json").read_text())
    data["qos"] = (sb.path / "state/slurm/qos").read_text().split()
    return data


def _assocs(sb) -> set[tuple[str, str, str, str]]:
    return {(a["user"], a["account"], a["partition"], a["qos"]) for a in _db(sb)["assocs"] if a["user"] != "root"}


def _changes(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith("sacctmgr") and any(f" {v} " in c for v in ("add", "modify", "delete"))]


def _rerender(sb, cluster) -> None:
    """What an update does on the head node: OnNodeUpdated runs the new head-node bundle."""
    shutil.rmtree(sb.bundle)
    render.render_bundle(_head_ctx(cluster), sb.bundle)


# --- which bundles have it -----------------------------------------------------------------------------------------

def test_the_example_s_head_node_has_the_step_and_no_other_bundle_does(tmp_path) -> None:
    out = bundles.render_dispatched_bundles(_cluster(), tmp_path / "pc")
    for bundle in out.bundles.iterdir():
        has = (bundle / "steps" / f"{STEP}.sh").exists()
        assert has == (bundle.name == render.HEAD_NODE_BUNDLE), bundle.name
        assert (bundle / SCRIPT).exists() == has


@pytest.mark.parametrize("change", ["teams: []", "accounting: {enabled: false}"])
def test_no_teams_or_no_accounting_means_no_step(change: str) -> None:
    cluster = _cluster()
    if change.startswith("teams"):
        cluster = dataclasses.replace(cluster, teams=())
    else:
        cluster = dataclasses.replace(cluster, accounting=cluster.accounting.model_copy(update={"enabled": False}))
    assert bundles.slurm_teams(cluster) == ()
    assert STEP not in [s.name for s in _head_ctx(cluster).steps()]


def test_the_example_s_teams_as_slurm_holds_them() -> None:
    research, prod = bundles.slurm_teams(_cluster())
    assert (research.account, research.fair_share, research.caps) == ("research", 3, (("gpu", "research-gpu", 2),))
    assert (prod.account, prod.fair_share, prod.caps) == ("prod", 1, (("gpu", "prod-gpu", 2),))
    assert research.default_of == ("alice", "bob") and prod.default_of == ("carol",)  # bob's first team


def test_the_step_and_its_script_are_shellcheck_clean() -> None:
    files = render.render_files(_head_ctx(_cluster()))
    for path in (f"steps/{STEP}.sh", SCRIPT):
        proc = subprocess.run([SHELLCHECK, "-s", "bash", "-x", "-"], input=files[path], capture_output=True,
                              text=True, check=False)
        assert proc.returncode == 0, (path, proc.stdout)


# --- in the sandbox --------------------------------------------------------------------------------------------------

def test_the_head_node_creates_the_teams_in_the_order_slurm_needs(tmp_path) -> None:
    sb = _sandbox(tmp_path)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    db = _db(sb)
    assert {"research-gpu", "prod-gpu"} <= set(db["qos"])
    assert db["tres"] == {"research-gpu": "node=2", "prod-gpu": "node=2"}
    assert db["accounts"]["research"] == {"fairshare": "3", "organization": "fmcluster"}
    assert db["accounts"]["prod"] == {"fairshare": "1", "organization": "fmcluster"}
    assert db["flags"] == {"research-gpu": "DenyOnLimit", "prod-gpu": "DenyOnLimit"}
    assert _assocs(sb) == {("alice", "research", "gpu", "research-gpu"), ("bob", "research", "gpu", "research-gpu"),
                           ("carol", "prod", "gpu", "prod-gpu"), ("bob", "prod", "gpu", "prod-gpu")}
    assert {a["defqos"] for a in db["assocs"] if a["user"] != "root"} == {"research-gpu", "prod-gpu"}
    assert db["users"] == {"root": "root", "alice": "research", "bob": "research", "carol": "prod"}
    changes = _changes(res.calls)
    first_user = next(i for i, c in enumerate(changes) if " add user " in c)
    assert all(" add qos " in c or " add account " in c for c in changes[:first_user])  # QoS, accounts first
    assert (sb.root / INSTALLED).read_bytes() == (sb.bundle / SCRIPT).read_bytes()
    o = _head_ctx(_cluster()).options
    assert f"ExecStartPost=-/usr/bin/timeout --kill-after={o.hook_kill_after_s} {o.slurm_teams_hook_s} " \
        "/usr/local/sbin/fmcluster-slurm-teams apply 0\n" \
        in (sb.root / DROPIN).read_text()


def test_a_second_boot_and_an_update_with_the_same_teams_change_nothing(tmp_path) -> None:
    sb = _sandbox(tmp_path)
    assert sb.run().rc == 0
    before = _db(sb)
    again = sb.run()
    assert again.rc == 0, again.out[-3000:]
    assert f"[{STEP}] already done" in again.out
    _rerender(sb, _cluster())  # an update that changes something else re-runs the same step
    update = sb.run()
    assert update.rc == 0, update.out[-3000:]
    assert not _changes(again.calls) and not _changes(update.calls)
    assert _db(sb) == before


def test_an_update_applies_only_what_changed(tmp_path) -> None:
    sb = _sandbox(tmp_path)
    assert sb.run().rc == 0
    text = EXAMPLE.read_text().replace("fair_share: 3", "fair_share: 5").replace(
        "{gpu: {guaranteed: 2}}", "{gpu: {guaranteed: 1}}", 1).replace("members: [carol, bob]", "members: [carol, dan]")
    _rerender(sb, _cluster(text))
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert sorted(_changes(res.calls)) == sorted([
        "sacctmgr -i modify qos where name=research-gpu set GrpTRES=node=1 Flags+=DenyOnLimit",
        "sacctmgr -i modify account where name=research set Fairshare=5",
        "sacctmgr -i add user dan Account=prod Partition=gpu QOS=prod-gpu DefaultQOS=prod-gpu DefaultAccount=prod",
        "sacctmgr -i delete user where name=bob account=prod partition=gpu"])
    assert ("bob", "prod", "gpu", "prod-gpu") not in _assocs(sb) and ("dan", "prod", "gpu", "prod-gpu") in _assocs(sb)
    assert _db(sb)["tres"]["research-gpu"] == "node=1"


def test_check_reports_drift_and_the_drop_in_s_apply_repairs_it(tmp_path) -> None:
    sb = _sandbox(tmp_path)
    assert sb.run().rc == 0
    script = str(sb.root / INSTALLED)
    subprocess.run([str(sb.root / "opt/slurm/bin/sacctmgr"), "-i", "modify", "qos", "where", "name=prod-gpu", "set",
                    "GrpTRES=node=4"], env=sb.env, check=True, capture_output=True)
    check = subprocess.run([script, "check", "0"], env=sb.env, capture_output=True, text=True, timeout=30,
                           check=False)
    assert check.returncode == 1
    assert "differs: set QoS prod-gpu GrpTRES=node=2 Flags+=DenyOnLimit (was 'node=4' 'DenyOnLimit')" in check.stderr
    assert _db(sb)["tres"]["prod-gpu"] == "node=4"  # check changes nothing
    fix = subprocess.run([script, "apply", "0"], env=sb.env, capture_output=True, text=True, timeout=30, check=False)
    assert fix.returncode == 0, fix.stderr
    assert _db(sb)["tres"]["prod-gpu"] == "node=2"


def test_slurmdbd_down_fails_the_step_naming_it(tmp_path) -> None:
    ctx = _head_ctx(_cluster())
    sb = build_sandbox(tmp_path / "sb", ctx, Image(**HEAD_IMAGE))
    install_slurm_controller(sb, ("gpu",), dbd_up=False)
    sb.env["FMC_SLURMDBD_WAIT_S"] = "0"
    res = sb.run()
    assert res.rc != 0
    assert "slurmdbd did not answer within 0s" in res.out
    assert not _changes(res.calls)


# --- the stand-in refuses what sacctmgr refuses ----------------------------------------------------------------------

def _sacctmgr(sb, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(sb.root / "opt/slurm/bin/sacctmgr"), *args], env=sb.env, capture_output=True,
                          text=True, timeout=30, check=False)


def test_the_stand_in_refuses_what_sacctmgr_refuses(tmp_path) -> None:
    sb = _sandbox(tmp_path)
    assert _sacctmgr(sb, "-i", "add", "user", "eve").returncode == 1  # no account
    assert _sacctmgr(sb, "-i", "add", "user", "eve", "Account=ghost").returncode == 1  # no such account
    assert _sacctmgr(sb, "-i", "add", "account", "lab").returncode == 0
    assert _sacctmgr(sb, "-i", "add", "user", "eve", "Account=lab", "QOS=lab-gpu").returncode == 1  # QoS first
    assert _sacctmgr(sb, "-i", "add", "qos", "lab-gpu", "GrpTRES=node=1").returncode == 0
    assert _sacctmgr(sb, "-i", "add", "user", "eve", "Account=lab", "QOS=lab-gpu", "DefaultQOS=normal").returncode == 1
    assert _sacctmgr(sb, "-i", "add", "user", "eve", "Account=lab", "QOS=lab-gpu").returncode == 0
    again = _sacctmgr(sb, "-i", "add", "user", "eve", "Account=lab", "QOS=lab-gpu")
    assert (again.returncode, again.stdout) == (0, " Nothing new added.\n")
    assert _sacctmgr(sb, "-i", "modify", "user", "where", "name=eve", "set", "DefaultAccount=root").returncode == 1
    assert _sacctmgr(sb, "add", "account", "x").returncode == 1  # without -i it would ask to commit
    assert _sacctmgr(sb, "-i", "modify", "qos", "where", "name=ghost", "set", "GrpTRES=node=1").returncode == 1


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_teams_add_only_their_step_to_the_example_s_bundles_and_change_the_update_s_digest(tmp_path) -> None:
    """With and without teams the bundles differ by the step, its script and what digests them; the head node's
    digest (what OnNodeUpdated names, so what makes ParallelCluster run the new bundle) differs too."""
    cluster = _cluster()
    without = dataclasses.replace(cluster, teams=())
    on = bundles.render_dispatched_bundles(cluster, tmp_path / "on")
    off = bundles.render_dispatched_bundles(without, tmp_path / "off")
    on_files, off_files = _files(on.bundles), _files(off.bundles)
    assert sorted(set(on_files) - set(off_files)) == [f"head-node/{SCRIPT}", f"head-node/steps/{STEP}.sh"]
    assert not set(off_files) - set(on_files)
    # the slurm-policy step's too: slurmctld's start timeout it writes counts the teams hook (test_slurmctld_start)
    assert {Path(p).name for p in off_files if off_files[p] != on_files[p]} <= {"SHA256SUMS", "manifest.json",
                                                                               "bootstrap.sh", "88-slurm-policy.sh"}
    assert on.digests != off.digests


def test_the_boot_budget_counts_the_step_s_wait_for_slurmdbd_without_the_policy_step() -> None:
    from fmcluster.bootstrap import budget
    cluster = _cluster()
    alone = dataclasses.replace(cluster, accounting=cluster.accounting.model_copy(update={"qos_per_partition": False}))
    ctx = _head_ctx(alone)
    assert ctx.slurm_teams_step and not ctx.slurm_policy
    assert dict(budget.estimate(ctx).lines)["slurmdbd and slurmctld waits"] == ctx.options.slurmdbd_wait_s
