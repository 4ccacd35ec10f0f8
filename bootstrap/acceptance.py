"""Render the acceptance jobs of a project: per compute group, Slurm batch scripts (ParallelCluster,
HyperPod) or per-node scripts (self-managed) that run the node checks, dcgmi diag and nccl-tests
with the bootstrap's NCCL environment, writing the logs ``fmcluster acceptance report`` judges.

Where Slurm runs a group's nodes comes from the generators the stacks use: a ParallelCluster
queue (:func:`fmcluster.generate.parallelcluster.queues`; several groups in one queue are told apart
by ``--constraint=<compute resource>``, a feature ParallelCluster gives every node of a compute
resource: aws-parallelcluster-cookbook ``slurm_parallelcluster_utils.conf``, ``feature_property``), or a
HyperPod instance group's partition (:func:`fmcluster.generate.hyperpod.instance_groups`).
ParallelCluster nodes carry ``Gres=gpu:<type>:<n>`` (same file, ``gres_property``), so jobs ask for
``--gpus-per-node``; HyperPod jobs ask for whole nodes (``--exclusive``) only, as
awsome-distributed-training's nccl-tests sbatch scripts do (``--gpus-per-node`` "for AWS ParallelCluster").
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path

from fmcluster.bootstrap.context import FsxMount, bundle_mounts_fsx, context_for
from fmcluster.bootstrap.enroot import enroot_reference
from fmcluster.bootstrap.render import render_files
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from fmcluster import catalog, templates
from fmcluster.acceptance.pairs import DEFAULT_MARGIN
from fmcluster.generate import hyperpod as hp
from fmcluster.generate import schedulers, slurmteams
from fmcluster.plan import ClusterPlan, GroupPlan

TEMPLATES_DIR = templates.ROOT / "acceptance"
TESTS = ("all_reduce_perf", "all_gather_perf")
BUILT_NCCL_TESTS_DIR = "${FMC_DIR}/nccl-tests/${FMC_GROUP}/build"
FIRST_JOB_WORK_DIR_NAME = "fmcluster-first-job"
OWN_FOLDERS = "own-folders.sh"
"""Beside README.md: run once on the cluster, as the user who submits, before the first ``sbatch``: the folders the
jobs write into made that user's (files synced through the bucket arrive owned by root: ``own_folders.sh.j2``).
``acceptance render`` and ``acceptance first-job`` write the same file, so either may run last."""


def first_job_work_dir(cluster: ClusterPlan) -> str:
    """Where the first job's data and checkpoints go: on the project's FSx for Lustre, outside any data repository
    association (nothing is exported to S3); a shell expression when the project has no FSx."""
    if cluster.fsx_mount_path is None:
        return "${FMC_DIR}/first-job/work"
    return f"{cluster.fsx_mount_path.rstrip('/')}/{FIRST_JOB_WORK_DIR_NAME}"


def write_own_folders(cluster: ClusterPlan, out: Path) -> Path:
    """``out/own-folders.sh``: the same bytes whichever command writes it."""
    path = out / OWN_FOLDERS
    path.write_text(_environment().get_template("own_folders.sh.j2").render(work_dir=first_job_work_dir(cluster)),
                    encoding="utf-8")
    path.chmod(0o755)
    return path
"""Where the setup job builds nccl-tests (a shell expression the job scripts expand): the rendered folder, on
storage every node sees. Used unless ``--image`` or ``--nccl-tests-dir`` says where the binaries are."""
SETUP = {"slurm": "setup-nccl-tests.sbatch", "self-managed": "setup-nccl-tests.sh"}
HEALTHCHECK_STEP = "steps/99-healthcheck.sh"


def _environment() -> Environment:
    # The bootstrap's settings (render.py), and its templates second, for the NCCL profile partial.
    env = Environment(loader=FileSystemLoader([str(TEMPLATES_DIR), str(templates.BOOTSTRAP)]),
                      undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                      autoescape=False, comment_start_string="<%#", comment_end_string="#%>")
    env.filters["q"] = lambda value: shlex.quote(str(value))
    return env


@dataclass(frozen=True)
class Target:
    """Where one compute group's nodes run and what they are."""

    group: GroupPlan
    flavour: str
    partition: str | None
    constraint: str | None
    gres: bool
    domain_size: int | None
    """Instances per NVLink domain (GB200 UltraServer); None without one."""
    account: str | None = None
    """The Slurm account (team) the jobs run as (``--account``); None: the user's default."""
    nodes: int | None = None
    """How many of the group's nodes the jobs use: the team's guaranteed nodes of the group; None: all of them."""

    @property
    def count(self) -> int:
        return self.group.count if self.nodes is None else self.nodes

    @property
    def gpus(self) -> int:
        return self.group.gpus // self.group.count

    @property
    def nvlinks_per_gpu(self) -> int | None:
        return catalog.get(self.group.instance_type).nvlinks_per_gpu


