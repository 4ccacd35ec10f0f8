"""The rendered fmcluster-slurm-teams script against a real Slurm (Debian's slurmdbd, slurmctld and slurmd with
MariaDB on loopback: the session's ``real_slurm``, support.real_slurm): what an administrator sees on the head node
of examples/p5-slurm-accounting.yaml (teams research: alice, bob; prod: carol, bob; each guaranteed 2 of the gpu
partition's 4 nodes) when the teams are created, applied again, changed while jobs run, hand-edited, and when a member's Linux account comes
late; and what a member sees when a job asks for more than the team's cap."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from fmcluster.bootstrap import bundles, render

from fmcluster.config import parse
from fmcluster.plan import make_plan

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "p5-slurm-accounting.yaml"
SCRIPT = "files/fmcluster-slurm-teams"
MEMBERS = ("alice", "bob", "carol")


@pytest.fixture
def slurm(real_slurm):
    real_slurm.reset()
    for user in MEMBERS:
        real_slurm.add_user(user)
    return real_slurm


def _script(tmp_path: Path, slurm, text: str | None = None) -> Path:
    """The head node's fmcluster-slurm-teams for the example (or ``text``), with Slurm's clients under FMC_ROOT
    where ParallelCluster has them (/opt/slurm/bin)."""
    cluster = make_plan(parse(text if text is not None else EXAMPLE.read_text()).project).cluster
    ctx = bundles.dispatched_contexts(cluster)[render.HEAD_NODE_BUNDLE]
    root = tmp_path / "root"
    bindir = root / ctx.options.slurm_prefix.lstrip("/") / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    for tool in ("sacctmgr", "scontrol", "strigger"):
        if not (bindir / tool).exists():
            (bindir / tool).symlink_to(f"/usr/bin/{tool}")
    path = tmp_path / "fmcluster-slurm-teams"
    path.write_text(render.render_files(ctx)[SCRIPT])
    path.chmod(0o755)
    slurm.env["FMC_ROOT"] = str(root)
    return path


def _run(slurm, script: Path, mode: str = "apply") -> subprocess.CompletedProcess:
    return slurm.run(str(script), mode, "0")


def _assocs(slurm) -> dict[tuple[str, str, str], str]:
    """(user, account, partition) -> MaxSubmitJobs, for every user association but root's."""
    out = slurm.sacctmgr("-n", "-P", "show", "association", "format=user,account,partition,maxsubmitjobs")
    return {(u, a, p): m for u, a, p, m in (line.split("|") for line in out.splitlines()) if u and u != "root"}


def _sbatch(slurm, user: str, *args: str) -> subprocess.CompletedProcess:
    return slurm.run("sbatch", "--parsable", *args, "--wrap", "sleep 300", user=user)


def _state(slurm, job: str) -> str:
    return slurm.run("squeue", "-h", "-j", job, "-o", "%T").stdout.strip()


WANTED = {("alice", "research", "gpu"), ("bob", "research", "gpu"), ("carol", "prod", "gpu"), ("bob", "prod", "gpu")}


def test_create_then_apply_again_changes_nothing_and_members_submit_as_their_team(tmp_path, slurm) -> None:
    script = _script(tmp_path, slurm)
    first = _run(slurm, script)
    assert first.returncode == 0, first.stderr + slurm.logs()
    assert set(_assocs(slurm)) == WANTED
    qos = slurm.sacctmgr("-n", "-P", "show", "qos", "format=name,grptres,flags")
    assert "research-gpu|node=2|DenyOnLimit" in qos.splitlines() and "prod-gpu|node=2|DenyOnLimit" in qos.splitlines()
    assert "research|fmcluster" in slurm.sacctmgr("-n", "-P", "show", "account", "format=account,organization")
    again = _run(slurm, script)
    assert again.returncode == 0 and again.stderr == "fmcluster-slurm-teams: slurmdbd already holds every team\n"
    assert _run(slurm, script, "check").returncode == 0
    job = _sbatch(slurm, "bob")
    assert job.returncode == 0, job.stderr
    account = slurm.run("squeue", "-h", "-j", job.stdout.strip(), "-o", "%a|%q").stdout.strip()
    assert account == "research|research-gpu"  # bob's first team, its QoS without --qos


def test_a_user_in_no_team_is_refused(tmp_path, slurm) -> None:
    assert _run(slurm, _script(tmp_path, slurm)).returncode == 0
    slurm.add_user("mallory")
    refused = _sbatch(slurm, "mallory")
    assert refused.returncode != 0 and "Invalid account or account/partition combination" in refused.stderr


