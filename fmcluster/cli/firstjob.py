"""``fmcluster acceptance first-job PROJECT --out DIR``: the training job a user submits once acceptance passes.

It sits beside ``acceptance render`` and writes into the same folder (``DIR/first-job/``): one ``aws s3 sync`` of
that folder into the bucket's imported prefix puts the acceptance jobs and the first job on FSx together, and the
the docs' walk from deploy to a first log line (docs/after-deploy.md) is one list of steps. Touches no AWS; prints what to run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fmcluster import checks, config
from fmcluster.bootstrap import kubernetes_jobs
from fmcluster.bootstrap.context import bundle_mounts_fsx
from fmcluster.bootstrap.acceptance import OWN_FOLDERS
from fmcluster.bootstrap.first_job import (
    FOLDER,
    FirstJob,
    FirstJobError,
    render_first_job,
)
from fmcluster.cli.bootstrap import _deployed_fsx
from fmcluster.cli.outdir import default_out
from fmcluster.contracts import stack_name
from fmcluster.errors import ConfigError
from fmcluster.generate import eks_access
from fmcluster.plan import Plan
from fmcluster.plan.associations import plan_associations

USAGE_EXIT = 2


def checked(project: str, image: str | None) -> tuple[config.LoadedProject, Plan]:
    """The project, validated, and a safe ``--image`` (it lands in a shell script), or exit 2 saying why: the
    acceptance jobs' and the first job's commands take both alike."""
    try:
        loaded = config.load(project)
        plan, _ = checks.validate(loaded)
    except ConfigError as exc:
        typer.echo(exc.report(), err=True)
        raise typer.Exit(exc.exit_code) from None
    if image is not None and (not image.strip() or any(c in image for c in "'\"`$\\ \n")):
        typer.echo(f"--image {image!r}: give an image reference or a .sqsh path without quotes, spaces or $", err=True)
        raise typer.Exit(USAGE_EXIT)
    return loaded, plan
BUCKET_OUTPUT = "BucketName"
"""NAME-storage's output with the project bucket's name (:data:`fmcluster.contracts.BUCKET_OUTPUTS`)."""


def first_job_cmd(
    project: Annotated[str, typer.Argument(help="A project name under projects/, or a path to a YAML file.")],
    out: Annotated[Path | None, typer.Option("--out", help="The folder `acceptance render` wrote (first-job/ goes "
                                                          "in it). Default: out/PROJECT/acceptance.")] = None,
    image: Annotated[str | None, typer.Option(
        "--image", help="Container image with PyTorch, EFA and aws-ofi-nccl, run through pyxis. Default: the AWS Deep "
                        "Learning Container bootstrap/versions.yaml pins (first_job_image), by tag.")] = None,
    account: Annotated[str | None, typer.Option(
        "--account", help="On a project with teams (Slurm): the team the job runs as (#SBATCH --account); it uses "
                          "the team's nodes of each group, and a member of the team submits it.")] = None,
) -> None:
    """Write the first training job of PROJECT into OUT/first-job: per Slurm compute group, a batch script that runs
    torchrun on all the group's nodes in a PyTorch container (pyxis) and trains a small synthetic transformer with
    FSDP, data and checkpoints on FSx for Lustre, logging step time, tokens per second and MFU."""
    loaded, plan = checked(project, image)
    cluster = plan.cluster
    out = out or default_out(loaded.project.name, "acceptance")
    fsx = _deployed_fsx(plan.storage.spec) if bundle_mounts_fsx(cluster.driver.flavour) else None
    try:
        if account is not None and WRITERS[cluster.orchestrator] is not _slurm:
            raise FirstJobError(f"--account {account}: orchestrator.type {cluster.orchestrator} runs no Slurm accounts")
        count, text = (_slurm(plan, out, image, fsx, account) if WRITERS[cluster.orchestrator] is _slurm
                       else WRITERS[cluster.orchestrator](plan, out, image, fsx))
    except (FirstJobError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(USAGE_EXIT) from None
    typer.echo(f"{out / FOLDER}: {count} files for {len(cluster.groups)} compute group(s)\n")
    typer.echo(text)


def _slurm(plan: Plan, out: Path, image: str | None, fsx, account: str | None = None) -> tuple[int, str]:
    rendered = render_first_job(plan.cluster, out, image=image, fsx=fsx, account=account)
    return len(rendered.files), instructions(plan, out, rendered.jobs)


def _kubernetes(plan: Plan, out: Path, image: str | None, fsx) -> tuple[int, str]:
    rendered = kubernetes_jobs.render_first_job(plan.cluster, out, image=image, fsx=fsx)
    # kubectl needs a way in first (the endpoint is private by default)
    return len(rendered.files), eks_access.access_text(plan.cluster, plan.cluster.region) + "\n\n" + \
        rendered.instructions


WRITERS = {"none": _slurm, "parallelcluster": _slurm, "hyperpod": _slurm, "pcs": _slurm, "hyperpod-eks": _kubernetes}
"""``orchestrator.type`` -> what writes its first job and says how to run it: a Slurm batch script per group (none:
refused, no Slurm), or a PyTorchJob per group (:mod:`fmcluster.bootstrap.kubernetes_jobs`)."""


def sync_destination(plan: Plan, folder: str) -> tuple[str, str] | None:
    """Where ``aws s3 sync`` puts ``folder`` so FSx imports it, and the path the nodes then see it at: the first data
    repository association into the project's own bucket that imports new objects. None without one."""
    fsx = plan.storage.spec.fsx
    if not fsx.enabled or plan.cluster.fsx_mount_path is None:
        return None
    for assoc in plan_associations(plan.storage.spec):
        if not assoc.owned or "NEW" not in assoc.import_events:
            continue
        if assoc.repository is not None:
            s3 = f"{assoc.repository.rstrip('/')}/{folder}/"
        else:
            bucket = assoc.bucket or ("$(aws cloudformation describe-stacks --stack-name "
                                      f"{stack_name(plan.project, 'storage')} --query \"Stacks[0].Outputs"
                                      f"[?OutputKey=='{BUCKET_OUTPUT}'].OutputValue\" --output text)")
            s3 = f"s3://{bucket}{assoc.file_system_path}/{folder}/"
        return s3, f"{plan.cluster.fsx_mount_path.rstrip('/')}{assoc.file_system_path}/{folder}"
    return None


