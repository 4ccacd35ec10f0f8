"""Job-level Slurm metrics on the node that runs slurmctld (ParallelCluster's head node, HyperPod's controller):
its exporters step installs our script (files/fmcluster-slurm-metrics) as a service of the unprivileged
slurm-metrics user, linked into node_exporter's textfile directory. No other node has it.

The script is run for real against stub ``squeue``/``sinfo`` (``support.slurm_stubs``: they answer only the exact
command line the man pages document for the formats the script asks for, and print what the real clients print),
and its file is checked with the real ``promtool check metrics`` and value by value."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from fmcluster.bootstrap import profiles, render
from fmcluster.flavours import FLAVOURS
from fmcluster.generate import metrics
from support import slurm_stubs
from support.slurm_stubs import HEALTHY_JOBS, HEALTHY_NODES, Job, Node, gpu_tres, p5

from fmcluster import orchestrators
from support.sandbox import SHELLCHECK, Image, build_sandbox, context_for, make_project

HEAD_IMAGE = dict(gpus=0, efa_devices=0, nvme_drives=0, driver=False)
UNIT = "etc/systemd/system/fmcluster-slurm-metrics.service"
SCRIPT = "usr/local/sbin/fmcluster-slurm-metrics"
OUT = "var/lib/fmcluster/slurm-metrics/slurm.prom"
LINK = "var/lib/fmcluster/textfile/slurm.prom"
PROMTOOL = shutil.which("promtool")
TOTAL_NAMES = {"slurm_nodes_total", "slurm_gpus_total"}
"""Gauges named *_total (promtool's lint objects): SckyzO/slurm_exporter's names, kept so its dashboards read ours."""


def _head(tmp_path: Path, orchestrator: str = "parallelcluster"):
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", orchestrator), "gpu", "head")
    sb = build_sandbox(tmp_path / "sb", ctx, Image(**HEAD_IMAGE))
    return ctx, sb


def _bin(ctx, sb) -> Path:
    return sb.root / ctx.options.slurm_prefix.lstrip("/") / "bin"


def _collect(sb) -> str:
    """Run the installed script once, as its unit would (but under the sandbox's root), and return its file."""
    proc = subprocess.run(["bash", str(sb.root / SCRIPT), "--once"], capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "FMC_ROOT": str(sb.root), "LANG": "C"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (sb.root / OUT).with_suffix(".prom.tmp").exists()
    return (sb.root / OUT).read_text()


def _promtool_ok(text: str) -> None:
    """The real promtool parses it; its lint reports nothing but the *_total gauges (exit 3 is lint, 1 parse)."""
    assert PROMTOOL, "promtool comes with the Debian package prometheus"
    proc = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True)
    problems = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode in (0, 3), problems
    assert {p.split()[0] for p in problems} <= TOTAL_NAMES, problems
    assert all('should not have "_total" suffix' in p for p in problems), problems


def _samples(text: str) -> dict[str, str]:
    """Sample line (name and labels) -> value; HELP and TYPE checked on the way (one each, before the samples)."""
    out: dict[str, str] = {}
    typed: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]
            assert kind == "gauge" and name not in typed, line
            typed.add(name)
            continue
        if line.startswith("# HELP "):
            continue
        sample, value = line.rsplit(" ", 1)
        assert re.match(r"^[a-z_]+", sample).group(0) in typed, line
        assert sample not in out, line
        out[sample] = value
    return out


@pytest.mark.parametrize(("orchestrator", "role", "runs"), [
    ("parallelcluster", "head", True), ("hyperpod", "head", True),
    ("parallelcluster", "compute", False), ("hyperpod", "login", False), ("hyperpod", "compute", False),
    ("pcs", "compute", False), ("pcs", "head", False), ("none", "compute", False),
    ("pcs", "login", True),  # AWS runs PCS's slurmctld: its login nodes reach it through sackd
])
def test_only_the_controller_s_node_has_the_collector(orchestrator: str, role: str, runs: bool) -> None:
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", orchestrator), "gpu", role)
    assert ctx.slurm_metrics is runs
    files = render.render_files(ctx)
    assert ("files/fmcluster-slurm-metrics" in files) is runs
    assert ("fmcluster-slurm-metrics.service" in files["steps/90-exporters.sh"]) is runs
    assert ("slurm_jobs_pending" in files["files/prometheus-agent.yml"]) is runs  # node_exporter's keep-list
    assert "9341" not in files["files/prometheus-agent.yml"]  # no port of its own


def test_the_trait_names_the_controller_s_role_and_pcs_has_none() -> None:
    assert {name: f.slurmctld_role for name, f in FLAVOURS.items()} == {
        "self-managed": None, "parallelcluster": "head", "hyperpod": "head", "pcs": None, "hyperpod-eks": None}
    assert {name: f.slurm_metrics_role for name, f in FLAVOURS.items()} == {
        "self-managed": None, "parallelcluster": "head", "hyperpod": "head", "pcs": "login", "hyperpod-eks": None}


@pytest.mark.parametrize(("login", "runs"), [("    login: {count: 2}\n", True), ("    login: null\n", False)])
def test_pcs_collects_slurm_metrics_only_with_login_nodes(login: str, runs: bool) -> None:
    """The rules, the dashboard and the plan follow: no login node, nothing collects Slurm's metrics on PCS."""
    from support import BASE, plan_of

    from fmcluster.generate import metrics

    text = BASE + "orchestrator:\n  type: pcs\n  pcs:\n    ami_id: ami-0123456789abcdef0\n" + login
    cluster = plan_of(text).cluster
    assert metrics.runs_slurm_metrics(cluster) is runs
    assert metrics.slurm_metrics_role(cluster) == ("login" if runs else None)


def test_exporters_off_means_no_slurm_metrics() -> None:
    ctx = context_for(make_project(), "gpu", "head", exporters=False)
    assert not ctx.slurm_metrics
    assert "files/fmcluster-slurm-metrics" not in render.render_files(ctx)


def test_the_script_and_the_step_are_shellcheck_clean() -> None:
    files = render.render_files(context_for(make_project(), "gpu", "head"))
    for name in ("files/fmcluster-slurm-metrics", "steps/90-exporters.sh"):
        proc = subprocess.run([SHELLCHECK, "-s", "bash", "-x", "-"], input=files[name], capture_output=True,
                              text=True, check=False)
        assert proc.returncode == 0, (name, proc.stdout)


@pytest.mark.parametrize("orchestrator", ["parallelcluster", "hyperpod"])
def test_the_step_installs_the_script_as_an_unprivileged_service_linked_into_the_textfile_dir(
        tmp_path, orchestrator: str) -> None:
    ctx, sb = _head(tmp_path, orchestrator)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    bundle_script = (sb.bundle / "files/fmcluster-slurm-metrics").read_text()
    assert (sb.root / SCRIPT).read_text() == bundle_script
    assert os.access(sb.root / SCRIPT, os.X_OK)
    unit = (sb.root / UNIT).read_text()
    assert "User=slurm-metrics" in unit and "ExecStart=/usr/local/sbin/fmcluster-slurm-metrics\n" in unit
    assert "useradd --system --no-create-home --shell /usr/sbin/nologin slurm-metrics" in res.calls
    assert os.readlink(sb.root / LINK) == "../slurm-metrics/slurm.prom"
    assert f'slurm_bin="${{root}}{ctx.options.slurm_prefix}/bin"' in bundle_script
    assert "systemctl enable fmcluster-slurm-metrics.service" in res.calls
    assert "systemctl restart fmcluster-slurm-metrics.service" in res.calls
    assert not [c for c in res.calls if "slurm_exporter" in c]  # nothing downloaded for it
    # a second boot finds the step done: nothing written, nothing restarted
    again = sb.run()
    assert again.rc == 0, again.out[-3000:]
    assert "systemctl restart fmcluster-slurm-metrics.service" not in again.calls
    assert not [c for c in again.calls if c.startswith("useradd")]
    # through the link, node_exporter's textfile collector reads what the script wrote
    slurm_stubs.set_nodes(_bin(ctx, sb), HEALTHY_NODES)
    assert _collect(sb) == (sb.root / LINK).read_text()


def test_the_file_holds_the_table_s_metrics_with_the_values_of_squeue_and_sinfo(tmp_path) -> None:
    ctx, sb = _head(tmp_path)
    assert sb.run().rc == 0
    slurm_stubs.set_queue(_bin(ctx, sb), HEALTHY_JOBS)
    slurm_stubs.set_nodes(_bin(ctx, sb), HEALTHY_NODES)
    text = _collect(sb)
    _promtool_ok(text)
    samples = _samples(text)
    names = {re.match(r"^[a-z_]+", s).group(0) for s in samples}
    assert names == metrics.SLURM_METRICS - {"slurm_node_drain_reason_info"}  # no node is down or drained
    want = {
        'fmcluster_slurm_command_success{command="squeue"}': "1",
        'fmcluster_slurm_command_success{command="sinfo"}': "1",
        "slurm_jobs_pending": "3", "slurm_jobs_running": "2",
        'slurm_queue_pending{partition="gpu",reason="Priority",user="alice"}': "2",
        'slurm_queue_pending{partition="gpu",reason="Resources",user="bob"}': "1",
        'slurm_queue_running{partition="gpu",user="carol"}': "2",
        'slurm_user_gpus_running{user="carol"}': "16", 'slurm_user_gpus_running{user="alice"}': "0",
        'slurm_user_jobs_pending{user="alice"}': "2", 'slurm_user_jobs_running{user="carol"}': "2",
        'slurm_nodes_alloc{partition="gpu"}': "2", 'slurm_nodes_idle{partition="gpu"}': "1",  # idle~ is idle
        'slurm_nodes_idle{partition="debug"}': "2", 'slurm_nodes_down{partition="gpu"}': "0",
        "slurm_nodes_total": "5",
        "slurm_gpus_total": "24", "slurm_gpus_alloc": "16", "slurm_gpus_idle": "8",
        'slurm_partition_gpus_allocated{partition="gpu"}': "16", 'slurm_partition_gpus_idle{partition="gpu"}': "8",
        'slurm_partition_gpus_idle{partition="debug"}': "0",
        'slurm_partition_jobs_pending{partition="gpu"}': "3", 'slurm_partition_jobs_pending{partition="debug"}': "0",
    }
    assert {k: samples.get(k) for k in want} == want
    assert abs(int(samples["fmcluster_slurm_metrics_timestamp_seconds"]) - int(__import__("time").time())) < 60


def test_down_drained_and_shared_nodes_typed_gpus_and_quoted_reasons(tmp_path) -> None:
    ctx, sb = _head(tmp_path)
    assert sb.run().rc == 0
    reason = 'fmcluster health: "XID 79" on GPU\\3'
    slurm_stubs.set_nodes(_bin(ctx, sb), [
        Node("gpu-st-p5-1", "gpu", "down*", *p5(0), since="2026-11-30T12:01:00", reason=reason),
        Node("gpu-st-p5-2", "gpu", "draining", *p5(4), since="2026-11-30T12:00:00", reason="kernel upgrade"),
        Node("gpu-st-p5-2", "all", "draining", *p5(4), since="2026-11-30T12:00:00", reason="kernel upgrade"),
        Node("gpu-st-p5-3", "gpu", "mixed", "gpu:h100:8(S:0-1)", "gpu:h100:3(IDX:0,2-3)"),
        Node("gpu-st-p5-4", "gpu", "idle*", *p5(0), since="2026-11-30T12:02:00", reason="Not responding"),
        Node("debug-st-c7i-1", "debug", "fail", since="2026-11-30T11:00:00", reason="bad DIMM"),
    ])
    slurm_stubs.set_queue(_bin(ctx, sb), [
        Job("gpu", "RUNNING", "erin", "cpu=8,mem=64G,node=1,billing=8,gres/gpu=4,gres/gpu:h100=4,gres/gpumem=320G",
            "None"),
        Job("gpu", "RUNNING", "erin", "cpu=8,mem=64G,node=1,billing=8,gres/gpu:h100=3", "None"),
        Job("gpu,all", "PENDING", "frank", gpu_tres(8, 1, 1), "ReqNodeNotAvail, UnavailableNodes:gpu-st-p5-1"),
        Job("gpu", "COMPLETING", "gina", gpu_tres(8, 1, 1), "None"),
    ])
    text = _collect(sb)
    _promtool_ok(text)
    samples = _samples(text)
    escaped = 'fmcluster health: \\"XID 79\\" on GPU\\\\3'
    drained = {k for k in samples if k.startswith("slurm_node_drain_reason_info")}
    assert drained == {  # each node once; "Not responding" and a failed node's reason are not drain reasons
        f'slurm_node_drain_reason_info{{node="gpu-st-p5-1",reason="{escaped}",since="2026-11-30T12:01:00"}}',
        'slurm_node_drain_reason_info{node="gpu-st-p5-2",reason="kernel upgrade",since="2026-11-30T12:00:00"}'}
    want = {
        'slurm_nodes_down{partition="gpu"}': "1", 'slurm_nodes_drain{partition="gpu"}': "1",
        'slurm_nodes_drain{partition="all"}': "1", 'slurm_nodes_mix{partition="gpu"}': "1",
        'slurm_nodes_idle{partition="gpu"}': "1", 'slurm_nodes_fail{partition="debug"}': "1",
        "slurm_nodes_total": "5",  # gpu-st-p5-2 is in two partitions, counted once
        "slurm_gpus_total": "32", "slurm_gpus_alloc": "7",
        "slurm_gpus_idle": "13",  # mixed 5 + idle* 8; none on the down and draining nodes
        'slurm_partition_gpus_allocated{partition="gpu"}': "7", 'slurm_partition_gpus_allocated{partition="all"}': "4",
        'slurm_user_gpus_running{user="erin"}': "7",  # gres/gpu=4 (not the typed 4 too, nor gpumem); typed 3
        'slurm_queue_pending{partition="gpu,all",reason="ReqNodeNotAvail, UnavailableNodes:gpu-st-p5-1",'
        'user="frank"}': "1",
        'slurm_partition_jobs_pending{partition="gpu"}': "1", 'slurm_partition_jobs_pending{partition="all"}': "1",
        "slurm_jobs_pending": "1", "slurm_jobs_running": "2",  # COMPLETING is neither
    }
    assert {k: samples.get(k) for k in want} == want


def test_a_failing_squeue_reports_itself_and_keeps_sinfo_s_metrics(tmp_path) -> None:
    ctx, sb = _head(tmp_path)
    assert sb.run().rc == 0
    slurm_stubs.set_queue(_bin(ctx, sb), HEALTHY_JOBS)
    slurm_stubs.set_nodes(_bin(ctx, sb), HEALTHY_NODES)
    slurm_stubs.fail(_bin(ctx, sb), "squeue")
    text = _collect(sb)
    _promtool_ok(text)
    samples = _samples(text)
    assert samples['fmcluster_slurm_command_success{command="squeue"}'] == "0"
    assert samples['fmcluster_slurm_command_success{command="sinfo"}'] == "1"
    assert samples["slurm_nodes_total"] == "5" and samples["slurm_gpus_alloc"] == "16"
    assert not [k for k in samples if k.startswith(("slurm_jobs_", "slurm_queue_", "slurm_user_",
                                                    "slurm_partition_jobs_"))]
    # sinfo failing too: only the health metrics are left
    slurm_stubs.fail(_bin(ctx, sb), "sinfo")
    assert {re.match(r"^[a-z_]+", k).group(0) for k in _samples(_collect(sb))} == {
        "fmcluster_slurm_command_success", "fmcluster_slurm_metrics_timestamp_seconds"}


def test_output_it_cannot_parse_counts_as_a_failed_command(tmp_path) -> None:
    ctx, sb = _head(tmp_path)
    assert sb.run().rc == 0
    # what sinfo prints for an older format (no "|" suffixes): the script must not guess
    (_bin(ctx, sb) / "sinfo.out").write_text("gpu-st-p5-1 gpu idle gpu:h100:8(S:0-1)\n")
    samples = _samples(_collect(sb))
    assert samples['fmcluster_slurm_command_success{command="sinfo"}'] == "0"
    assert "slurm_nodes_total" not in samples


def test_the_stubs_refuse_a_format_they_do_not_know(tmp_path) -> None:
    ctx, sb = _head(tmp_path)
    bin_dir = _bin(ctx, sb)
    ok = subprocess.run([str(bin_dir / "squeue"), *slurm_stubs.SQUEUE_ARGS], capture_output=True, text=True)
    assert ok.returncode == 0
    other = subprocess.run([str(bin_dir / "squeue"), "-h", "-o", "%P|%T|%u|%r"], capture_output=True, text=True)
    assert other.returncode == 1 and "error" in other.stderr


PROFILE_CASES = [(p.name, p.os) for p in profiles.load_profiles() if FLAVOURS[p.flavour].slurm_metrics_role]


@pytest.mark.parametrize(("profile_name", "os_name"), PROFILE_CASES, ids=[c[0] for c in PROFILE_CASES])
def test_the_controller_boots_with_the_collector_on_each_profile_of_its_flavour(tmp_path, profile_name: str,
                                                                                  os_name: str) -> None:
    """On each image of ParallelCluster and HyperPod (the slurmctld node) and of PCS (a login node)."""
    (profile,) = [p for p in profiles.load_profiles() if p.name == profile_name]
    orchestrator = orchestrators.by_flavour(profile.flavour).name
    role = FLAVOURS[profile.flavour].slurm_metrics_role
    ctx = context_for(make_project("p5.48xlarge", os_name, orchestrator), "gpu", role)
    image = Image.from_profile(profile, ctx.arch, None, gpus=0, efa_devices=0, nvme_drives=0)
    sb = build_sandbox(tmp_path / "sb", ctx, image)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    assert "systemctl enable fmcluster-slurm-metrics.service" in res.calls
    slurm_stubs.set_nodes(_bin(ctx, sb), HEALTHY_NODES)
    assert 'slurm_nodes_total 5' in _collect(sb)
