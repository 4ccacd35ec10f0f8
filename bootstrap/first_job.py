"""Render a project's first training job (``fmcluster acceptance first-job``): per compute group, one Slurm batch
script that runs ``torchrun`` on every node of the group through ``srun`` (in a public PyTorch container through
pyxis), and the training script with its FLOPs arithmetic beside it, into ``OUT/first-job/``.

Where each group's nodes run comes from the same place as the acceptance jobs' (:func:`fmcluster.bootstrap.acceptance.
targets`: the orchestrator's ``slurm_targets``), and the jobs carry the nodes' NCCL environment the same way
(``common.sh.j2``). The peak that MFU is measured against is the catalog's dense BF16 figure per GPU.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from fmcluster.bootstrap.acceptance import (
    FIRST_JOB_WORK_DIR_NAME,
    AccountError,
    TEMPLATES_DIR,
    Target,
    _context,
    _environment,
    first_job_work_dir,
    targets,
    write_own_folders,
)
from fmcluster.bootstrap.context import FsxMount
from fmcluster.bootstrap.enroot import ImageReferenceError, enroot_reference
from fmcluster.bootstrap.versions import default_versions

from fmcluster import catalog
from fmcluster.facts import KERNEL_ARCH
from fmcluster.plan import ClusterPlan

FOLDER = "first-job"
SCRIPTS = ("first_job_train.py", "first_job_flops.py")
"""Copied as they are (the tests run these very files)."""
WORK_DIR_NAME = FIRST_JOB_WORK_DIR_NAME


class FirstJobError(ValueError):
    """The project has no first job to render; the message says why and what to do."""


@dataclass(frozen=True)
class FirstJob:
    """One group's first-job settings (the templates see it as ``job``; the names ``sbatch_header.sh.j2`` and
    ``common.sh.j2`` read are the acceptance jobs')."""

    group: str
    instance_type: str
    nodes: int
    gpus: int
    partition: str
    constraint: str | None
    gpus_per_node: int | None
    image: str | None
    """The container image (pyxis), in the form enroot reads (``REGISTRY#IMAGE:TAG``,
    :func:`fmcluster.bootstrap.enroot.enroot_reference`); None where the nodes cannot run containers: the nodes' own
    torchrun then."""
    image_untested_efa: bool
    work_dir: str
    peak_tflops: float | None
    """Dense BF16 TFLOPS of one GPU (the catalog's); None where the catalog has no figure."""
    account: str | None = None
    """``#SBATCH --account``: the team the job runs as (a project with teams); None: the user's default account."""

    @property
    def file(self) -> str:
        return f"{self.group}.sbatch"

    @property
    def job_name(self) -> str:
        return f"fmc-first-job-{self.group}"

    @property
    def tasks_per_node(self) -> int:
        return 1  # torchrun starts one process per GPU itself

    @property
    def peak_label(self) -> str:
        if self.peak_tflops is None:
            return "(no peak in the catalog: MFU n/a)"
        return f"{self.peak_tflops:g} TFLOPS BF16 dense per GPU"


def peak_tflops_per_gpu(instance_type: str) -> float | None:
    """The catalog's dense BF16 peak of one GPU, in TFLOPS (FACTS.md section 1)."""
    pflops = catalog.get(instance_type).bf16_dense_pflops_per_gpu
    return None if pflops is None else round(pflops * 1000, 6)


work_dir = first_job_work_dir


def containers(cluster: ClusterPlan, group: str) -> bool:
    """Whether the group's nodes run containers through pyxis: as the bootstrap decides for their flavour (no
    enroot and pyxis where slurmd cannot load pyxis, :attr:`fmcluster.flavours.Flavour.pyxis_loadable`)."""
    return bool(_context(cluster, group, cluster.driver.flavour, None).options.containers)


