"""`fmcluster acceptance first-job`: the first training job of every Slurm example, linted by the real shellcheck and
ruff, asking Slurm for the group's nodes, and run for real: the rendered batch script, under stub srun/scontrol that
run their command here, starts torchrun with 2 CPU processes (gloo), trains with FSDP, checkpoints and resumes."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fmcluster.bootstrap.context import context_for
from fmcluster.bootstrap.enroot import enroot_reference
from fmcluster.bootstrap.first_job import WORK_DIR_NAME, render_first_job
from fmcluster.bootstrap.render import render_files
from support import ALL_FILES, ROOT, group_nodes, team_account
from support import enroot as enroot_support
from support import shellcheck
from support.enroot import docker_meaning
from typer.testing import CliRunner

from fmcluster import catalog, config, orchestrators
from fmcluster.cli import app as cli_app
from fmcluster.plan import make_plan
from fmcluster.templates.acceptance import first_job_flops as flops

VERSIONS = yaml.safe_load((ROOT / "bootstrap/versions.yaml").read_text())["first_job_image"]
@functools.cache
def slurm_examples() -> dict[str, Path]:
    """The examples whose first job is a Slurm batch script (Kubernetes' PyTorchJob: tests/kubernetes/test_render.py);
    read on first use, not by every test worker at collection (every example loaded: ~1 s)."""
    return {p.stem: p for p in ALL_FILES
            if orchestrators.ORCHESTRATORS[config.load(str(p)).project.orchestrator.type].slurm}
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, tuple[Path, object, object]]:
    out = {}
    for name, path in slurm_examples().items():
        project = config.load(str(path)).project
        cluster = make_plan(project).cluster
        target = tmp_path_factory.mktemp(name)
        render_first_job(cluster, target, account=team_account(cluster))
        out[name] = (target, project, cluster)
    return out


def sbatch_options(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) or "" for line in text.splitlines()
            if (m := re.match(r"^#SBATCH --([a-z-]+)(?:=(.*))?$", line))}


def test_the_folders_slurm_writes_into_survive_an_s3_sync(rendered):
    """`aws s3 sync` copies files, not empty folders; Slurm opens --output=logs/... before the script runs."""
    for name, (target, *_) in rendered.items():
        for script in (target / "first-job").glob("*.sbatch"):
            output = sbatch_options(script.read_text())["output"]
            assert any((target / output).parent.glob("*")), (name, output)


def test_every_slurm_orchestrator_has_examples():
    kinds = {config.load(str(p)).project.orchestrator.type for p in slurm_examples().values()}
    assert kinds == {"parallelcluster", "hyperpod", "pcs"}


def test_the_batch_scripts_pass_shellcheck(rendered):
    scripts = sorted(p for target, *_ in rendered.values() for p in (target / "first-job").glob("*.sbatch"))
    assert len(scripts) >= len(rendered)
    linted = shellcheck.lint(scripts, "--norc")  # each distinct script once (support/shellcheck.py)
    assert linted.returncode == 0, linted.stdout[:4000] + linted.stderr[:2000]


def test_the_python_compiles_and_passes_ruff(tmp_path):
    files = [ROOT / "templates/acceptance" / n for n in ("first_job_train.py", "first_job_flops.py")]
    for f in files:
        compile(f.read_text(), str(f), "exec")
    proc = subprocess.run([str(BIN / "ruff"), "check", "--no-cache", "--isolated", "--line-length", "120",
                           "--target-version", "py311", "--select", "E,F,W,B,UP,N,PLE,PLW,RUF", *map(str, files)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout


def test_each_group_gets_all_its_nodes_one_torchrun_each_and_every_gpu(rendered):
    for name, (target, project, cluster) in rendered.items():
        for group in project.compute_groups:
            itype = catalog.get(group.instance_type)
            text = (target / "first-job" / f"{group.name}.sbatch").read_text()
            opts = sbatch_options(text)
            count, account = group_nodes(project, cluster, group)
            assert opts["nodes"] == str(count) and opts.get("account") == account, name
            assert opts["ntasks-per-node"] == "1", name  # torchrun starts the per-GPU processes
            assert "exclusive" in opts
            # ParallelCluster's nodes carry Gres=gpu, PCS autodetects GPUs; HyperPod's jobs ask for whole nodes only
            if project.orchestrator.type in ("parallelcluster", "pcs"):
                assert opts["gpus-per-node"] == str(itype.gpus), name
            else:
                assert "gpus-per-node" not in opts, name
            assert f'FMC_NPROC_PER_NODE="${{FMC_NPROC_PER_NODE:-{itype.gpus}}}"' in text
            arch = {"x86_64": "x86_64", "arm64": "aarch64"}[itype.architecture]
            # PCS runs slurmd configless from a controller whose plugstack has no pyxis (FACTS.md section 5): no
            # containers there, the nodes' own torchrun
            image = "" if project.orchestrator.type == "pcs" else enroot_reference(VERSIONS[arch])
            assert f'FMC_IMAGE="${{FMC_IMAGE-{image}}}"' in text, name
            assert f"--peak-tflops-per-gpu {itype.bf16_dense_pflops_per_gpu * 1000:g} " in text, name
            assert f'FMC_WORK_DIR="${{FMC_WORK_DIR:-{project.storage.fsx.mount_path}/{WORK_DIR_NAME}}}"' in text


def test_the_job_carries_the_bundles_nccl_profile_and_nccl_debug(rendered):
    for name, (target, project, cluster) in rendered.items():
        for group in project.compute_groups:
            ctx = context_for(cluster, group.name, "compute", cluster.driver.flavour)
            step = render_files(ctx)["steps/50-nccl-env.sh"]
            profile = step.split("<<'PROFILE'\n", 1)[1].split("\nPROFILE\n", 1)[0] + "\n"
            text = (target / "first-job" / f"{group.name}.sbatch").read_text()
            inside = text.split("# --- begin fmcluster-nccl.sh ---\n", 1)[1].split("# --- end fmcluster-nccl.sh ---")[0]
            assert inside == profile, name
            assert "\nexport NCCL_DEBUG=INFO\n" in text


# --- the FLOPs arithmetic ---------------------------------------------------------------------------------------

def test_flops_of_a_small_shape_counted_by_hand():
    shape = flops.ModelShape(vocab=512, d_model=64, layers=2, heads=4, seq_len=128)
    # per block: QKV 64 x 192 + out 64 x 64 + MLP 64 x 256 x 2 = 12288 + 4096 + 32768 = 49152; head 64 x 512 = 32768
    assert flops.matmul_params(shape) == 2 * 49152 + 32768
    # attention: 12 x 2 layers x 64 (= 4 heads x 16) x 128 tokens
    assert flops.attention_flops_per_token(shape) == 196608
    assert flops.flops_per_token(shape) == 6 * 131072 + 196608
    # embeddings 512 x 64 + 128 x 64, norms (2 x 2 + 1) x 64
    assert flops.total_params(shape) == 131072 + 32768 + 8192 + 320


def test_mfu_is_model_flops_over_the_gpus_peak():
    # 16 p5 GPUs at 989.5 TFLOPS; 1 GFLOP per token at 6.3328 M tokens/s is 6332.8 TFLOPS, 40% of 15832 TFLOPS
    peak = catalog.get("p5.48xlarge").bf16_dense_pflops_per_gpu * 1e15
    assert flops.mfu(6.3328e6, 1e9, 16, peak) == pytest.approx(0.4)
    with pytest.raises(ValueError):
        flops.mfu(1.0, 1.0, 0, peak)


@pytest.mark.parametrize("bad", [{"heads": 3}, {"layers": 0}, {"vocab": 1.5}])
def test_a_bad_shape_is_refused(bad):
    with pytest.raises(ValueError):
        flops.ModelShape(**({"vocab": 512, "d_model": 64, "layers": 2, "heads": 4, "seq_len": 128} | bad))


@pytest.fixture(scope="module")
def train():
    """The training script, imported in this process (once: torch's import is most of what these tests cost)."""
    sys.path.insert(0, str(ROOT / "templates/acceptance"))
    try:
        import first_job_train
    finally:
        sys.path.pop(0)
    return first_job_train


def test_the_counted_parameters_are_the_models(train):
    """The training script's own model, built with torch: its matrix-multiply weights are N, all of it the total."""
    import torch

    shape = flops.ModelShape(vocab=300, d_model=48, layers=3, heads=6, seq_len=40, ffn_mult=3)
    model = train.Model(shape)
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert linear == flops.matmul_params(shape)
    assert sum(p.numel() for p in model.parameters()) == flops.total_params(shape)


@pytest.mark.parametrize("bad", [["--steps", "0"], ["--log-every", "0"], ["--micro-batch", "0"],
                                 ["--warmup-steps", "-1"]], ids=lambda bad: bad[0])
def test_the_training_refuses_what_it_cannot_run(train, bad: list[str], capsys):
    """A training that cannot run exits non-zero at once, saying why (argparse's exit 2): the job then fails naming
    its log (test_a_failed_training_fails_the_job_naming_its_log)."""
    with pytest.raises(SystemExit) as refused:
        train.main(["--data-dir", "d", "--checkpoint-dir", "c", *TINY.split(), *bad])
    assert refused.value.code == 2
    assert "--steps, --log-every and --micro-batch must be at least 1" in capsys.readouterr().err


# --- the job, run -----------------------------------------------------------------------------------------------

SRUN = r"""#!/bin/bash
printf 'srun %s\n' "$*" >>"${SANDBOX}/calls.log"
if [[ "$1" == --help ]]; then
  echo "Usage: srun [OPTIONS...] executable"
  [[ -e "${SANDBOX}/pyxis" ]] && echo "      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH"
  exit 0
fi
while [[ "$1" == --* ]]; do
  if [[ "$1" == --container-image=* ]]; then  # what pyxis asks enroot 3.4.1 to pull (support.enroot)
    pull=$(bash "${ENROOT_PARSE}" "${1#--container-image=}") || exit 1
    printf 'enroot %s\n' "${pull}" >>"${SANDBOX}/calls.log"
  fi
  shift
done
exec "$@"
"""
TINY = "--vocab 256 --d-model 32 --layers 2 --heads 4 --seq-len 16 --micro-batch 2 --sequences 32 --log-every 2"


def _sandbox(tmp_path: Path, rendered, pyxis: bool = True, example: str = "p5-parallelcluster",
             ) -> tuple[Path, dict[str, str]]:
    target, *_ = rendered[example]
    work = tmp_path / "acceptance"
    shutil.copytree(target, work)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(SRUN)
    (bin_dir / "scontrol").write_text("#!/bin/bash\necho localhost\n")
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    if pyxis:
        (tmp_path / "pyxis").touch()
    env = {"PATH": f"{bin_dir}:{BIN}:/usr/bin:/bin", "SANDBOX": str(tmp_path), "HOME": str(tmp_path),
           "SLURM_JOB_NODELIST": "localhost", "SLURM_SUBMIT_DIR": str(work), "FMC_WORK_DIR": str(tmp_path / "fsx"),
           "FMC_NPROC_PER_NODE": "2", "FMC_STEPS": "4", "FMC_TRAIN_ARGS": TINY, "GLOO_SOCKET_IFNAME": "lo",
           "FMC_NCCL_CHECK": "0",  # gloo on CPUs: no NCCL lines (the check has its own test)
           "OMP_NUM_THREADS": "1", "TMPDIR": str(tmp_path), "ENROOT_PARSE": str(enroot_support.PARSER)}
    return work, env


def _submit(work: Path, env: dict[str, str], job_id: int) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(work / "first-job/gpu.sbatch")], cwd=work,
                          env=env | {"SLURM_JOB_ID": str(job_id)}, capture_output=True, text=True, timeout=400)