def test_a_job_larger_than_the_team_s_cap_is_refused_at_submit(tmp_path, slurm) -> None:
    assert _run(slurm, _script(tmp_path, slurm)).returncode == 0
    refused = _sbatch(slurm, "carol", "-N", "3")  # prod may hold 2 nodes of gpu's 4
    assert refused.returncode != 0
    assert "QOSGrpNodeLimit" in refused.stderr and "Job violates accounting/QOS policy" in refused.stderr
    fits = _sbatch(slurm, "carol", "-N", "2")  # within the cap: accepted (it waits for nodes n2-n4 never start)
    assert fits.returncode == 0, fits.stderr


def test_a_hand_added_user_is_removed_and_check_fails_until_then(tmp_path, slurm) -> None:
    script = _script(tmp_path, slurm)
    assert _run(slurm, script).returncode == 0
    slurm.add_user("eve")
    slurm.sacctmgr("-i", "add", "user", "eve", "Account=research", "Partition=gpu", "QOS=research-gpu")
    slurm.sacctmgr("-i", "add", "user", "bob", "Account=prod")  # a member, by hand, in no partition
    check = _run(slurm, script, "check")
    assert check.returncode == 1
    assert "differs: remove user eve in research partition gpu (not in the project)" in check.stderr
    assert "differs: remove user bob in prod (not in the project)" in check.stderr
    fix = _run(slurm, script)
    assert fix.returncode == 0, fix.stderr
    assert set(_assocs(slurm)) == WANTED
    assert _run(slurm, script, "check").returncode == 0


def _teams_with_carol_running(tmp_path, slurm) -> str:
    """The example's teams applied and a job of carol's (team prod) running: its ID."""
    assert _run(slurm, _script(tmp_path, slurm)).returncode == 0
    job = _sbatch(slurm, "carol").stdout.strip()
    slurm.wait("carol's job running", lambda: _state(slurm, job) == "RUNNING")
    return job


def test_removing_a_member_with_a_running_job_blocks_them_and_finishes_later(tmp_path, slurm) -> None:
    job = _teams_with_carol_running(tmp_path, slurm)
    without = _script(tmp_path, slurm, EXAMPLE.read_text().replace("members: [carol, bob]", "members: [bob]"))
    update = _run(slurm, without)
    assert update.returncode == 0, update.stderr  # the update does not fail
    assert "pending: remove user carol in prod partition gpu" in update.stderr
    assert _assocs(slurm)[("carol", "prod", "gpu")] == "0"  # blocked
    assert _state(slurm, job) == "RUNNING"  # the running job is left alone
    refused = _sbatch(slurm, "carol")
    assert refused.returncode != 0 and "AssocMaxSubmitJobLimit" in refused.stderr
    check = _run(slurm, without, "check")
    assert check.returncode == 3 and "pending: remove user carol in prod partition gpu" in check.stderr
    slurm.run("scancel", job, check=True)

    def removed() -> bool:
        _run(slurm, without)
        return ("carol", "prod", "gpu") not in _assocs(slurm)
    slurm.wait("the removal to finish once carol's job ended", removed, timeout=30)
    assert _run(slurm, without, "check").returncode == 0


def test_removing_a_team_with_a_running_job_and_adding_the_member_back(tmp_path, slurm) -> None:
    job = _teams_with_carol_running(tmp_path, slurm)
    text = EXAMPLE.read_text()
    no_prod = text[:text.index("  - name: prod")] + text[text.index("storage:"):]
    update = _run(slurm, _script(tmp_path, slurm, no_prod))
    assert update.returncode == 0, update.stderr
    assert _assocs(slurm)[("carol", "prod", "gpu")] == "0" and ("bob", "prod", "gpu") not in _assocs(slurm)
    back = _run(slurm, _script(tmp_path, slurm, text))  # the team back, carol still running: unblocked
    assert back.returncode == 0, back.stderr
    assert "let user carol submit to prod/gpu again" in back.stderr
    assert _assocs(slurm)[("carol", "prod", "gpu")] == "" and set(_assocs(slurm)) == WANTED
    assert _sbatch(slurm, "carol").returncode == 0


def test_adding_a_member_while_a_job_runs(tmp_path, slurm) -> None:
    assert _run(slurm, _script(tmp_path, slurm)).returncode == 0
    job = _sbatch(slurm, "carol").stdout.strip()
    slurm.wait("carol's job running", lambda: _state(slurm, job) == "RUNNING")
    slurm.add_user("dave")
    more = _script(tmp_path, slurm, EXAMPLE.read_text().replace("members: [carol, bob]", "members: [carol, bob, dave]"))
    update = _run(slurm, more)
    assert update.returncode == 0, update.stderr
    assert _state(slurm, job) == "RUNNING"
    assert _sbatch(slurm, "dave").returncode == 0


