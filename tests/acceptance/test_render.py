"""`fmcluster acceptance render`: the jobs of every example, linted by the real shellcheck, asking Slurm
for the right nodes and GPUs, carrying the bootstrap's NCCL environment byte for byte, and run in a
sandbox of stub commands (srun, scontrol) that record their arguments."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from fmcluster.bootstrap.acceptance import render_acceptance
from fmcluster.bootstrap.bundles import (
    render_dispatched_bundles,
    render_lifecycle_bundles,
)
from fmcluster.bootstrap.context import context_for
from fmcluster.bootstrap.render import render_files
from support import ALL_FILES, group_nodes, team_account
from support import shellcheck

from fmcluster import catalog, config
from fmcluster.acceptance import build_report
from fmcluster.acceptance.pairs import rounds
from fmcluster.cli.acceptance import RENDERERS
from fmcluster.plan import make_plan

FIXTURES = Path(__file__).parent / "fixtures"


def _loaded(path: Path):
    loaded = config.load(str(path))
    return loaded, make_plan(loaded.project).cluster


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, tuple[Path, object, object]]:
    out = {}
    for path in ALL_FILES:
        loaded, cluster = _loaded(path)
        if RENDERERS[cluster.orchestrator] is not render_acceptance:
            continue  # Kubernetes objects, not scripts: tests/kubernetes/test_render.py
        target = tmp_path_factory.mktemp(path.stem)
        render_acceptance(cluster, target, account=team_account(cluster))
        out[path.stem] = (target, loaded.project, cluster)
    return out


def sbatch_options(text: str) -> dict[str, str]:
    opts = {}
    for line in text.splitlines():
        if m := re.match(r"^#SBATCH --([a-z-]+)(?:=(.*))?$", line):
            opts[m.group(1)] = m.group(2) or ""
    return opts


def expected_partition(project, group: str) -> str:
    """Read from the project file's own settings, not from the generators the renderer uses."""
    orch = project.orchestrator
    if orch.type == "parallelcluster":
        queues = (orch.parallelcluster.queues if orch.parallelcluster else None) or {group: [group]}
        return next(q for q, members in queues.items() if group in members)
    settings = orch.hyperpod.groups.get(group) if orch.hyperpod else None
    return (settings.partition if settings else None) or group


def test_every_rendered_script_passes_shellcheck(rendered):
    scripts = sorted(p for target, *_ in rendered.values() for p in target.rglob("*")
                     if p.suffix in (".sbatch", ".sh") and p.name != "healthcheck.sh")
    assert len(scripts) > 20
    linted = shellcheck.lint(scripts, "--norc")  # each distinct script once (support/shellcheck.py)
    assert linted.returncode == 0, linted.stdout[:4000] + linted.stderr[:2000]


def test_slurm_jobs_request_the_right_nodes_gpus_and_partition(rendered):
    checked = 0
    for name, (target, project, cluster) in rendered.items():
        sbatch = sorted(target.rglob("*.sbatch"))
        if not cluster.driver.slurm:  # no Slurm (none; hyperpod-eks: Kubernetes jobs, the k8s branch)
            assert not sbatch, f"{name}: no Slurm without an orchestrator"
            assert all((target / g.name / "nccl-mpirun.sh").is_file() for g in project.compute_groups)
            assert all((target / g.name / "setup-nccl-tests.sh").is_file() for g in project.compute_groups)
            assert "No Slurm" in (target / "README.md").read_text()
            continue
        for group in project.compute_groups:
            itype = catalog.get(group.instance_type)
            spares = getattr(group.capacity, "spare_instances_per_ultraserver", 0)  # a training plan's, held back
            ultra = max((u.instances - spares for u in itype.ultraservers if group.count % (u.instances - spares) == 0),
                        default=None)
            files = {p.name: sbatch_options(p.read_text()) for p in (target / group.name).glob("*.sbatch")}
            expected_files = {"setup-nccl-tests.sbatch", "node-checks.sbatch", "nccl-pairs.sbatch"} | (
                {"nccl.sbatch"} if ultra is None else
                {"nccl-in-domain.sbatch"} | ({"nccl-cross-domain.sbatch"} if group.count >= 2 * ultra else set()))
            assert set(files) == expected_files, name
            for file, opts in files.items():
                count, account = group_nodes(project, cluster, group)
                nodes = {"nccl-in-domain.sbatch": ultra, "nccl-cross-domain.sbatch": 2 * (ultra or 0),
                         "setup-nccl-tests.sbatch": 1}.get(file, count)
                assert opts["nodes"] == str(nodes), (name, file)
                assert opts.get("account") == account, (name, file)
                assert opts["ntasks-per-node"] == str(itype.gpus), (name, file)
                assert opts["partition"] == expected_partition(project, group.name), (name, file)
                assert "exclusive" in opts
                # ParallelCluster's nodes carry Gres=gpu (cookbook), PCS autodetects GPUs (PCS user guide); HyperPod's
                # jobs ask for whole nodes only
                if project.orchestrator.type in ("parallelcluster", "pcs"):
                    assert opts["gpus-per-node"] == str(itype.gpus)
                else:
                    assert "gpus-per-node" not in opts
                checked += 1
    assert checked >= 10