class AccountError(ValueError):
    """``--account`` does not fit the project's teams; the message says what to pass."""


def team_shares(cluster: ClusterPlan, account: str | None) -> dict[str, int] | None:
    """Compute group -> the nodes ``account``'s jobs may hold there (its guaranteed + borrow: Slurm caps the team at
    that, :mod:`fmcluster.generate.slurmteams`); None where Slurm enforces no teams. :class:`AccountError` when the
    project has teams and ``account`` is not one of them: Slurm refuses a job of a user in no team."""
    names = [t.name for t in cluster.teams]
    if not slurmteams.applies(cluster):
        if account is not None:
            raise AccountError(f"--account {account}: the project has no teams Slurm enforces; leave --account out")
        return None
    if account not in names:
        given = "no --account" if account is None else f"--account {account} is not a team"
        raise AccountError(f"{given}: the project has teams ({', '.join(names)}) and Slurm refuses a job of a user in "
                           "no team and one larger than the team's guaranteed nodes; pass --account TEAM and submit "
                           "as one of its members: the jobs use the team's nodes of each group")
    team = next(t for t in cluster.teams if t.name == account)
    return {g: s.guaranteed + s.borrow for g, s in team.instances.items()}


def targets(cluster: ClusterPlan, account: str | None = None) -> list[Target]:
    """Each compute group's target; on a project whose teams Slurm enforces, as ``account`` (see
    :func:`team_shares`): only the groups the team has nodes in, sized to them."""
    out = []
    driver = cluster.driver
    slurm = schedulers.scheduler(cluster).slurm_targets(cluster)  # empty without Slurm: per-node scripts
    shares = team_shares(cluster, account) if slurm else None
    for group in cluster.groups:
        membership = hp.ultraserver(cluster, group)
        size = membership.instances_per_server if membership else None
        where = slurm.get(group.name)
        nodes = None if shares is None else min(group.count, shares.get(group.name, 0))
        if nodes == 0:
            continue  # the team has no node of the group: Slurm refuses its jobs there
        out.append(Target(group, driver.flavour, where.partition if where else None,
                          where.constraint if where else None, where.gres if where else False, size,
                          account if shares is not None else None, nodes))
    if not out:
        raise AccountError(f"--account {account}: the team has no nodes in any compute group")
    return out


@dataclass(frozen=True)
class Job:
    """One job script's settings (templates see it as ``job``)."""

    file: str
    group: str
    instance_type: str
    flavour: str
    gpus: int
    scope: str
    nodes: int
    partition: str | None
    constraint: str | None
    gpus_per_node: int | None
    description: str
    image: str | None
    nccl_tests_dir: str
    nvlinks_per_gpu: int | None
    domain_size: int | None
    tests: tuple[str, ...] = TESTS
    setup: str | None = None
    """The group's setup job that builds nccl-tests (None: the binaries come from an image or a given folder)."""
    account: str | None = None
    """``#SBATCH --account`` (the team the jobs run as); None: the user's default account."""

    @property
    def tasks_per_node(self) -> int:
        return self.gpus

    @property
    def job_name(self) -> str:
        return f"fmc-{self.scope}-{self.group}"