def first_jobs(cluster: ClusterPlan, image: str | None = None, account: str | None = None) -> list[FirstJob]:
    """One first job per compute group that Slurm runs (with teams: per group ``account`` has nodes in, on those
    nodes); :class:`FirstJobError` without Slurm, or for an image where the nodes cannot run containers."""
    if not cluster.driver.slurm:
        raise FirstJobError(f"orchestrator.type {cluster.orchestrator} runs no Slurm: the first job is a Slurm batch "
                            "job (use a Slurm orchestrator, or run first_job_train.py with torchrun yourself)")
    try:
        slurm = [t for t in targets(cluster, account) if t.partition is not None]
    except AccountError as exc:
        raise FirstJobError(str(exc)) from None
    if not slurm:
        raise FirstJobError(f"orchestrator.type {cluster.orchestrator} runs no Slurm: the first job is a Slurm batch "
                            "job (use a Slurm orchestrator, or run first_job_train.py with torchrun yourself)")
    try:
        jobs = [_job(t, cluster, image) for t in slurm]
    except ImageReferenceError as exc:
        raise FirstJobError(str(exc)) from None
    if image is not None and not all(j.image for j in jobs):
        raise FirstJobError(f"--image {image}: the nodes of orchestrator.type {cluster.orchestrator} run no containers "
                            "(their slurmd cannot load pyxis); leave --image out: the job runs the nodes' own torchrun")
    return jobs


def _job(t: Target, cluster: ClusterPlan, image: str | None) -> FirstJob:
    arch = KERNEL_ARCH[t.group.architecture]
    pinned = default_versions().first_job_image
    pyxis = containers(cluster, t.group.name)
    return FirstJob(group=t.group.name, instance_type=t.group.instance_type, nodes=t.count, gpus=t.gpus,
                    partition=t.partition or "", constraint=t.constraint, gpus_per_node=t.gpus if t.gres else None,
                    image=enroot_reference(image or pinned.for_arch(arch)) if pyxis else None,
                    image_untested_efa=pyxis and image is None and arch in pinned.untested_efa,
                    work_dir=work_dir(cluster), peak_tflops=peak_tflops_per_gpu(t.group.instance_type),
                    account=t.account)


def render_job(job: FirstJob, cluster: ClusterPlan, fsx: FsxMount | None = None) -> str:
    ctx = _context(cluster, job.group, cluster.driver.flavour, fsx)
    return _environment().get_template("first_job.sbatch.j2").render(job=job, ctx=ctx, v=ctx.versions)


@dataclass(frozen=True)
class RenderedFirstJob:
    files: list[Path]
    jobs: list[FirstJob]


def render_first_job(cluster: ClusterPlan, out: Path, *, image: str | None = None,
                     fsx: FsxMount | None = None, account: str | None = None) -> RenderedFirstJob:
    """Write ``out/first-job/``: a batch script per Slurm compute group and the training scripts."""
    jobs = first_jobs(cluster, image, account)
    folder = out / FOLDER
    files = []
    # sbatch --output=logs/...: Slurm opens it before the script runs, so the folder must exist on FSx; `aws s3 sync`
    # copies files, not empty folders: each gets a file
    for logs, what in ((out / "logs", "Slurm's output of the jobs (sbatch --output) and the acceptance logs."),
                       (folder / "logs", "The first job's training logs, train-GROUP-JOBID.txt.")):
        logs.mkdir(parents=True, exist_ok=True)
        note = logs / "README.txt"
        if not note.exists():
            note.write_text(f"{what}\n", encoding="utf-8")
            files.append(note)
    for name in SCRIPTS:
        shutil.copyfile(TEMPLATES_DIR / name, folder / name)
        files.append(folder / name)
    for job in jobs:
        path = folder / job.file
        path.write_text(render_job(job, cluster, fsx), encoding="utf-8")
        path.chmod(0o755)
        files.append(path)
    files.append(write_own_folders(cluster, out))
    return RenderedFirstJob(files, jobs)