def _profile(bundle_step: str) -> str:
    return bundle_step.split("<<'PROFILE'\n", 1)[1].split("\nPROFILE\n", 1)[0] + "\n"


def test_job_scripts_carry_the_bundles_nccl_profile_byte_for_byte(rendered, tmp_path: Path):
    for name, (target, project, cluster) in rendered.items():
        for group in project.compute_groups:
            flavour = {"none": "self-managed"}.get(project.orchestrator.type, project.orchestrator.type)
            step = render_files(context_for(cluster, group.name, "compute", flavour))["steps/50-nccl-env.sh"]
            profile = _profile(step)
            assert "LD_LIBRARY_PATH" in profile
            for script in (target / group.name).iterdir():
                if script.name == "healthcheck.sh":
                    continue
                text = script.read_text()
                inside = text.split("# --- begin fmcluster-nccl.sh ---\n", 1)[1].split("# --- end fmcluster-nccl.sh ---", 1)[0]
                assert inside == profile, (name, script.name)


def test_the_health_check_is_the_deployed_bundles(rendered, tmp_path: Path):
    for name in ("default", "p5en-hyperpod"):
        target, project, cluster = rendered[name]
        if project.orchestrator.type == "parallelcluster":
            root = render_dispatched_bundles(cluster, tmp_path / name).bundles
            deployed = {g.name: root / g.instance_type for g in cluster.groups}
        else:
            root = render_lifecycle_bundles(cluster, tmp_path / name).root
            deployed = {g.name: root / g.name for g in cluster.groups}
        for group, bundle in deployed.items():
            assert (target / group / "healthcheck.sh").read_bytes() == (bundle / "steps/99-healthcheck.sh").read_bytes()


def test_the_logs_folder_survives_an_s3_sync(rendered):
    """`aws s3 sync` (README: the folder reaches FSx through the bucket) copies files, not empty folders, and Slurm
    opens every job's --output=logs/... before the script runs."""
    for name, (target, project, cluster) in rendered.items():
        if not cluster.driver.slurm:
            continue
        for script in target.rglob("*.sbatch"):
            output = sbatch_options(script.read_text())["output"]
            assert any((target / output).parent.iterdir()), (name, output)


def test_dcgmi_gets_the_expected_nvlinks_only_where_the_catalog_knows_them(rendered):
    target, *_ = rendered["p5-parallelcluster"]
    assert "dcgmi diag -r 2 -p pcie.gpu_nvlinks_expected_up=18\n" in (target / "gpu/node-checks.sh").read_text()
    target, *_ = rendered["p4d-on-demand"]
    text = next(target.glob("*/node-checks.sh")).read_text()
    assert "dcgmi diag -r 2\n" in text and "nvlinks_expected_up" not in text


def _ring_function(script: Path) -> str:
    text = script.read_text()
    return text[text.index("fmc_ring_rounds() {"):text.index("\n}\n", text.index("fmc_ring_rounds() {")) + 3]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9])
def test_the_jobs_pairing_is_the_reports(rendered, n: int):
    target, *_ = rendered["p5-parallelcluster"]
    hosts = [f"h{i}" for i in range(n)]
    code = _ring_function(target / "gpu/nccl-pairs.sbatch") + 'fmc_ring_rounds "$@"\n'
    proc = subprocess.run(["bash", "-c", code, "_", *hosts], capture_output=True, text=True, check=True, timeout=30)
    from_bash = [tuple(line.split()) for line in proc.stdout.splitlines()]
    assert from_bash == [(str(i), a, b) for i, rnd in enumerate(rounds(hosts)) for a, b in rnd]


SRUN = r"""#!/bin/bash
printf 'srun %s\n' "$*" >>"${SANDBOX}/calls.log"
for a in "$@"; do
  case "$a" in
    --help) echo "Usage: srun [OPTIONS...] executable"; exit 0 ;;
    test) [[ -e "${SANDBOX}/binaries-present" ]] && exit 0
          echo "srun: error: ip-10-1-0-12: task 1: Exited with exit code 1" >&2; exit 1 ;;
    */all_reduce_perf|*/all_gather_perf) grep -v '^FMC-' "${SANDBOX}/nccl-output.log"; exit 0 ;;
  esac
done
exit 0
"""