def _result(text: str) -> dict[str, str]:
    line = next(line for line in text.splitlines() if line.startswith("FMC-FIRST-JOB "))
    return dict(token.split("=", 1) for token in line.split()[1:])


def test_the_job_trains_with_fsdp_checkpoints_to_the_work_dir_and_resumes(rendered, tmp_path: Path):
    work, env = _sandbox(tmp_path, rendered)
    job_id = 1000 + os.getpid() % 9000
    proc = _submit(work, env, job_id)
    log = work / f"first-job/logs/train-gpu-{job_id}.txt"
    assert proc.returncode == 0, proc.stderr[-3000:] + (log.read_text()[-3000:] if log.exists() else "")

    # srun: one task per node, in the pinned container, the job's folders mounted at their own paths
    launch = [line for line in (tmp_path / "calls.log").read_text().splitlines() if "torchrun" in line][0]
    assert f"--container-image={enroot_reference(VERSIONS['x86_64'])}" in launch
    pulled = [line for line in (tmp_path / "calls.log").read_text().splitlines() if line.startswith("enroot ")]
    assert pulled[0] == "enroot " + " ".join(f"{k}={v}" for k, v in docker_meaning(VERSIONS["x86_64"]).items())
    assert f"--container-mounts={work}:{work},{tmp_path / 'fsx'}:{tmp_path / 'fsx'}" in launch
    assert "--nodes=1 --ntasks-per-node=1" in launch and "--nproc-per-node=2" in launch

    text = log.read_text()
    result = _result(text)
    shape = flops.ModelShape(vocab=256, d_model=32, layers=2, heads=4, seq_len=16)
    assert int(result["params"]) == flops.total_params(shape)
    assert int(result["flops_per_token"]) == flops.flops_per_token(shape)
    assert (result["gpus"], result["first_step"], result["last_step"]) == ("2", "1", "4")
    # the MFU it printed is tokens/s x FLOPs per token over 2 x the catalog's p5 peak
    peak = catalog.get("p5.48xlarge").bf16_dense_pflops_per_gpu * 1e15
    expected = flops.mfu(float(result["tokens_per_s"]), flops.flops_per_token(shape), 2, peak)
    assert float(result["mfu"]) == pytest.approx(expected, rel=0.01)
    step_line = re.search(r"^fmc-first-job step 4/4 loss [0-9.]+ step [0-9.]+ s tokens/s [0-9,]+ \([0-9,]+ per GPU\) "
                          r"MFU [0-9.]+% of 989\.5 TFLOPS BF16 dense per GPU \(p5\.48xlarge, 2 GPUs\)$", text, re.M)
    assert step_line, text[-2000:]
    assert "fmc-first-job step 4/4" in proc.stdout  # the job's own output repeats the lines the user looks for
    data = list((tmp_path / "fsx/data").glob("tokens-*.pt"))
    assert len(data) == 1
    assert (tmp_path / f"fsx/checkpoints/{shape.tag}/step-0000004/done.json").is_file()

    # a second submission resumes from step 4
    proc = _submit(work, env, job_id + 1)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = (work / f"first-job/logs/train-gpu-{job_id + 1}.txt").read_text()
    assert "fmc-first-job resumed from step 4 (" in text
    assert (_result(text)["first_step"], _result(text)["last_step"]) == ("5", "8")


