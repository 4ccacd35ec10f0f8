"""The setup job that builds nccl-tests (issue 24, item 11), end to end under stub commands: it finds the node's
CUDA, NCCL and MPI, clones the pinned tag and accepts only the pinned commit, runs make with MPI=1, installs the
binaries in the rendered folder; the NCCL jobs then run those binaries, and `acceptance report` reads the
build's log like the others (a failed build fails the report, naming the log)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from fmcluster.bootstrap.acceptance import render_acceptance
from fmcluster.bootstrap.versions import load_versions
from support import ROOT

from fmcluster import config
from fmcluster.acceptance import build_report, to_text
from fmcluster.plan import make_plan

FIXTURES = Path(__file__).parent / "fixtures"
PINNED = load_versions().nccl_tests
NCCL_PIN = load_versions().nccl_source

STUBS = {
    # git clone ... --branch TAG REPO DIR makes DIR; git -C DIR rev-parse HEAD says GIT_HEAD (default: the pin),
    # or NCCL_GIT_HEAD for the NCCL source (DIR .../nccl/src)
    "git": r'''printf 'git %s\n' "$*" >>"${SANDBOX}/calls.log"
if [[ "$1" == clone ]]; then mkdir -p "${@: -1}"; exit 0; fi
if [[ "$1" == -C && "$3" == rev-parse && "$2" == */nccl/src ]]; then printf '%s\n' "${NCCL_GIT_HEAD}"; exit 0; fi
if [[ "$1" == -C && "$3" == rev-parse ]]; then printf '%s\n' "${GIT_HEAD}"; exit 0; fi
exit 2''',
    # make ... BUILDDIR=D makes D/all_reduce_perf and D/all_gather_perf (scripts that print a real log)
    "make": r'''printf 'make %s\n' "$*" >>"${SANDBOX}/calls.log"
for a in "$@"; do [[ "$a" == BUILDDIR=* ]] && dir=${a#BUILDDIR=}; done
mkdir -p "${dir}"
if [[ " $* " == *" src.build "* ]]; then  # NVIDIA/nccl: headers and library
  mkdir -p "${dir}/include" "${dir}/lib" && : >"${dir}/include/nccl.h" && : >"${dir}/lib/libnccl.so.2"; exit 0
fi
for t in all_reduce_perf all_gather_perf; do
  printf '#!/bin/bash\ngrep -v "^FMC-" "${SANDBOX}/nccl-output.log"\n' >"${dir}/${t}"; chmod +x "${dir}/${t}"
done''',
    "nvidia-smi": 'echo "9.0"',
    "ldd": 'echo "libnccl.so.2 => ${NCCL_HOME}/lib/libnccl.so.2"',
    "hostname": "echo ip-10-1-0-11",
    "scontrol": "printf '%s\\n' ip-10-1-0-11 ip-10-1-0-12",
    # srun: `test -x PATH` for real; a binary runs for real, with the LD_LIBRARY_PATH it got recorded
    "srun": r'''printf 'srun %s LD_LIBRARY_PATH=%s\n' "$*" "${LD_LIBRARY_PATH:-}" >>"${SANDBOX}/calls.log"
args=("$@")
for i in "${!args[@]}"; do
  case "${args[i]}" in
    --help) echo "Usage: srun"; exit 0 ;;
    test) exec "${args[@]:i}" ;;
    */all_reduce_perf|*/all_gather_perf) exec "${args[i]}" ;;
  esac
done''',
}


@pytest.fixture
def node(tmp_path: Path) -> dict[str, str]:
    """A node with CUDA, NCCL and the EFA installer's Open MPI where a real image has them (here: under tmp)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in STUBS.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    for home, files in (("cuda", ["bin/nvcc", "lib64/libcudart.so"]), ("nccl", ["include/nccl.h", "lib/libnccl.so.2"]),
                        ("openmpi5", ["include/mpi.h", "lib/libmpi.so"])):
        for f in files:
            (tmp_path / home / f).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / home / f).write_text("")
    (tmp_path / "cuda/bin/nvcc").chmod(0o755)
    shutil.copy(FIXTURES / "p5-pair/logs/nccl-train-pair-1.log", tmp_path / "nccl-output.log")
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "SANDBOX": str(tmp_path), "HOME": str(tmp_path),
            "CUDA_HOME": str(tmp_path / "cuda"), "NCCL_HOME": str(tmp_path / "nccl"), "MPI_HOME": str(tmp_path / "openmpi5"),
            "GIT_HEAD": PINNED.commit, "NCCL_GIT_HEAD": NCCL_PIN.commit, "SLURM_JOB_NODELIST": "ip-10-1-0-[11-12]", "SLURM_JOB_ID": "7"}


