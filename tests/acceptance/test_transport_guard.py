"""The acceptance jobs fail themselves, loudly, when NCCL on an EFA instance ran over sockets or its InfiniBand
transport instead of aws-ofi-nccl: `nccl_transport_check` (templates/acceptance/common.sh.j2) on the fixture logs
of tests/acceptance/fixtures/transport/README.md, and the rendered jobs calling it after their runs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from fmcluster.bootstrap.acceptance import render_acceptance
from support.sandbox import make_project

from fmcluster.plan import make_plan

FIXTURES = Path(__file__).parent / "fixtures"
GOOD = FIXTURES / "p5-pair/logs/nccl-train-pair-1.log"


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for name, itype, orch in (("pc", "p5.48xlarge", "parallelcluster"), ("none", "p5.48xlarge", "none")):
        target = tmp_path_factory.mktemp(name)
        render_acceptance(make_plan(make_project(itype, "ubuntu-22.04", orch)).cluster, target)
        out[name] = target
    return out


def _function(script: Path) -> str:
    """The rendered check and the EFA device count it reads, from the job script itself."""
    text = script.read_text()
    start = text.index("FMC_EFA_DEVICES=")
    body = text[text.index("nccl_transport_check() {"):]
    return text[start:text.index("\n", start) + 1] + body[:body.index("\n}\n") + 3]


def _check(jobs, *logs: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    code = _function(jobs["pc"] / "gpu/nccl.sbatch") + 'nccl_transport_check "$@"\n'
    return subprocess.run(["bash", "-c", code, "_", *map(str, logs)], capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin"} | (env or {}))


@pytest.mark.parametrize("log", [GOOD, FIXTURES / "gb200/logs/nccl-nvl72-in-domain-all_reduce_perf.log",
                                 FIXTURES / "transport/aws-libfabric.log"],
                         ids=["p5", "gb200-in-domain", "aws-libfabric"])
def test_efa_through_aws_ofi_nccl_passes(jobs, log):
    proc = _check(jobs, log)
    assert proc.returncode == 0 and proc.stderr == ""


@pytest.mark.parametrize("log, reason", [
    (FIXTURES / "p6-b200-socket/logs/nccl-train-all_reduce_perf.log", "NCCL fell back to sockets, not EFA"),
    (FIXTURES / "transport/path-2.27.3.log", "NCCL fell back to sockets, not EFA (NET/Plugin: Could not find: "
                                             "libnccl-net-/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so.so. )"),
    (FIXTURES / "transport/ib-p6-b200.log", "NCCL used its InfiniBand transport"),
    (FIXTURES / "transport/tcp-provider.log", "aws-ofi-nccl did not select libfabric's efa provider"),
    (FIXTURES / "transport/no-info.log", "no NCCL_DEBUG=INFO lines"),
], ids=["socket", "path-2.27.3", "ib", "tcp-provider", "no-info"])
def test_each_fallback_fails_with_one_line_naming_the_log(jobs, log, reason):
    proc = _check(jobs, GOOD, log, env={"NCCL_NET_PLUGIN": "ofi"})
    assert proc.returncode == 1
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"fmcluster acceptance: {log}: {reason}") and line.endswith("NCCL_NET_PLUGIN=ofi"), line


SRUN = r"""#!/bin/bash
for a in "$@"; do
  case "$a" in
    --help) echo "Usage: srun [OPTIONS...] executable"; exit 0 ;;
    test) exit 0 ;;
    */all_reduce_perf|*/all_gather_perf) grep -v '^FMC-' "${NCCL_OUTPUT}"; exit 0 ;;
  esac
done
"""


@pytest.mark.parametrize("job", ["nccl.sbatch", "nccl-pairs.sbatch"])
@pytest.mark.parametrize("output, rc", [(GOOD, 0), (FIXTURES / "transport/path-2.27.3.log", 1)], ids=["efa", "sockets"])
def test_a_slurm_job_that_ran_over_sockets_fails(jobs, tmp_path, job, output, rc):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(SRUN)
    (bin_dir / "scontrol").write_text("#!/bin/bash\nprintf '%s\\n' ip-10-1-0-11 ip-10-1-0-12\n")
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    work = tmp_path / "acceptance"
    shutil.copytree(jobs["pc"], work)
    proc = subprocess.run(["bash", str(work / "gpu" / job)], cwd=work, capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "NCCL_OUTPUT": str(output), "HOME": str(tmp_path),
                               "SLURM_JOB_NODELIST": "ip-10-1-0-[11-12]", "SLURM_JOB_ID": "4242",
                               "SLURM_SUBMIT_DIR": str(work)})
    assert proc.returncode == rc, proc.stderr
    if rc:
        assert "NCCL fell back to sockets, not EFA" in proc.stderr
        assert "fmcluster acceptance: NCCL did not use EFA through aws-ofi-nccl in the runs above" in proc.stderr


MPIRUN = r"""#!/bin/bash
printf '%s\n' "$*" >>"${SANDBOX}/mpirun.args"
grep -v '^FMC-' "${NCCL_OUTPUT}"
"""


@pytest.mark.parametrize("output, rc", [(GOOD, 0), (FIXTURES / "transport/ib-p6-b200.log", 1)], ids=["efa", "ib"])
def test_the_mpirun_job_passes_the_plugin_to_every_rank_and_fails_on_a_fallback(jobs, tmp_path, output, rc):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mpirun").write_text(MPIRUN)
    (bin_dir / "mpirun").chmod(0o755)
    work = tmp_path / "acceptance"
    shutil.copytree(jobs["none"], work)
    tests_dir = tmp_path / "nccl-tests"
    tests_dir.mkdir()
    for test in ("all_reduce_perf", "all_gather_perf"):
        (tests_dir / test).write_text("#!/bin/true\n")
        (tests_dir / test).chmod(0o755)
    (tmp_path / "hosts").write_text("ip-10-1-0-11\nip-10-1-0-12\n")
    proc = subprocess.run(["bash", str(work / "gpu/nccl-mpirun.sh"), "group", str(tmp_path / "hosts")], cwd=work,
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "NCCL_OUTPUT": str(output), "HOME": str(tmp_path),
                               "SANDBOX": str(tmp_path), "FMC_NCCL_TESTS_DIR": str(tests_dir),
                               "NCCL_NET_PLUGIN": "ofi"})
    assert proc.returncode == rc, proc.stderr
    args = (tmp_path / "mpirun.args").read_text().splitlines()
    assert args and all("-x NCCL_NET_PLUGIN" in a for a in args)
    if rc:
        assert "NCCL used its InfiniBand transport" in proc.stderr