def _jobs(t: Target, image: str | None, nccl_tests_dir: str | None) -> list[Job]:
    g = t.group
    slurm = t.partition is not None
    setup = SETUP["slurm" if slurm else "self-managed"] if image is None and nccl_tests_dir is None else None

    if slurm and image is not None:  # srun --container-image: pyxis hands it to enroot
        image = enroot_reference(image)

    def job(file: str, scope: str, nodes: int, description: str, tests: tuple[str, ...] = TESTS) -> Job:
        return Job(file, g.name, g.instance_type, t.flavour, t.gpus, scope, nodes, t.partition, t.constraint,
                   t.gpus if t.gres else None, description, image, nccl_tests_dir or BUILT_NCCL_TESTS_DIR,
                   t.nvlinks_per_gpu, t.domain_size, tests, setup, t.account)

    jobs = [job(setup, "setup", 1, "build nccl-tests on one node", ())] if setup else []
    jobs.append(job("node-checks.sbatch" if slurm else "node-checks.sh", "node", t.count, "per-node checks"))
    if not slurm:
        jobs.append(job("nccl-mpirun.sh", "group", t.count, "nccl-tests through mpirun"))
        return jobs
    if t.count < 2:
        return jobs
    if t.domain_size is None:
        jobs.append(job("nccl.sbatch", "group", t.count, f"all {t.count} nodes at once"))
    else:
        jobs.append(job("nccl-in-domain.sbatch", "in-domain", t.domain_size,
                        f"the {t.domain_size} nodes of one UltraServer (NVLink domain)"))
        if t.count >= 2 * t.domain_size:
            jobs.append(job("nccl-cross-domain.sbatch", "cross-domain", 2 * t.domain_size,
                            f"the nodes of two UltraServers ({2 * t.domain_size} nodes)"))
    # Pairs run all_reduce only: the slow-node judgement and the published figure (2 nodes) need no more.
    jobs.append(job("nccl-pairs.sbatch", "pair", t.count, "a ring of node pairs, for slow nodes", TESTS[:1]))
    return jobs


TEMPLATE_OF = {"node-checks.sbatch": "node_checks.sbatch.j2", "node-checks.sh": "node_checks.sh.j2",
               "nccl-mpirun.sh": "nccl_mpirun.sh.j2", SETUP["slurm"]: "setup_nccl_tests.sh.j2",
               SETUP["self-managed"]: "setup_nccl_tests.sh.j2"}


def render_job(job: Job, cluster: ClusterPlan, fsx: FsxMount | None = None) -> str:
    """The text of one job script."""
    ctx = _context(cluster, job.group, job.flavour, fsx)
    name = TEMPLATE_OF.get(job.file, "nccl.sbatch.j2")
    return _environment().get_template(name).render(job=job, ctx=ctx, v=ctx.versions, nt=ctx.versions.nccl_tests,
                                                    tests=TESTS)


def _context(cluster: ClusterPlan, group: str, flavour: str, fsx: FsxMount | None):
    # As the deployed bundles are rendered (bootstrap/bundles.py): where the orchestrator mounts FSx, they do not.
    return context_for(cluster, group, "compute", flavour, fsx=fsx if bundle_mounts_fsx(flavour) else None)


@dataclass(frozen=True)
class Rendered:
    files: list[Path]
    instructions: str