def _rendered(tmp_path: Path, example: str = "p5-parallelcluster") -> Path:
    work = tmp_path / "acceptance"
    render_acceptance(make_plan(config.load(ROOT / "examples" / f"{example}.yaml").project).cluster, work)
    return work


def _run(work: Path, script: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(work / script), *args], check=False, cwd=work,
                          env=env | {"SLURM_SUBMIT_DIR": str(work)}, capture_output=True, text=True, timeout=120)


def _calls(tmp_path: Path, tool: str) -> list[str]:
    path = tmp_path / "calls.log"
    return [c for c in path.read_text().splitlines() if c.startswith(tool + " ")] if path.exists() else []


def test_setup_builds_the_pinned_release_and_the_nccl_job_runs_it(tmp_path: Path, node: dict[str, str]) -> None:
    work = _rendered(tmp_path)
    setup = _run(work, "gpu/setup-nccl-tests.sbatch", node)
    assert setup.returncode == 0, setup.stderr
    [clone] = [c for c in _calls(tmp_path, "git") if " clone " in c]
    assert f"--branch {PINNED.version} {PINNED.repository}" in clone
    [make] = _calls(tmp_path, "make")
    for arg in ("MPI=1", f"MPI_HOME={tmp_path}/openmpi5", f"CUDA_HOME={tmp_path}/cuda", f"NCCL_HOME={tmp_path}/nccl",
                f"BUILDDIR={work}/nccl-tests/gpu/build.new", "NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90"):
        assert arg in make.split(), arg
    built = work / "nccl-tests/gpu/build"
    assert (built / "all_reduce_perf").is_file() and not (work / "nccl-tests/gpu/build.new").exists()
    env_file = (built / "fmc-nccl-tests.env").read_text()
    assert f"{tmp_path}/openmpi5/lib" in env_file and f"{tmp_path}/nccl/lib" in env_file

    # Again: the same stamp, so nothing is cloned or built twice.
    again = _run(work, "gpu/setup-nccl-tests.sbatch", node | {"SLURM_JOB_ID": "8"})
    assert again.returncode == 0 and len(_calls(tmp_path, "make")) == 1
    assert "reused:" in (work / "logs/setup-nccl-tests-gpu-8.log").read_text()

    # The group job finds the binaries where the setup job put them, with the build's library folders.
    nccl = _run(work, "gpu/nccl.sbatch", node)
    assert nccl.returncode == 0, nccl.stderr
    runs = [c for c in _calls(tmp_path, "srun") if "/all_reduce_perf -b 8" in c]
    assert runs and all(f"{built}/all_reduce_perf" in c and f"{tmp_path}/openmpi5/lib" in c for c in runs)

    report = build_report(work)
    assert [(b["group"], b["version"], b["rc"]) for b in report.builds] == [("gpu", PINNED.version, 0)] * 2
    assert not [f for f in report.findings if "build" in f.message]
    assert len([r for r in report.runs if r["scope"] == "group"]) == 2  # all_reduce and all_gather, both ran
    assert f"nccl-tests {PINNED.version} build, group gpu on ip-10-1-0-11: ok" in to_text(report)


def test_another_commit_at_the_tag_is_refused_and_fails_the_report(tmp_path: Path, node: dict[str, str]) -> None:
    work = _rendered(tmp_path)
    setup = _run(work, "gpu/setup-nccl-tests.sbatch", node | {"GIT_HEAD": "0" * 40})
    assert setup.returncode == 1
    assert f"the nccl-tests build failed: see {work}/logs/setup-nccl-tests-gpu-7.log" in setup.stderr
    assert not _calls(tmp_path, "make") and not (work / "nccl-tests/gpu/build").exists()
    [failure] = [f for f in build_report(work).findings if f.file == "logs/setup-nccl-tests-gpu-7.log"]
    assert failure.level == "fail" and failure.message.startswith("the nccl-tests build failed (rc=1)")
    assert "not the pinned" in failure.message and "refusing to build it" in failure.message


