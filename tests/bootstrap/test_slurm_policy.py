"""The slurm-policy step (88-slurm-policy): with Slurm accounting on, the node that runs slurmctld (ParallelCluster's
head node, HyperPod's controller) gives every partition a QoS named after it and sets it as the partition's QoS, and
keeps it across slurmctld restarts with a drop-in that runs /usr/local/sbin/fmcluster-partition-qos after each start.
No other node, no PCS bundle and no project without accounting has the step; those bundles are unchanged.

The sandbox's sacctmgr and scontrol (support.sandbox.install_slurm_controller) keep slurmdbd's QoS and the
partitions' QoS in files and refuse what the real ones refuse (unknown command, partition or QoS)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest
from fmcluster.bootstrap import bundles, profiles, render
from fmcluster.config import parse
from fmcluster.plan import make_plan

from fmcluster import orchestrators
from fmcluster.generate import schedulers
from support.sandbox import (
    SHELLCHECK,
    Image,
    build_sandbox,
    calls_of,
    context_for,
    install_slurm_controller,
    make_project,
    restart_slurmctld,
)

STEP = "88-slurm-policy"
SCRIPT = "files/fmcluster-partition-qos"
DROPIN = "etc/systemd/system/slurmctld.service.d/fmcluster-partition-qos.conf"
INSTALLED = "usr/local/sbin/fmcluster-partition-qos"
HEAD_IMAGE = dict(gpus=0, efa_devices=0, nvme_drives=0, driver=False)
HEAD_IMAGE_HW = dict(gpus=0, efa_devices=0, nvme_drives=0)


def _project(orchestrator: str, accounting: str = "enabled: true", extra: str = ""):
    text = f"""
name: demo
availability_zone_id: use1-az6
os: ubuntu-22.04
compute_groups:
  - name: gpu
    instance_type: p5.48xlarge
    count: 2
  - name: big
    instance_type: p5en.48xlarge
    count: 2
orchestrator:
  type: {orchestrator}
{extra}
  accounting:
    {accounting}