def test_a_slurm_without_pyxis_fails_with_what_to_do(rendered, tmp_path: Path):
    work, env = _sandbox(tmp_path, rendered, pyxis=False)
    proc = _submit(work, env, 77)
    assert proc.returncode == 1
    assert "this Slurm has no pyxis (srun --container-image); set FMC_IMAGE=" in proc.stderr


STUB_FAILING_TORCHRUN = """#!/bin/bash
printf 'torchrun %s\\n' "$*" >>"${SANDBOX}/calls.log"
echo "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: first_job_train.py FAILED (exitcode: 2)" >&2
exit 1
"""
"""torchrun when its worker fails (the training refused its arguments: test_the_training_refuses_what_it_cannot_run):
its error, exit 1."""


def test_a_failed_training_fails_the_job_naming_its_log(rendered, tmp_path: Path):
    work, env = _sandbox(tmp_path, rendered)
    stub = tmp_path / "bin/torchrun-failing"
    stub.write_text(STUB_FAILING_TORCHRUN)
    stub.chmod(0o755)
    proc = _submit(work, env | {"FMC_IMAGE": "", "FMC_TORCHRUN": str(stub), "FMC_TRAIN_ARGS": TINY + " --steps 0",
                                "FMC_NPROC_PER_NODE": "1"}, 78)
    assert proc.returncode == 1
    log = re.escape(f"{work}/first-job/logs/train-gpu-78.txt")
    assert re.search(rf"training exited [1-9][0-9]*: see {log}", proc.stderr), proc.stderr
    assert "ChildFailedError" in (work / "first-job/logs/train-gpu-78.txt").read_text()  # the log it names has it
    calls = (tmp_path / "calls.log").read_text()
    assert "--container-image" not in calls  # FMC_IMAGE= : the nodes' own torchrun
    assert "first_job_train.py" in calls and "--steps 0" in calls, calls  # the training, with the job's arguments