def test_a_member_whose_linux_account_comes_late_is_named_then_let_in(tmp_path, slurm) -> None:
    late = _script(tmp_path, slurm, EXAMPLE.read_text().replace("members: [alice, bob]", "members: [alice, bob, lena]"))
    first = _run(slurm, late)
    assert first.returncode == 0, first.stderr
    assert "member lena has no Linux account on this node" in first.stderr
    slurm.add_user("lena")  # useradd on every node, after the teams were applied
    time.sleep(1)
    assert "Invalid account" in _sbatch(slurm, "lena").stderr  # slurmctld has not learned the UID yet
    check = _run(slurm, late, "check")
    assert check.returncode == 1 and "slurmctld does not know the UID of lena" in check.stderr
    fix = _run(slurm, late)
    assert fix.returncode == 0, fix.stderr
    assert "scontrol reconfigure: slurmctld learns the UID of lena" in fix.stderr
    job = _sbatch(slurm, "lena")
    assert job.returncode == 0, job.stderr
    assert _run(slurm, late, "check").returncode == 0


def test_the_partition_s_qos_comes_back_after_scontrol_reconfigure(tmp_path, slurm) -> None:
    """The slurm-policy step's fmcluster-partition-qos sets partition gpu's QoS and a permanent reconfig trigger
    that sets it again: `scontrol reconfigure` rebuilds the partitions from slurm.conf, without it."""
    _script(tmp_path, slurm)  # Slurm's clients under FMC_ROOT
    cluster = make_plan(parse(EXAMPLE.read_text()).project).cluster
    ctx = bundles.dispatched_contexts(cluster)[render.HEAD_NODE_BUNDLE]
    sbin = tmp_path / "root/usr/local/sbin"
    sbin.mkdir(parents=True)
    real = sbin / "fmcluster-partition-qos.real"
    real.write_text(render.render_files(ctx)["files/fmcluster-partition-qos"])
    real.chmod(0o755)
    # slurmctld runs a trigger's program with an environment of its own: the wrapper gives it this Slurm's
    env = " ".join(f"{k}={v}" for k, v in slurm.env.items() if k != "PATH")
    (sbin / "fmcluster-partition-qos").write_text(f"#!/bin/bash\nexec env {env} PATH=/usr/bin:/bin {real}\n")
    (sbin / "fmcluster-partition-qos").chmod(0o755)
    slurm.sacctmgr("-i", "add", "qos", "gpu")  # what the step does before it runs the script

    def partition_qos() -> str:
        out = slurm.run("scontrol", "show", "partition", "gpu").stdout
        return next(w for w in out.split() if w.startswith("QoS="))
    assert partition_qos() == "QoS=N/A"
    slurm.run("scontrol", "update", "PartitionName=gpu", "QOS=gpu", check=True)  # the premise: reconfigure drops it
    slurm.run("scontrol", "reconfigure", check=True)
    assert partition_qos() == "QoS=N/A"
    first = slurm.run(str(sbin / "fmcluster-partition-qos"))
    assert first.returncode == 0, first.stderr
    assert partition_qos() == "QoS=gpu" and "PERM" in slurm.run("strigger", "--get").stdout
    again = slurm.run(str(sbin / "fmcluster-partition-qos"))  # the trigger is set once
    assert again.returncode == 0 and len(slurm.run("strigger", "--get").stdout.splitlines()) == 2
    slurm.run("scontrol", "reconfigure", check=True)
    slurm.wait("the reconfig trigger to set the partition's QoS again", lambda: partition_qos() == "QoS=gpu")


def test_acceptance_as_a_team_is_admitted_and_as_the_whole_group_refused(tmp_path, slurm) -> None:
    """`acceptance render --account prod`'s jobs ask for what prod's cap admits; the same job for the group's every
    node (what acceptance asked before teams) is refused at submit. The GPU options are left out: this Slurm's
    nodes have no GPUs."""
    from fmcluster.bootstrap.acceptance import render_acceptance
    assert _run(slurm, _script(tmp_path, slurm)).returncode == 0
    cluster = make_plan(parse(EXAMPLE.read_text()).project).cluster
    render_acceptance(cluster, tmp_path / "acceptance", account="prod")
    header = [line.split(" ", 1)[1] for line in (tmp_path / "acceptance/gpu/node-checks.sbatch").read_text()
              .splitlines() if line.startswith("#SBATCH ")]
    options = [o for o in header if not o.startswith(("--gpus-per-node", "--ntasks-per-node", "--output"))]
    assert "--account=prod" in options and "--nodes=2" in options
    admitted = slurm.run("sbatch", "--parsable", *options, "--wrap", "true", user="carol")
    assert admitted.returncode == 0, admitted.stderr
    whole = [o if o != "--nodes=2" else "--nodes=4" for o in options]
    refused = slurm.run("sbatch", "--parsable", *whole, "--wrap", "true", user="carol")
    assert refused.returncode != 0 and "QOSGrpNodeLimit" in refused.stderr
