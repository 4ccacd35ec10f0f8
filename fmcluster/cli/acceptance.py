"""`fmcluster acceptance ...`: after deploy, is the cluster fit to train?

``render PROJECT --out DIR`` writes the jobs (Slurm batch scripts, or per-node scripts for
self-managed nodes); ``report DIR_OR_LOGS`` judges what they logged (exit 1 on a failed check);
``first-job PROJECT --out DIR`` writes the first training job beside them (:mod:`fmcluster.cli.firstjob`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from fmcluster.acceptance import DEFAULT_MARGIN, AcceptanceError, build_report, to_text
from fmcluster.bootstrap import kubernetes_jobs
from fmcluster.bootstrap.acceptance import AccountError, render_acceptance
from fmcluster.bootstrap.context import bundle_mounts_fsx
from fmcluster.bootstrap.versions import BootstrapError
from fmcluster.cli.bootstrap import _deployed_fsx
from fmcluster.cli.firstjob import checked, first_job_cmd
from fmcluster.cli.outdir import default_out
from fmcluster.generate import eks_access

RENDERERS = {"none": render_acceptance, "parallelcluster": render_acceptance, "hyperpod": render_acceptance,
             "pcs": render_acceptance, "hyperpod-eks": kubernetes_jobs.render_acceptance}
"""``orchestrator.type`` -> what writes its acceptance jobs: Slurm batch scripts (or per-node scripts without a
scheduler), or Kubernetes objects (:mod:`fmcluster.bootstrap.kubernetes_jobs`)."""

app = typer.Typer(help="Acceptance: NCCL, EFA and GPU checks as jobs, and their report.", no_args_is_help=True)

FAILED_EXIT = 1
USAGE_EXIT = 2


@app.callback()
def _group() -> None:
    """Acceptance: NCCL, EFA and GPU checks as jobs, and their report."""


@app.command("render")
def render_cmd(
    project: Annotated[str, typer.Argument(help="A project name under projects/, or a path to a YAML file.")],
    out: Annotated[Path | None, typer.Option("--out", help="Directory to write the jobs into (copy it to shared "
                                                          "storage). Default: out/PROJECT/acceptance.")] = None,
    image: Annotated[str | None, typer.Option(
        "--image", help="Container image with nccl-tests, run through pyxis (srun --container-image); on Kubernetes "
                        "(hyperpod-eks) the image every acceptance pod runs (required there).")] = None,
    nccl_tests_dir: Annotated[str | None, typer.Option(
        "--nccl-tests-dir", help="Where the nodes already have nccl-tests binaries (built with MPI=1). Default: "
                                 "a setup job per group builds them into OUT (submit it first).")] = None,
    account: Annotated[str | None, typer.Option(
        "--account", help="On a project with teams (Slurm): the team the jobs run as (#SBATCH --account); they use "
                          "the team's nodes of each group, and a member of the team submits them.")] = None,
) -> None:
    """Write the acceptance jobs of PROJECT into OUT: per compute group, the node checks (GPUs, EFA,
    fi_info, the bootstrap's health check, dcgmi diag -r 2) and nccl-tests all_reduce/all_gather runs."""
    loaded, plan = checked(project, image)
    if nccl_tests_dir is not None and (not nccl_tests_dir.startswith("/")
                                       or any(c in nccl_tests_dir for c in "'\"`$\\ \n")):
        typer.echo(f"--nccl-tests-dir {nccl_tests_dir!r}: give an absolute path without quotes, spaces or $", err=True)
        raise typer.Exit(USAGE_EXIT)
    cluster = plan.cluster
    out = out or default_out(loaded.project.name, "acceptance")
    fsx = _deployed_fsx(plan.storage.spec) if bundle_mounts_fsx(cluster.driver.flavour) else None
    extra = {"account": account} if RENDERERS[cluster.orchestrator] is render_acceptance else {}
    if account is not None and not extra:
        typer.echo(f"--account {account}: orchestrator.type {cluster.orchestrator} runs no Slurm accounts", err=True)
        raise typer.Exit(USAGE_EXIT)
    try:
        rendered = RENDERERS[cluster.orchestrator](cluster, out, image=image, nccl_tests_dir=nccl_tests_dir, fsx=fsx,
                                                   **extra)
    except (BootstrapError, AccountError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(USAGE_EXIT) from None
    typer.echo(f"{out}: {len(rendered.files)} files for {len(cluster.groups)} compute group(s); "
               f"what to run is in {out / 'README.md'}:\n")
    if cluster.driver.kubernetes_api:  # kubectl needs a way in first (the endpoint is private by default)
        typer.echo(eks_access.access_text(cluster, cluster.region) + "\n")
    typer.echo(rendered.instructions)


app.command("first-job")(first_job_cmd)


@app.command("report")
def report_cmd(
    target: Annotated[Path, typer.Argument(help="The folder `acceptance render` wrote (or its logs/), or one log file.")],
    output: Annotated[str, typer.Option("--output", "-o", help="table or json.")] = "table",
    margin: Annotated[float, typer.Option(
        "--margin", help="How far below the median a node's pairs (and below a published figure a run) may sit, "
                         f"as a fraction (default {DEFAULT_MARGIN}: 10%).")] = DEFAULT_MARGIN,
) -> None:
    """Judge the acceptance logs: bus and algorithm bandwidth per run and size (out-of-place and in-place),
    against a published figure where one exists and the EFA line rate otherwise; the transport NCCL used;
    dcgmi diag; EFA counts; slow nodes. Exit 1 on a failed check."""
    if output not in ("table", "json"):
        typer.echo(f"--output {output!r}: one of table, json", err=True)
        raise typer.Exit(USAGE_EXIT)
    if not 0 < margin < 1:
        typer.echo(f"--margin {margin}: a fraction between 0 and 1 (0.1 = 10% below the median)", err=True)
        raise typer.Exit(USAGE_EXIT)
    try:
        report = build_report(target, margin)
    except AcceptanceError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(USAGE_EXIT) from None
    if output == "json":
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        typer.echo(to_text(report), nl=False)
    if report.failed:
        raise typer.Exit(FAILED_EXIT)
