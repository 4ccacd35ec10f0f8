"""Render a Kubernetes project's acceptance jobs and first training job (``fmcluster acceptance render`` and
``first-job`` for HyperPod on EKS): the objects of :mod:`fmcluster.kubernetes.jobs` as YAML files to
``kubectl apply``, with the same node-check script the Slurm jobs run (``node_checks.sh.j2``, in a ConfigMap) and
the same training script (``first_job_train.py``), and a README saying how to save ``kubectl logs`` where
``fmcluster acceptance report`` reads them.

The groups' labels and taints are the project's (``orchestrator.hyperpod_eks.groups``: what the cluster stack puts in
each instance group's ``KubernetesConfig``). With task governance, a group's jobs run in the namespace of the team whose
ComputeQuota admits the most of its instances (:func:`fmcluster.kubernetes.governance.admissible_instances`, on the
same quota properties the cluster stack synthesizes) and carry that team's Kueue queue label; they are sized to that
many nodes (Kueue admits a job only when all of it fits the quota), and a group no team can hold any of is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from fmcluster.bootstrap.acceptance import (
    HEALTHCHECK_STEP,
    TEMPLATES_DIR,
    Job,
    _context,
    render_job,
)
from fmcluster.bootstrap.first_job import (
    FOLDER,
    WORK_DIR_NAME,
    FirstJobError,
    peak_tflops_per_gpu,
)
from fmcluster.bootstrap.render import render_files
from fmcluster.bootstrap.versions import BootstrapError, default_versions

from fmcluster import catalog
from fmcluster.facts import KERNEL_ARCH
from fmcluster.kubernetes import jobs as k8s
from fmcluster.kubernetes.governance import (
    JOB_PRIORITY,
    GovernanceError,
    admissible_instances,
    compute_quota_properties,
    team_namespace,
)
from fmcluster.kubernetes.nodes import NodeGroup, Taint
from fmcluster.kubernetes.volumes import MOUNT_PATH
from fmcluster.plan import ClusterPlan, GroupPlan

SCRIPTS = "fmc-acceptance-scripts"
FIRST_JOB_SCRIPTS = "fmc-first-job-scripts"
LOGS_NOTE = "kubectl logs of the jobs, saved here as *.log (README.md says how); then fmcluster acceptance report .\n"


@dataclass(frozen=True)
class KubeTarget:
    """One compute group's nodes and where its jobs go."""

    group: GroupPlan
    nodes: NodeGroup
    """The nodes the jobs run on: the whole group, or as many as the placement's team's quota admits."""
    placement: k8s.Placement
    quota: int | None
    """The instances the placement's team's quota admits in the group (None: no task governance)."""


def node_group(cluster: ClusterPlan, group: GroupPlan) -> NodeGroup:
    settings = cluster.hyperpod_eks.group(group.name)
    taints = tuple(Taint(t.key, t.value, t.effect) for t in settings.node_taints)
    return NodeGroup(group.name, group.instance_type, group.count, dict(settings.labels), taints)


def quotas(cluster: ClusterPlan) -> list[dict]:
    """The teams' ComputeQuota properties, as the cluster stack synthesizes them (the cluster ARN left out)."""
    types = {g.name: g.instance_type for g in cluster.groups}
    try:
        return [compute_quota_properties(team, types, team.name, "") for team in cluster.teams]
    except GovernanceError as exc:
        raise BootstrapError(str(exc)) from exc


def placement(cluster: ClusterPlan, group: str) -> tuple[k8s.Placement, int | None]:
    """Where ``group``'s jobs go: the team whose quota admits the most of its instances (the first in the file on a
    tie), or the default namespace, unqueued, without task governance or when no team names the group."""
    if not cluster.hyperpod_eks.task_governance or not cluster.teams:
        return k8s.Placement(), None
    plan = {g.name: g for g in cluster.groups}[group]
    named = [team.name for team in cluster.teams if group in team.instances]
    if not named:
        return k8s.Placement(), None
    admits = admissible_instances(quotas(cluster), catalog.hyperpod_type(plan.instance_type), plan.count)
    team = max(named, key=lambda name: admits[name])
    if admits[team] < 1:
        raise BootstrapError(
            f"no team's ComputeQuota admits any of group {group}'s {plan.count} nodes (teams {', '.join(named)}: "
            "nothing guaranteed there, and nothing they may borrow is lent by another team), so Kueue would never "
            f"admit its acceptance or first job: give a team guaranteed instances of {group} (teams[].instances."
            f"{group}.guaranteed), or borrow with a team that lends them")
    return k8s.Placement(namespace=team_namespace(team), team=team, priority=JOB_PRIORITY), admits[team]