def test_without_containers_and_torchrun_the_job_says_how_to_make_one(rendered, tmp_path: Path):
    work, env = _sandbox(tmp_path, rendered, example="p5-pcs")
    proc = _submit(work, env | {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}, 79)
    assert proc.returncode == 1
    assert (f"no torchrun on this node and no container (FMC_IMAGE): put PyTorch on shared storage, e.g. python3 -m "
            f"venv {tmp_path / 'fsx'}/venv") in proc.stderr
    assert not (tmp_path / "calls.log").exists()  # it stopped before srun


STUB_TORCHRUN = """#!/bin/bash
cat "${FIXTURE}"
echo "FMC-FIRST-JOB steps=50 mfu=0.3"
"""
TRANSPORT = ROOT / "tests/acceptance/fixtures/transport"


@pytest.mark.parametrize("fixture, ok", [
    (TRANSPORT / "aws-libfabric.log", True),
    (TRANSPORT / "tcp-provider.log", False),
    (TRANSPORT / "path-2.27.3.log", False),
    (ROOT / "tests/acceptance/fixtures/p5-pair/logs/nccl-train-pair-1.log", True),
])
def test_the_job_fails_when_nccl_did_not_use_efa(rendered, tmp_path: Path, fixture: Path, ok: bool):
    """nccl_transport_check (common.sh) on the training log: the NCCL_DEBUG=INFO lines the run printed."""
    work, env = _sandbox(tmp_path, rendered)
    stub = tmp_path / "bin/torchrun-stub"
    stub.write_text(STUB_TORCHRUN)
    stub.chmod(0o755)
    env = env | {"FMC_IMAGE": "", "FMC_TORCHRUN": str(stub), "FIXTURE": str(fixture)}
    del env["FMC_NCCL_CHECK"]
    proc = _submit(work, env, 80)
    if ok:
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 1
        assert "NCCL did not use EFA through aws-ofi-nccl in this run" in proc.stderr
        assert f"{work}/first-job/logs/train-gpu-80.txt: " in proc.stderr  # the guard's own line names the log