def render_acceptance(cluster: ClusterPlan, out: Path, *, image: str | None = None,
                      nccl_tests_dir: str | None = None, fsx: FsxMount | None = None,
                      account: str | None = None) -> Rendered:
    """Write every group's job scripts, the bootstrap's health check beside them, README.md and
    acceptance.json into ``out``; return the files and what to run. Without ``image`` or ``nccl_tests_dir``,
    each group gets a setup job that builds nccl-tests into ``out`` (:data:`BUILT_NCCL_TESTS_DIR`)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    # sbatch --output=logs/... needs the folder on the cluster, and `aws s3 sync` (README: through the bucket) copies
    # files, not empty folders
    (out / "logs" / "README.txt").write_text("Slurm's output of the jobs (sbatch --output) and the acceptance logs.\n",
                                             encoding="utf-8")
    files, manifest, steps, all_jobs = [], [], [], []
    for t in targets(cluster, account):
        folder = out / t.group.name
        folder.mkdir(exist_ok=True)
        jobs = _jobs(t, image, nccl_tests_dir)
        all_jobs += jobs
        for job in jobs:
            path = folder / job.file
            path.write_text(render_job(job, cluster, fsx), encoding="utf-8")
            path.chmod(0o755)
            files.append(path)
        if t.partition is not None:  # the node checks run node-checks.sh on every node
            path = folder / "node-checks.sh"
            checks = next(j for j in jobs if j.scope == "node")
            path.write_text(render_job(_as_script(checks), cluster, fsx), encoding="utf-8")
            path.chmod(0o755)
            files.append(path)
        health = folder / "healthcheck.sh"
        health.write_text(render_files(_context(cluster, t.group.name, t.flavour, fsx))[HEALTHCHECK_STEP], encoding="utf-8")
        health.chmod(0o755)
        files.append(health)
        manifest.append({"group": t.group.name, "instance_type": t.group.instance_type, "nodes": t.count,
                         "gpus_per_node": t.gpus, "efa_devices": t.group.efa_interfaces,
                         "nvlinks_per_gpu": t.nvlinks_per_gpu, "partition": t.partition, "constraint": t.constraint,
                         "ultraserver_nodes": t.domain_size, "jobs": [asdict(j) | {"tests": list(j.tests)} for j in jobs]})
        steps.append(_steps(t, jobs))
    files.append(write_own_folders(cluster, out))
    text = _readme(cluster, steps, all_jobs)
    (out / "README.md").write_text(text, encoding="utf-8")
    (out / "acceptance.json").write_text(json.dumps({"project": cluster.project, "orchestrator": cluster.orchestrator,
                                                     "groups": manifest}, indent=2) + "\n", encoding="utf-8")
    return Rendered(files, text)


def _as_script(job: Job) -> Job:
    return Job(**(asdict(job) | {"file": "node-checks.sh"}))


def _steps(t: Target, jobs: list[Job]) -> str:
    g = t.group
    lines = [f"## {g.name}: {t.count} x {g.instance_type}" + (f" (partition {t.partition})" if t.partition else "")
             + (f", as team {t.account} (its {t.count} of the group's {g.count} nodes; submit as one of its "
                "members)" if t.account else ""), ""]
    setup = next((j for j in jobs if j.scope == "setup"), None)
    if t.partition is not None:
        lines.append("```")
        if setup is not None:  # the others wait for the build (and are cancelled if it fails)
            lines.append(f"setup=$(sbatch --parsable {g.name}/{setup.file})    # builds nccl-tests here, once")
            lines += [f"sbatch {g.name}/{j.file}" if j.scope == "node" else
                      f"sbatch --dependency=afterok:${{setup}} {g.name}/{j.file}" for j in jobs if j is not setup]
        else:
            lines += [f"sbatch {g.name}/{j.file}" for j in jobs]
        lines.append("```")
        if t.count < 2:
            lines.append("One node: no NCCL run across nodes.")
        if t.domain_size is not None and t.count < 2 * t.domain_size:
            lines.append(f"One UltraServer ({t.domain_size} nodes) in this group: no cross-domain run (it needs two).")
    else:
        lines += ["No Slurm (orchestrator none): run these yourself (SSM, pdsh), from this folder on shared storage.",
                  "```"]
        if setup is not None:
            lines.append(f"bash {g.name}/{setup.file}                  # first, on one node: builds nccl-tests here")
        lines += [f"bash {g.name}/node-checks.sh                      # on every node of {g.name}",
                  f"bash {g.name}/nccl-mpirun.sh group HOSTFILE       # on one node; HOSTFILE: the {g.count} hosts",
                  f"bash {g.name}/nccl-mpirun.sh pairs HOSTFILE       # a ring of node pairs (slow nodes)"]
        if t.domain_size is not None:
            lines += [f"bash {g.name}/nccl-mpirun.sh in-domain HOSTFILE   # the {t.domain_size} hosts of one UltraServer",
                      f"bash {g.name}/nccl-mpirun.sh cross-domain HOSTFILE  # the hosts of two UltraServers"]
        lines.append("```")
    return "\n".join(lines)


def _readme(cluster: ClusterPlan, steps: list[str], jobs: list[Job]) -> str:
    setup = next((j for j in jobs if j.scope == "setup"), None)
    if setup is not None:
        binaries = (f"nccl-tests: each group's setup job builds NVIDIA/nccl-tests (the version bootstrap/versions.yaml "
                    f"pins, MPI=1) against the node's own CUDA, NCCL and MPI into nccl-tests/GROUP/build here; the "
                    f"other jobs run those binaries.")
    elif jobs and jobs[0].image:
        binaries = f"nccl-tests: from the container image {jobs[0].image} (pyxis)."
    else:
        binaries = f"nccl-tests: the binaries in {jobs[0].nccl_tests_dir if jobs else '-'} on every node (built with MPI=1)."
    return "\n".join([
        f"# Acceptance jobs for {cluster.project} ({cluster.orchestrator})", "",
        ("Copy this folder to storage every node sees (e.g. the FSx for Lustre mount), `cd` into it, run what "
         f"follows, then `fmcluster acceptance report .` (exit 1 on a failed check). {binaries} Slow nodes: pairs "
         f"more than {DEFAULT_MARGIN:.0%} below the median (`--margin`)."), "",
        (f"First, once, as the user who submits: `bash {OWN_FOLDERS}`. Files synced into FSx through the bucket "
         "arrive owned by root, and Slurm fails a job whose --output folder its user cannot write, with no output "
         "at all; it gives the folders the jobs write into (logs/, nccl-tests/, first-job/logs/ and the first "
         "job's work folder) to that user, with sudo where needed."), "", *steps, ""])