def test_a_node_without_nccl_headers_builds_the_pinned_nccl_first(tmp_path: Path, node: dict[str, str]) -> None:
    """ParallelCluster 3.16 images ship no NCCL headers (FACTS.md section 4): the job builds NVIDIA/nccl at its pin
    and nccl-tests against that build, and reuses both when run again."""
    work = _rendered(tmp_path)
    shutil.rmtree(tmp_path / "nccl")
    env = {k: v for k, v in node.items() if k != "NCCL_HOME"}
    setup = _run(work, "gpu/setup-nccl-tests.sbatch", env)
    assert setup.returncode == 0, setup.stderr
    clones = [c for c in _calls(tmp_path, "git") if " clone " in c]
    assert f"--branch {NCCL_PIN.version} {NCCL_PIN.repository} {work}/nccl-tests/gpu/nccl/src" in clones[0]
    nccl_make, tests_make = _calls(tmp_path, "make")
    home = f"{work}/nccl-tests/gpu/nccl/build"
    for arg in ("src.build", f"CUDA_HOME={tmp_path}/cuda", f"BUILDDIR={home}",
                "NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90"):
        assert arg in nccl_make.split(), arg
    assert f"NCCL_HOME={home}" in tests_make.split()
    assert f"{home}/lib" in (work / "nccl-tests/gpu/build/fmc-nccl-tests.env").read_text()
    assert _run(work, "gpu/setup-nccl-tests.sbatch", env | {"SLURM_JOB_ID": "8"}).returncode == 0
    assert len(_calls(tmp_path, "make")) == 2  # nothing built twice


def test_another_nccl_commit_at_its_tag_is_refused(tmp_path: Path, node: dict[str, str]) -> None:
    work = _rendered(tmp_path)
    shutil.rmtree(tmp_path / "nccl")
    env = {k: v for k, v in node.items() if k != "NCCL_HOME"} | {"NCCL_GIT_HEAD": "0" * 40}
    assert _run(work, "gpu/setup-nccl-tests.sbatch", env).returncode == 1
    assert not _calls(tmp_path, "make")
    [failure] = [f for f in build_report(work).findings if f.file.startswith("logs/setup-")]
    assert f"of {NCCL_PIN.repository} is commit {'0' * 40}, not the pinned {NCCL_PIN.commit}" in failure.message


def test_self_managed_nodes_get_a_setup_script_and_mpirun_uses_its_build(tmp_path: Path, node: dict[str, str]) -> None:
    work = _rendered(tmp_path, "p5-odcr")
    setup = _run(work, "train/setup-nccl-tests.sh", node)
    assert setup.returncode == 0, setup.stderr
    assert (work / "nccl-tests/train/build/all_gather_perf").is_file()
    mpirun = (work / "train/nccl-mpirun.sh").read_text()
    assert 'FMC_NCCL_TESTS_DIR="${FMC_NCCL_TESTS_DIR:-${FMC_DIR}/nccl-tests/${FMC_GROUP}/build}"' in mpirun


@pytest.mark.parametrize("option", [{"image": "/fsx/nccl.sqsh"}, {"nccl_tests_dir": "/opt/nccl-tests/build"}])
def test_an_image_or_a_given_folder_needs_no_setup_job(tmp_path: Path, option: dict[str, str]) -> None:
    work = tmp_path / "acceptance"
    render_acceptance(make_plan(config.load(ROOT / "examples" / "p5-parallelcluster.yaml").project).cluster, work,
                      **option)
    assert not list(work.rglob("setup-nccl-tests.*"))
    assert "setup" not in (work / "README.md").read_text()
    if "nccl_tests_dir" in option:
        assert 'FMC_NCCL_TESTS_DIR="${FMC_NCCL_TESTS_DIR:-/opt/nccl-tests/build}"' in (work / "gpu/nccl.sbatch").read_text()


def test_the_readme_submits_the_setup_job_first_and_the_nccl_jobs_after_it(tmp_path: Path) -> None:
    readme = (_rendered(tmp_path) / "README.md").read_text()
    lines = readme.split("```")[1].strip().splitlines()
    assert lines[0].startswith("setup=$(sbatch --parsable gpu/setup-nccl-tests.sbatch)")
    assert "sbatch gpu/node-checks.sbatch" in lines  # needs no nccl-tests: not held back by a failed build
    assert "sbatch --dependency=afterok:${setup} gpu/nccl.sbatch" in lines