# --- the command ------------------------------------------------------------------------------------------------

def test_the_command_says_how_the_folder_reaches_fsx_through_the_bucket(tmp_path: Path):
    result = CliRunner().invoke(cli_app, ["acceptance", "first-job", str(slurm_examples()["p5-parallelcluster"]),
                                          "--out", str(tmp_path / "acceptance")])
    assert result.exit_code == 0, result.output
    # examples/p5-parallelcluster.yaml: one association, /datasets, into the project's bucket (imports new objects)
    assert ("aws s3 sync " + str(tmp_path / "acceptance") + " s3://$(aws cloudformation describe-stacks --stack-name "
            "p5-parallelcluster-storage --query \"Stacks[0].Outputs[?OutputKey=='BucketName'].OutputValue\" "
            "--output text)/datasets/acceptance/") in result.output
    assert "cd /fsx/datasets/acceptance && bash own-folders.sh && sbatch first-job/gpu.sbatch" \
        in result.output
    assert "fmcluster connect p5-parallelcluster" in result.output
    assert (tmp_path / "acceptance/first-job/gpu.sbatch").is_file() and (tmp_path / "acceptance/logs").is_dir()


def test_without_an_association_the_command_says_to_add_one(tmp_path: Path):
    result = CliRunner().invoke(cli_app, ["acceptance", "first-job", str(ROOT / "projects/default.yaml"),
                                          "--out", str(tmp_path / "acceptance")])
    assert result.exit_code == 0, result.output
    assert "no data repository association imports from the project bucket" in result.output
    assert "aws s3 sync" not in result.output