def instructions(plan: Plan, out: Path, jobs: list[FirstJob]) -> str:
    name = plan.project
    lines = []
    for job in jobs:
        peak = (f"{job.peak_tflops:g} TFLOPS BF16 dense per GPU (fmcluster's catalog)" if job.peak_tflops is not None
                else "no peak in the catalog (MFU n/a)")
        lines.append(f"  {job.group}: {job.nodes} x {job.instance_type}, {job.nodes * job.gpus} GPUs, partition "
                     f"{job.partition}; MFU against {peak}  ->  sbatch {FOLDER}/{job.file}")
    first = jobs[0]
    images = sorted({j.image for j in jobs if j.image})
    if images:
        lines += ["", f"Image: {', '.join(images)} (through pyxis). Pinned by tag: no published digest was found; pin "
                  "one with --image REPOSITORY@sha256:DIGEST."]
    if not all(j.image for j in jobs):
        lines += ["", "No containers on these nodes (their slurmd cannot load pyxis): the job runs the nodes' own "
                  "torchrun; without one, make a venv on FSx (python3 -m venv DIR && DIR/bin/pip install torch numpy) "
                  "and submit with FMC_TORCHRUN=DIR/bin/torchrun."]
    if any(j.image_untested_efa for j in jobs):
        lines.append("  warning: AWS's release notes say EFA was not tested in the arm64 image: check the NCCL lines "
                     "of the first log (NET/OFI, provider efa), or pass --image.")
    lines.append(f"Data and checkpoints: {first.work_dir} (FMC_WORK_DIR), outside the data repository associations: "
                 "nothing is exported to S3. A second submission resumes from the last checkpoint.")
    dest = sync_destination(plan, out.name)
    connect = f"  2. fmcluster connect {name}          # a shell on the login or head node"
    lines += ["", "From here (the acceptance jobs first: their README.md):"]
    if dest is not None:
        s3, on_nodes = dest
        lines += [f"  1. aws s3 sync {out} {s3}",
                  f"     # the data repository association imports it: the nodes see {on_nodes}", connect,
                  f"  3. cd {on_nodes} && bash {OWN_FOLDERS} && sbatch {FOLDER}/{first.file}",
                  "     # as the user who submits: files synced through the bucket arrive owned by root; own-folders.sh "
                  "makes the job's folders yours (sudo, once)"]
        back = f"aws s3 sync {s3} {out}"
    else:
        lines += [f"  1. copy {out} to storage every node sees (no data repository association imports from the "
                  "project bucket: add storage.fsx.associations: [{file_system_path: /datasets}] to use one)", connect,
                  f"  3. cd THAT_FOLDER && bash {OWN_FOLDERS} && sbatch {FOLDER}/{first.file}"]
        back = None
    lines += [f"  4. tail -f {FOLDER}/logs/train-{first.group}-JOBID.txt   # step time, tokens/s, MFU",
              "     and in Grafana (fmcluster dashboards push): GPU utilisation, NVLink and EFA traffic of its nodes"]
    if back is not None:
        lines.append(f"  acceptance report: where fmcluster is installed, after `{back}` (FSx exports new files "
                     f"to the bucket): fmcluster acceptance report {out}")
    return "\n".join(lines)