"""
    return make_plan(parse(text).project).cluster


HYPERPOD_PARTITIONS = """  hyperpod:
    groups:
      gpu: {partition: dev}
      big: {partition: prod}"""


def _steps(path: Path) -> list[str]:
    return sorted(p.stem for p in (path / "steps").glob("*.sh"))


# --- which bundles have the step ------------------------------------------------------------------------------------

def test_parallelcluster_head_node_has_it_its_compute_nodes_do_not(tmp_path) -> None:
    cluster = _project("parallelcluster")
    out = bundles.render_dispatched_bundles(cluster, tmp_path / "pc")
    want = tuple(dict.fromkeys(t.partition for t in schedulers.scheduler(cluster).slurm_targets(cluster).values()))
    assert want and bundles.qos_partitions(cluster) == want
    head = out.bundles / render.HEAD_NODE_BUNDLE
    assert STEP in _steps(head)
    step = (head / "steps" / f"{STEP}.sh").read_text()
    assert "PARTITIONS=(" + " ".join(want) + ")" in step
    for bundle in out.bundles.iterdir():
        if bundle.name != render.HEAD_NODE_BUNDLE:
            assert STEP not in _steps(bundle) and not (bundle / SCRIPT).exists(), bundle.name


def test_hyperpod_controller_has_it_with_the_partitions_login_and_compute_do_not(tmp_path) -> None:
    cluster = _project("hyperpod", extra=HYPERPOD_PARTITIONS + "\n    login: {count: 1}")
    out = bundles.render_lifecycle_bundles(cluster, tmp_path / "hp")
    with_step = {b.name for b in out.root.iterdir() if STEP in _steps(b)}
    assert len(with_step) == 1
    (controller,) = with_step
    assert "PARTITIONS=(dev prod)" in (out.root / controller / "steps" / f"{STEP}.sh").read_text()
    assert (out.root / controller / SCRIPT).is_file()
    assert len(list(out.root.iterdir())) >= 4  # controller, login and the two compute groups


def test_pcs_has_no_such_step(tmp_path) -> None:
    cluster = _project("pcs")
    assert cluster.accounting_store == "managed"
    out = bundles.render_group_bundles(cluster, None, False, tmp_path / "pcs", login=True)
    assert out and all(STEP not in _steps(b.path) for b in out.values())


@pytest.mark.parametrize("accounting", ["enabled: false", "enabled: true\n    qos_per_partition: false"])
@pytest.mark.parametrize("orchestrator", ["parallelcluster", "hyperpod"])
def test_no_accounting_or_no_qos_per_partition_means_no_step_and_unchanged_bundles(tmp_path, orchestrator: str,
                                                                                    accounting: str) -> None:
    cluster = _project(orchestrator, accounting)
    assert bundles.qos_partitions(cluster) == ()
    if orchestrator == "parallelcluster":
        root = bundles.render_dispatched_bundles(cluster, tmp_path / "b").bundles
    else:
        root = bundles.render_lifecycle_bundles(cluster, tmp_path / "b").root
    for bundle in root.iterdir():
        assert STEP not in _steps(bundle) and not (bundle / SCRIPT).exists()
    # the head bundle is what it was before the step existed: rendered with no QoS partitions at all
    head = context_for(make_project("p5.48xlarge", "ubuntu-22.04", orchestrator), "gpu", "head")
    assert head.qos_partitions == () and STEP not in [s.name for s in head.steps()]


@pytest.mark.parametrize(("value", "on"), [(True, True), (None, True), (False, False)])
def test_qos_per_partition_unset_means_on(value, on: bool) -> None:
    # None: "where the orchestrator applies it", and ParallelCluster does
    cluster = _project("parallelcluster")
    accounting = cluster.accounting.model_copy(update={"qos_per_partition": value})
    assert bool(bundles.qos_partitions(dataclasses.replace(cluster, accounting=accounting))) is on


def test_bad_partition_names_are_refused() -> None:
    with pytest.raises(Exception, match="partition name"):
        context_for(make_project(), "gpu", "head", qos_partitions=("gpu; rm -rf /",))


# --- the rendered scripts -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("orchestrator", ["parallelcluster", "hyperpod"])
def test_the_step_and_its_script_are_shellcheck_clean(orchestrator: str) -> None:
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", orchestrator), "gpu", "head",
                      qos_partitions=("gpu", "big-q"))
    files = render.render_files(ctx)
    for path in (f"steps/{STEP}.sh", SCRIPT):
        proc = subprocess.run([SHELLCHECK, "-s", "bash", "-x", "-"], input=files[path], capture_output=True,
                              text=True, check=False)
        assert proc.returncode == 0, (path, proc.stdout)


# --- in the sandbox -------------------------------------------------------------------------------------------------

def _head(tmp_path, orchestrator: str = "parallelcluster", partitions=("gpu", "big-q"), **controller):
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", orchestrator), "gpu", "head",
                      qos_partitions=partitions)
    sb = build_sandbox(tmp_path / "sb", ctx, Image(**HEAD_IMAGE))
    install_slurm_controller(sb, partitions, **controller)
    return ctx, sb


def _qos(sb) -> list[str]:
    return (sb.path / "state/slurm/qos").read_text().split()


def _partition_qos(sb) -> dict[str, str]:
    return {f.name: f.read_text().strip() for f in (sb.path / "state/slurm/partitions").iterdir()}


@pytest.mark.parametrize("orchestrator", ["parallelcluster", "hyperpod"])
def test_the_controller_creates_a_qos_per_partition_and_sets_it(tmp_path, orchestrator: str) -> None:
    ctx, sb = _head(tmp_path, orchestrator)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert _qos(sb) == ["normal", "gpu", "big-q"]
    assert _partition_qos(sb) == {"gpu": "gpu", "big-q": "big-q"}
    assert calls_of(res, "sacctmgr") == [
        "sacctmgr -n show cluster", "sacctmgr -n -P show qos format=name",
        "sacctmgr -i add qos gpu", "sacctmgr -i add qos big-q", "sacctmgr -n -P show qos format=name"]
    assert "scontrol update PartitionName=gpu QOS=gpu" in res.calls
    assert "scontrol update PartitionName=big-q QOS=big-q" in res.calls
    dropin = (sb.root / DROPIN).read_text()
    # "-": never fails the start; timeout(1): never holds it past its share of the start timeout (test_slurmctld_start)
    assert f"ExecStartPost=-/usr/bin/timeout --kill-after={ctx.options.hook_kill_after_s} {ctx.options.partition_qos_hook_s} " \
           "/usr/local/sbin/fmcluster-partition-qos\n" in dropin
    assert (sb.root / INSTALLED).read_bytes() == (sb.bundle / SCRIPT).read_bytes()
    assert os.access(sb.root / INSTALLED, os.X_OK)
    assert "systemctl daemon-reload" in res.calls
    # scontrol reconfigure rebuilds the partitions too: a permanent reconfig trigger, set as SlurmUser, runs it again
    triggers = (sb.path / "state/slurm/triggers").read_text().splitlines()
    assert len(triggers) == 1 and triggers[0].split()[3:] == ["reconfig", "0", "slurm", "PERM", f"{sb.root}/{INSTALLED}"]
    assert f"runuser -u slurm -- {sb.root}/opt/slurm/bin/strigger --set --reconfig --flags=PERM " \
           f"--program={sb.root}/{INSTALLED}" in res.calls


def test_a_second_boot_changes_nothing(tmp_path) -> None:
    _, sb = _head(tmp_path)
    assert sb.run().rc == 0
    again = sb.run()
    assert again.rc == 0, again.out[-3000:]
    assert f"[{STEP}] already done" in again.out
    assert not [c for c in again.calls if " add " in c or " update " in c or c == "systemctl daemon-reload"]


def test_an_existing_qos_is_kept_and_a_partition_already_set_is_left_alone(tmp_path) -> None:
    _, sb = _head(tmp_path, qos=("normal", "gpu"))
    (sb.path / "state/slurm/partitions/gpu").write_text("gpu\n")
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert "sacctmgr -i add qos gpu" not in res.calls and "sacctmgr -i add qos big-q" in res.calls
    assert "scontrol update PartitionName=gpu QOS=gpu" not in res.calls
    assert _partition_qos(sb) == {"gpu": "gpu", "big-q": "big-q"}


def test_the_sacctmgr_stub_answers_an_existing_qos_as_slurm_does(tmp_path) -> None:
    _, sb = _head(tmp_path)
    sacctmgr = str(sb.root / "opt/slurm/bin/sacctmgr")
    run = lambda *a: subprocess.run([sacctmgr, *a], env=sb.env, capture_output=True, text=True)  # noqa: E731
    assert run("-i", "add", "qos", "normal").stdout == " Nothing new added.\n"
    assert run("-i", "add", "qos", "normal").returncode == 0
    assert run("-n", "show", "bogus").returncode == 1
    assert run("frobnicate", "qos").returncode == 1


def test_after_a_slurmctld_restart_the_drop_in_s_script_sets_the_qos_again(tmp_path) -> None:
    _, sb = _head(tmp_path)
    assert sb.run().rc == 0
    restart_slurmctld(sb)
    assert set(_partition_qos(sb).values()) == {"N/A"}
    proc = subprocess.run([str(sb.root / INSTALLED)], env=sb.env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert _partition_qos(sb) == {"gpu": "gpu", "big-q": "big-q"}


def test_the_script_gives_up_when_slurmctld_does_not_answer(tmp_path) -> None:
    _, sb = _head(tmp_path)
    assert sb.run().rc == 0
    restart_slurmctld(sb)
    (sb.path / "state/slurm/ctld-down").touch()
    env = sb.env | {"FMC_QOS_WAIT_S": "4"}
    proc = subprocess.run([str(sb.root / INSTALLED)], env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert "did not answer scontrol ping within 4s" in proc.stderr
    assert set(_partition_qos(sb).values()) == {"N/A"}


def test_slurmdbd_never_answering_fails_the_step_naming_it(tmp_path) -> None:
    _, sb = _head(tmp_path, dbd_up=False)
    sb.env["FMC_SLURMDBD_WAIT_S"] = "10"
    res = sb.run()
    assert res.rc != 0
    assert "slurmdbd did not answer within 10s" in res.out
    assert len(calls_of(res, "sacctmgr -n show cluster")) == 3  # at 0, 5 and 10 seconds
    assert not [c for c in res.calls if " add " in c]
    assert not (sb.root / DROPIN).exists()
    assert "slurmdbd" in (sb.root / "var/lib/fmcluster/last-error").read_text()


def test_a_missing_slurmctld_unit_fails_the_step_without_a_drop_in(tmp_path) -> None:
    _, sb = _head(tmp_path, unit_dir=None)
    res = sb.run()
    assert res.rc != 0
    assert "slurmctld.service has no unit file on this node" in res.out
    assert not (sb.root / DROPIN).exists() and not (sb.root / INSTALLED).exists()
    assert not calls_of(res, "sacctmgr")


def test_the_unit_is_found_where_a_package_puts_it(tmp_path) -> None:
    _, sb = _head(tmp_path, unit_dir="usr/lib/systemd/system")
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert (sb.root / DROPIN).is_file()


def test_a_partition_slurm_does_not_know_fails_the_step(tmp_path) -> None:
    ctx = context_for(make_project(), "gpu", "head", qos_partitions=("gpu", "ghost"))
    sb = build_sandbox(tmp_path / "sb", ctx, Image(**HEAD_IMAGE))
    install_slurm_controller(sb, ("gpu",))
    res = sb.run()
    assert res.rc != 0
    assert "Invalid partition name specified" in res.out
    assert "could not set every partition's QoS" in res.out


def test_a_changed_drop_in_is_rewritten(tmp_path) -> None:
    _, sb = _head(tmp_path)
    assert sb.run().rc == 0
    (sb.root / DROPIN).write_text("[Service]\nExecStartPost=/bin/false\n")
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert "/usr/local/sbin/fmcluster-partition-qos\n" in (sb.root / DROPIN).read_text()
    assert "ExecStartPost=/bin/false" not in (sb.root / DROPIN).read_text()
    assert "systemctl daemon-reload" in res.calls


def test_the_boot_budget_counts_the_step_s_bounded_waits() -> None:
    from fmcluster.bootstrap import budget
    ctx = context_for(make_project(), "gpu", "head", qos_partitions=("gpu",))
    lines = dict(budget.estimate(ctx).lines)
    assert lines["slurmdbd and slurmctld waits"] == ctx.options.slurmdbd_wait_s + ctx.options.slurmctld_wait_s
    assert "slurmdbd and slurmctld waits" not in dict(budget.estimate(context_for(make_project(), "gpu",
                                                                                  "head")).lines)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("example", ["p5-slurm-accounting", "p5en-slurm-accounting"])
def test_the_step_adds_only_itself_to_an_accounting_example_s_bundles(tmp_path, example: str) -> None:
    """The examples with accounting, rendered as they are and with accounting off: the bundles differ only by the
    step, its script and what digests them (SHA256SUMS, manifest, entry script, dispatcher). Every example without
    accounting rendered byte-identical before and after the step was added (checked by hand at the commit)."""
    root = Path(__file__).resolve().parents[2] / "examples"
    cluster = make_plan(parse((root / f"{example}.yaml").read_text()).project).cluster
    cluster = dataclasses.replace(cluster, teams=())  # the teams' own step: tests/bootstrap/test_slurm_teams.py
    off = dataclasses.replace(cluster, accounting=cluster.accounting.model_copy(update={"enabled": False}))
    assert bundles.qos_partitions(cluster) and not bundles.qos_partitions(off)
    bundles.render_bundles(cluster, tmp_path / "on", None, False, None)
    bundles.render_bundles(off, tmp_path / "off", None, False, None)
    on_files, off_files = _files(tmp_path / "on"), _files(tmp_path / "off")
    added = sorted(set(on_files) - set(off_files))
    assert len(added) == 2 and {Path(p).parent.parent for p in added} == {Path(added[0]).parent.parent}  # one bundle
    assert sorted(Path(p).name for p in added) == [f"{STEP}.sh", "fmcluster-partition-qos"]
    assert not set(off_files) - set(on_files)
    changed = {Path(p).name for p in off_files if off_files[p] != on_files[p]}
    assert changed <= {"SHA256SUMS", "manifest.json", "bootstrap.sh", "head-node.sh"}  # the head node's dispatcher


PROFILE_CASES = [p for p in profiles.load_profiles() if p.flavour in ("parallelcluster", "hyperpod")]


@pytest.mark.parametrize("profile", PROFILE_CASES, ids=[p.name for p in PROFILE_CASES])
def test_the_controller_boots_with_the_step_on_each_profile_of_its_flavour(tmp_path, profile) -> None:
    orchestrator = orchestrators.by_flavour(profile.flavour).name
    ctx = context_for(make_project("p5.48xlarge", profile.os, orchestrator), "gpu", "head",
                      qos_partitions=("gpu",))
    sb = build_sandbox(tmp_path / "sb", ctx, Image.from_profile(profile, ctx.arch, None, **HEAD_IMAGE_HW))
    install_slurm_controller(sb, ("gpu",), prefix=profile.arches[ctx.arch].components.slurm.prefix)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert _partition_qos(sb) == {"gpu": "gpu"} and (sb.root / DROPIN).is_file()