def test_the_arm64_image_comes_with_its_warning(tmp_path: Path):
    example = slurm_examples()["p6e-gb200-hyperpod-training-plan"]
    result = CliRunner().invoke(cli_app, ["acceptance", "first-job", str(example), "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert enroot_reference(VERSIONS["aarch64"]) in result.output and "EFA was not tested in the arm64 image" in result.output


@pytest.mark.parametrize("args, message", [
    (["examples/p4d-on-demand.yaml"], "orchestrator.type none runs no Slurm"),
    (["projects/default.yaml", "--image", "my image"], "--image 'my image'"),
    (["examples/p5-pcs.yaml", "--image", "nvcr.io/nvidia/pytorch:25.01-py3"],
     "the nodes of orchestrator.type pcs run no containers"),
])
def test_bad_requests_get_one_line_and_exit_2(tmp_path: Path, args, message):
    result = CliRunner().invoke(cli_app, ["acceptance", "first-job", str(ROOT / args[0]), *args[1:],
                                          "--out", str(tmp_path / "a")])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


# --- folders imported through the bucket come owned by root ------------------------------------------------------

SUDO = """#!/bin/bash
printf 'sudo %s\\n' "$*" >>"${SANDBOX}/calls.log"
[[ "$1" == -n ]] && shift
exec "$@"
"""
"""sudo that may: runs the command (as the tests' user, who may chown to itself and chmod its own folders)."""


def _as_imported(*folders: Path) -> None:
    """Folders as FSx imports them from objects without POSIX metadata (root's, 0755: not writable by the user who
    submits). Run as root, the folders are given to another uid; otherwise, the user's own write bit goes."""
    for folder in folders:
        if os.geteuid() == 0:
            os.chown(folder, 65534, 65534)
            folder.chmod(0o755)
        else:
            folder.chmod(0o555)


def test_own_folders_makes_the_imported_folders_the_submitters_and_the_job_then_runs(rendered, tmp_path: Path):
    work, env = _sandbox(tmp_path, rendered)
    (tmp_path / "bin/sudo").write_text(SUDO)
    (tmp_path / "bin/sudo").chmod(0o755)
    _as_imported(work / "logs", work / "first-job/logs")
    own = subprocess.run(["bash", str(work / "own-folders.sh")], env=env, capture_output=True, text=True,
                         timeout=60)
    assert own.returncode == 0, own.stderr
    for folder in (work / "logs", work / "first-job/logs"):
        assert (folder.stat().st_uid, folder.stat().st_mode & 0o700) == (os.geteuid(), 0o700), folder
        assert f"{folder.relative_to(work)}: now owned by" in own.stdout
    assert f"{tmp_path / 'fsx'}: made" in own.stdout
    assert (tmp_path / "calls.log").read_text().count("sudo -n chown") == 2  # only the two that were not writable
    again = subprocess.run(["bash", str(work / "own-folders.sh")], env=env, capture_output=True, text=True,
                           timeout=60)
    assert again.returncode == 0 and "now owned" not in again.stdout and "made" not in again.stdout  # idempotent
    proc = _submit(work, env, 91)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_own_folders_without_sudo_says_the_command_to_run(rendered, tmp_path: Path):
    work, env = _sandbox(tmp_path, rendered)
    (tmp_path / "bin/sudo").write_text("#!/bin/bash\necho 'sudo: a password is required' >&2\nexit 1\n")
    (tmp_path / "bin/sudo").chmod(0o755)
    _as_imported(work / "logs")
    own = subprocess.run(["bash", str(work / "own-folders.sh")], env=env, capture_output=True, text=True,
                         timeout=60)
    assert own.returncode == 1
    assert (f"{work.name}/logs is not writable" in own.stderr or "logs is not writable" in own.stderr) \
        and "sudo install -d -o" in own.stderr and "(or ask an administrator)" in own.stderr


def test_the_own_folders_script_passes_shellcheck(rendered):
    scripts = sorted(p for target, *_ in rendered.values() for p in target.glob("own-folders.sh"))
    assert len(scripts) == len(rendered)
    linted = shellcheck.lint(scripts, "--norc")
    assert linted.returncode == 0, linted.stdout[:4000] + linted.stderr[:2000]


def test_the_command_says_to_own_the_folders_before_submitting(tmp_path: Path):
    result = CliRunner().invoke(cli_app, ["acceptance", "first-job", str(slurm_examples()["p5-parallelcluster"]),
                                          "--out", str(tmp_path / "acceptance")])
    assert result.exit_code == 0, result.output
    assert "&& bash own-folders.sh && sbatch first-job/gpu.sbatch" in result.output


@pytest.mark.parametrize("example, group", [("p5en-hyperpod", "train"), ("p5-pcs", "gpu")])
def test_the_first_job_starts_on_every_slurm_path(rendered, tmp_path: Path, example: str, group: str):
    """HyperPod (pyxis: the pinned image, pulled as enroot 3.4 reads it) and PCS (no pyxis: the nodes' torchrun) as
    ParallelCluster's above: the rendered job, after own-folders.sh, trains and logs its result line."""
    work, env = _sandbox(tmp_path, rendered, example=example)
    (tmp_path / "bin/sudo").write_text(SUDO)
    (tmp_path / "bin/sudo").chmod(0o755)
    assert subprocess.run(["bash", str(work / "own-folders.sh")], env=env, capture_output=True,
                          timeout=60).returncode == 0
    proc = subprocess.run(["bash", str(work / f"first-job/{group}.sbatch")], cwd=work,
                          env=env | {"SLURM_JOB_ID": "93"}, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _result((work / f"first-job/logs/train-{group}-93.txt").read_text())["last_step"] == "4"
    pulled = [line for line in (tmp_path / "calls.log").read_text().splitlines() if line.startswith("enroot ")]
    if example == "p5-pcs":
        assert pulled == []  # configless slurmd: no pyxis, no container
    else:
        assert pulled and pulled[0].startswith("enroot registry=public.ecr.aws image=deep-learning-containers/")


def test_acceptance_render_and_first_job_write_the_same_own_folders_script(tmp_path: Path):
    """The acceptance jobs run first and write into logs/ and nccl-tests/ too: `render` writes the script as well, the
    same bytes, so it covers both whichever command ran last; the acceptance README says to run it first."""
    example = str(slurm_examples()["p5-parallelcluster"])
    runner = CliRunner()
    assert runner.invoke(cli_app, ["acceptance", "first-job", example, "--out", str(tmp_path / "a")]).exit_code == 0
    first = (tmp_path / "a/own-folders.sh").read_bytes()
    assert runner.invoke(cli_app, ["acceptance", "render", example, "--out", str(tmp_path / "a")]).exit_code == 0
    assert (tmp_path / "a/own-folders.sh").read_bytes() == first
    assert b"own nccl-tests" in first and b"own first-job/logs" in first
    assert "First, once, as the user who submits: `bash own-folders.sh`" in (tmp_path / "a/README.md").read_text()