def _sandbox(tmp_path: Path, hosts: list[str]) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(SRUN)
    (bin_dir / "scontrol").write_text("#!/bin/bash\nprintf '%s\\n' " + " ".join(hosts) + "\n")
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    shutil.copy(FIXTURES / "p5-pair/logs/nccl-train-pair-1.log", tmp_path / "nccl-output.log")
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "SANDBOX": str(tmp_path), "SLURM_JOB_NODELIST": "ip-10-1-0-[11-14]",
            "SLURM_JOB_ID": "4242", "HOME": str(tmp_path)}


def _submit(rendered, tmp_path: Path, file: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    target, *_ = rendered["p5-parallelcluster"]
    work = tmp_path / "acceptance"
    shutil.copytree(target, work)
    return subprocess.run(["bash", str(work / "gpu" / file)], check=False, cwd=work, env=env | {"SLURM_SUBMIT_DIR": str(work)},
                          capture_output=True, text=True, timeout=60)


def test_missing_nccl_tests_binaries_fail_with_a_message_the_report_repeats(rendered, tmp_path: Path):
    proc = _submit(rendered, tmp_path, "nccl.sbatch", _sandbox(tmp_path, ["ip-10-1-0-11", "ip-10-1-0-12"]))
    assert proc.returncode == 1
    assert "acceptance/nccl-tests/gpu/build/all_reduce_perf is missing on a node" in proc.stderr
    assert "submit gpu/setup-nccl-tests.sbatch first" in proc.stderr
    report = build_report(tmp_path / "acceptance/logs")
    # Besides the jobs never submitted here (the coverage findings, per group), the one failure is the setup's.
    (message,) = [f.message for f in report.findings if f.level == "fail" and not f.file.startswith("group ")]
    assert message.startswith("no nccl-tests results (setup): ") and "nccl-tests/gpu/build/all_reduce_perf is missing" in message
    assert "ip-10-1-0-12: task 1" in message


def test_an_image_without_pyxis_fails_clearly(rendered, tmp_path: Path):
    env = _sandbox(tmp_path, ["ip-10-1-0-11", "ip-10-1-0-12"]) | {"FMC_IMAGE": "/fsx/nccl-tests.sqsh"}
    proc = _submit(rendered, tmp_path, "nccl.sbatch", env)
    assert proc.returncode == 1 and "this Slurm has no pyxis (srun --container-image)" in proc.stderr


def test_the_pairs_job_runs_the_ring_and_its_logs_pass_the_report(rendered, tmp_path: Path):
    hosts = ["ip-10-1-0-11", "ip-10-1-0-12", "ip-10-1-0-13", "ip-10-1-0-14"]
    env = _sandbox(tmp_path, hosts)
    (tmp_path / "binaries-present").touch()
    proc = _submit(rendered, tmp_path, "nccl-pairs.sbatch", env)
    assert proc.returncode == 0, proc.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    launched = sorted(re.search(r"--nodelist=(\S+)", c).group(1) for c in calls if "all_reduce_perf -b 8 -e 16G" in c)
    assert launched == sorted(",".join(p) for rnd in rounds(hosts) for p in rnd)
    runs = [c for c in calls if "all_reduce_perf -b 8" in c]
    assert len(runs) == 4
    assert all("--mpi=pmix" in c and "--ntasks-per-node=8" in c and "--nodes=2" in c for c in runs)
    report = build_report(tmp_path / "acceptance")
    assert len(report.runs) == 4 and all(r["scope"] == "pair" for r in report.runs)
    # The pairs pass; what fails is only that the other jobs of acceptance.json were never submitted.
    failed = sorted(f.message.split(":")[0] for f in report.findings if f.level == "fail")
    assert failed == ["dcgmi diag from 0 of 4 nodes", "group all_gather_perf", "group all_reduce_perf",
                      "no nccl-tests build log", "node checks from 0 of 4 nodes"], [f.message for f in report.findings]
    assert os.path.isdir(tmp_path / "acceptance/logs")


NODE_STUBS = {
    "hostname": 'echo ip-10-1-0-11',
    "nvidia-smi": 'for i in 0 1 2 3 4 5 6 7; do echo "NVIDIA H100 80GB HBM3"; done',
    "fi_info": 'for i in $(seq 0 31); do printf "provider: efa\\n    fabric: efa-direct\\n    domain: rdmap%ss0-rdm\\n" "$i"; done',
    "sudo": 'exit 1',
    "dcgmi": 'grep -v "^FMC-" "${SANDBOX}/dcgm.log"',
}


def test_the_node_checks_print_what_the_report_reads(rendered, tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in NODE_STUBS.items():
        (bin_dir / name).write_text(f'#!/bin/bash\nprintf "%s %s\\n" {name} "$*" >>"${{SANDBOX}}/calls.log"\n{body}\n')
        (bin_dir / name).chmod(0o755)
    shutil.copy(FIXTURES / "p5-pair/logs/dcgm-ip-10-1-0-11.log", tmp_path / "dcgm.log")
    target, *_ = rendered["p5-parallelcluster"]
    work = tmp_path / "acceptance"
    shutil.copytree(target, work)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SANDBOX": str(tmp_path), "HOME": str(tmp_path), "SLURM_SUBMIT_DIR": str(work)}
    proc = subprocess.run(["bash", str(work / "gpu/node-checks.sh")], check=False, cwd=work, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "dcgmi diag -r 2 -p pcie.gpu_nvlinks_expected_up=18" in (tmp_path / "calls.log").read_text()
    report = build_report(work / "logs")
    (node,) = report.nodes
    assert (node["host"], node["gpus"], node["efa_fi_info"], node["fi_info_rc"], node["dcgm_rc"]) == ("ip-10-1-0-11", 8, 32, 0, 0)
    assert report.dcgm[0]["tests"] == {"software": "Pass", "memory": "Pass", "pcie": "Pass"}
    assert node["health"].startswith("unknown: no /var/lib/fmcluster/health and no passwordless sudo")
    # This machine has no EFA devices in /sys/class/infiniband: the report says so and fails.
    if not Path("/sys/class/infiniband").exists():
        assert any("/sys/class/infiniband (efa driver) shows 0 EFA devices" in f.message for f in report.findings)
    domain = subprocess.run(["bash", str(work / "gpu/node-checks.sh"), "domain"], check=True, cwd=work, env=env,
                            capture_output=True, text=True, timeout=60)
    assert domain.stdout == "none ip-10-1-0-11\n"


COVERAGE_PROJECT = """\
name: cov
availability_zone_id: use1-az6
compute_groups:
  - name: train
    instance_type: p5.48xlarge
    count: 2
orchestrator: {type: parallelcluster}
"""


def test_the_report_fails_for_every_node_and_run_the_rendered_jobs_promised_but_left_no_log(tmp_path: Path):
    out = tmp_path / "acceptance"
    render_acceptance(make_plan(config.parse(COVERAGE_PROJECT).project).cluster, out)
    fixture = Path(__file__).parent / "fixtures/p5-pair/logs"
    for log in fixture.iterdir():
        shutil.copy(log, out / "logs" / log.name)

    def failed() -> list[str]:
        return sorted(f"{f.file}: {f.message}" for f in build_report(out).findings if f.level == "fail")

    # The fixture has the node checks, both nodes' dcgmi diag and the one pair, but no run across the group
    # and no build log of the setup job.
    assert failed() == ["group train: group all_gather_perf: 0 of 1 run(s) left a log: submit nccl.sbatch (again)",
                        "group train: group all_reduce_perf: 0 of 1 run(s) left a log: submit nccl.sbatch (again)",
                        "group train: no nccl-tests build log: submit setup-nccl-tests.sbatch first (the other jobs "
                        "run what it builds)"]
    (out / "logs/setup-nccl-tests-train-1.log").write_text(
        "FMC-ACCEPTANCE kind=build test=nccl-tests group=train instance_type=p5.48xlarge version=v2.19.6 hosts=a\n"
        "fmc-setup: reused: nccl-tests/train/build already holds this build\nFMC-END rc=0\n")
    # The pair's log doubles as the group run (2 nodes: the pair is the group) -- then only a missing node is left.
    for test in ("all_reduce_perf", "all_gather_perf"):
        text = (fixture / "nccl-train-pair-1.log").read_text().replace("scope=pair", "scope=group")
        (out / "logs" / f"nccl-train-group-{test}.log").write_text(text.replace("all_reduce_perf", test))
    assert failed() == []
    (out / "logs/dcgm-ip-10-1-0-12.log").unlink()
    assert failed() == ["group train: dcgmi diag from 1 of 2 nodes: submit node-checks.sbatch (again) and look for "
                        "the missing nodes' logs"]
    # Without the manifest, the report says it cannot tell.
    (out / "acceptance.json").unlink()
    report = build_report(out)
    assert not report.failed
    assert any("no acceptance.json" in f.message for f in report.findings if f.level == "note")