def kube_targets(cluster: ClusterPlan) -> list[KubeTarget]:
    out = []
    for group in cluster.groups:
        where, quota = placement(cluster, group.name)
        nodes = node_group(cluster, group)
        if quota is not None and quota < group.count:
            nodes = replace(nodes, count=quota)  # Kueue admits a job only when all its pods fit the quota
        out.append(KubeTarget(group, nodes, where, quota))
    return out


def _node_checks_script(cluster: ClusterPlan, t: KubeTarget, image: str) -> str:
    g = t.group
    job = Job("node-checks.sh", g.name, g.instance_type, cluster.driver.flavour, t.nodes.gpus, "node", t.nodes.count,
              None, None, None, "per-node checks", image, k8s.NCCL_TESTS_DIR,
              catalog.get(g.instance_type).nvlinks_per_gpu, None)
    return render_job(job, cluster)


@dataclass(frozen=True)
class Rendered:
    files: list[Path]
    instructions: str


def _write(path: Path, objects: list[dict], files: list[Path]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(k8s.to_yaml(objects), encoding="utf-8")
    files.append(path)


def render_acceptance(cluster: ClusterPlan, out: Path, *, image: str | None = None,
                      nccl_tests_dir: str | None = None, fsx=None) -> Rendered:
    """Per group: ``GROUP/node-checks.yaml`` (the script's ConfigMap and a Job of one pod per node) and, with two
    nodes or more, ``GROUP/nccl.yaml`` (an MPIJob across them); README.md and acceptance.json. ``fsx`` is unused:
    the jobs mount no file system (the stack binds FSx as each namespace's ``fsx`` claim)."""
    del fsx
    if image is None:
        raise BootstrapError("orchestrator.type hyperpod-eks runs the acceptance jobs in containers: give --image, an "
                             f"image with nccl-tests (built with MPI) in {k8s.NCCL_TESTS_DIR} (or --nccl-tests-dir), "
                             "Open MPI, sshd, EFA and dcgmi for the node checks (e.g. mpi-operator's nccl-tests "
                             "image built with EFA, in your ECR)")
    tests_dir = nccl_tests_dir or k8s.NCCL_TESTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    (out / "logs" / "README.txt").write_text(LOGS_NOTE, encoding="utf-8")
    files: list[Path] = []
    manifest, steps = [], []
    for t in kube_targets(cluster):
        name = f"{SCRIPTS}-{t.group.name}"
        # node-checks.sh runs the bootstrap's health check beside it, as the Slurm jobs' folder has it
        health = render_files(_context(cluster, t.group.name, cluster.driver.flavour, None))[HEALTHCHECK_STEP]
        config = k8s.config_map(name, {k8s.NODE_CHECKS: _node_checks_script(cluster, t, image),
                                       "healthcheck.sh": health}, t.placement)
        _write(out / t.group.name / "node-checks.yaml",
               [config, k8s.node_checks_job(t.nodes, image, t.placement, name)], files)
        # what the report expects a log of (fmcluster.acceptance.report: every node's checks, every test's run)
        jobs = [{"file": f"{t.group.name}/node-checks.yaml", "scope": "node", "tests": []}]
        if t.nodes.count >= 2:
            _write(out / t.group.name / "nccl.yaml",
                   [k8s.nccl_mpijob(t.nodes, image, t.placement, nccl_tests_dir=tests_dir)], files)
            jobs.append({"file": f"{t.group.name}/nccl.yaml", "scope": "group", "tests": list(k8s.TESTS)})
        manifest.append({"group": t.group.name, "instance_type": t.group.instance_type, "nodes": t.nodes.count,
                         "group_nodes": t.group.count,
                         "gpus_per_node": t.nodes.gpus, "efa_devices": t.nodes.efa, "namespace": t.placement.namespace,
                         "team": t.placement.team, "image": image, "nccl_tests_dir": tests_dir, "jobs": jobs})
        steps.append(_steps(t))
    text = _readme(cluster, steps)
    (out / "README.md").write_text(text, encoding="utf-8")
    (out / "acceptance.json").write_text(json.dumps({"project": cluster.project, "orchestrator": cluster.orchestrator,
                                                     "groups": manifest}, indent=2) + "\n", encoding="utf-8")
    return Rendered(files, text)


def _ns(t: KubeTarget) -> str:
    return f"-n {t.placement.namespace}"


def _steps(t: KubeTarget) -> str:
    g, ns, n = t.group, _ns(t), t.nodes.count
    lines = [f"## {g.name}: {g.count} x {g.instance_type} (namespace {t.placement.namespace}"
             + (f", team {t.placement.team}'s queue" if t.placement.team else "") + ")", "", "```",
             f"kubectl apply -f {g.name}/node-checks.yaml",
             f"kubectl {ns} wait --for=condition=complete --timeout=30m job/fmc-node-checks-{g.name}",
             f"kubectl {ns} logs -l job-name=fmc-node-checks-{g.name} --prefix --tail=-1 "
             f"--max-log-requests={max(n, 5)} > logs/node-checks-{g.name}.log"]
    if n >= 2:
        lines += [f"kubectl apply -f {g.name}/nccl.yaml",
                  f"kubectl {ns} wait --for=condition=Succeeded --timeout=60m mpijob/fmc-nccl-{g.name}",
                  f"kubectl {ns} logs job/fmc-nccl-{g.name}-launcher --tail=-1 > logs/nccl-{g.name}.log"]
    lines.append("```")
    if n < 2:
        lines.append("One node: no NCCL run across nodes.")
    if n < g.count:
        lines.append(f"Team {t.placement.team}'s quota admits {n} of the {g.count} nodes (guaranteed, and what it may "
                     "borrow from teams that lend): the jobs run on that many, since Kueue admits a job only when all "
                     "of it fits; run them again once they finish to check the other nodes.")
    return "\n".join(lines)


def _readme(cluster: ClusterPlan, steps: list[str]) -> str:
    return "\n".join([
        f"# Acceptance jobs for {cluster.project} ({cluster.orchestrator})", "",
        ("With kubectl pointed at the cluster (`aws eks update-kubeconfig`), from this folder: apply each group's "
         "jobs, wait, save their logs into logs/, then `fmcluster acceptance report .` (exit 1 on a failed check). "
         "The node checks run one pod per node, asking for all its GPUs and EFA interfaces; nccl-tests runs as an "
         "MPIJob (mpi-operator, from the HyperPod Helm chart), one worker per node."), "", *steps, ""])


# --- the first training job ------------------------------------------------------------------------------------------

def render_first_job(cluster: ClusterPlan, out: Path, *, image: str | None = None, fsx=None) -> Rendered:
    """``out/first-job/GROUP.yaml`` per group: the training scripts' ConfigMap and a PyTorchJob running torchrun on
    every node, data and checkpoints on the namespace's FSx claim (``/fsx/fmcluster-first-job``)."""
    del fsx
    if cluster.fsx_mount_path is None:
        raise FirstJobError("the first job keeps its data and checkpoints on FSx for Lustre, which its pods mount as "
                            "their namespace's `fsx` claim: this project has none (set storage.fsx.enabled: true)")
    folder = out / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    scripts = {name: (TEMPLATES_DIR / name).read_text(encoding="utf-8") for name in k8s.FIRST_JOB_SCRIPTS}
    files: list[Path] = []
    pinned = default_versions().first_job_image
    lines = []
    try:
        targets = kube_targets(cluster)
    except BootstrapError as exc:  # the first-job command reports FirstJobError as a usage error
        raise FirstJobError(str(exc)) from exc
    for t in targets:
        chosen = image or pinned.for_arch(KERNEL_ARCH[t.group.architecture])
        name = f"{FIRST_JOB_SCRIPTS}-{t.group.name}"
        job = k8s.first_job_pytorchjob(t.nodes, chosen, t.placement, name, work_dir=f"{MOUNT_PATH}/{WORK_DIR_NAME}",
                                       peak_tflops=peak_tflops_per_gpu(t.group.instance_type))
        _write(folder / f"{t.group.name}.yaml", [k8s.config_map(name, scripts, t.placement), job], files)
        ns = _ns(t)
        sized = ("" if t.nodes.count == t.group.count
                 else f" (on {t.nodes.count}: what team {t.placement.team}'s quota admits)")
        lines += [f"  {t.group.name}: {t.group.count} x {t.group.instance_type}{sized}, image {chosen}, namespace "
                  f"{t.placement.namespace}",
                  f"    kubectl apply -f {folder / (t.group.name + '.yaml')}",
                  # the training operator names the master's pod JOB-master-0
                  f"    kubectl {ns} logs -f {job['metadata']['name']}-master-0   # step time, tokens/s, MFU"]
    return Rendered(files, "\n".join(lines))

