"""Render a Kubernetes project's acceptance jobs and first training job (``fmcluster acceptance render`` and
``first-job`` for HyperPod on EKS): the objects of :mod:`fmcluster.kubernetes.jobs` as YAML files to
``kubectl apply``, with the same node-check script the Slurm jobs run (``node_checks.sh.j2``, in a ConfigMap) and
the same training script (``first_job_train.py``), and a README saying how to save ``kubectl logs`` where
``fmcluster acceptance report`` reads them.

The groups' labels and taints are the project's (``orchestrator.hyperpod_eks.groups``: what the cluster stack puts in
each instance group's ``KubernetesConfig``). With task governance, a group's jobs run in the namespace of the team that
may hold the most of its instances (``guaranteed + borrow``) and carry that team's Kueue queue label.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from fmcluster.bootstrap.acceptance import (
    HEALTHCHECK_STEP,
    TEMPLATES_DIR,
    Job,
    _context,
    render_job,
)
from fmcluster.bootstrap.first_job import FOLDER, WORK_DIR_NAME, FirstJobError, peak_tflops_per_gpu
from fmcluster.bootstrap.render import render_files
from fmcluster.bootstrap.versions import BootstrapError, default_versions

from fmcluster import catalog
from fmcluster.facts import KERNEL_ARCH
from fmcluster.kubernetes import jobs as k8s
from fmcluster.kubernetes.governance import JOB_PRIORITY, team_namespace
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
    placement: k8s.Placement
    quota: int | None
    """The instances the placement's team may hold in the group (None: no task governance)."""


def node_group(cluster: ClusterPlan, group: GroupPlan) -> NodeGroup:
    settings = cluster.hyperpod_eks.group(group.name)
    taints = tuple(Taint(t.key, t.value, t.effect) for t in settings.node_taints)
    return NodeGroup(group.name, group.instance_type, group.count, dict(settings.labels), taints)


def placement(cluster: ClusterPlan, group: str) -> tuple[k8s.Placement, int | None]:
    if not cluster.hyperpod_eks.task_governance or not cluster.teams:
        return k8s.Placement(), None
    shares = [(s.guaranteed + s.borrow, team.name) for team in cluster.teams if (s := team.instances.get(group))]
    if not shares:
        return k8s.Placement(), None
    most, team = max(shares, key=lambda share: share[0])  # the first such team in the file on a tie
    return k8s.Placement(namespace=team_namespace(team), team=team, priority=JOB_PRIORITY), most


def kube_targets(cluster: ClusterPlan) -> list[KubeTarget]:
    out = []
    for group in cluster.groups:
        where, quota = placement(cluster, group.name)
        out.append(KubeTarget(group, node_group(cluster, group), where, quota))
    return out


def _node_checks_script(cluster: ClusterPlan, t: KubeTarget, image: str) -> str:
    g = t.group
    job = Job("node-checks.sh", g.name, g.instance_type, cluster.driver.flavour, t.nodes.gpus, "node", g.count, None,
              None, None, "per-node checks", image, k8s.NCCL_TESTS_DIR, catalog.get(g.instance_type).nvlinks_per_gpu,
              None)
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
        if t.group.count >= 2:
            _write(out / t.group.name / "nccl.yaml",
                   [k8s.nccl_mpijob(t.nodes, image, t.placement, nccl_tests_dir=tests_dir)], files)
            jobs.append({"file": f"{t.group.name}/nccl.yaml", "scope": "group", "tests": list(k8s.TESTS)})
        manifest.append({"group": t.group.name, "instance_type": t.group.instance_type, "nodes": t.group.count,
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
    g, ns = t.group, _ns(t)
    lines = [f"## {g.name}: {g.count} x {g.instance_type} (namespace {t.placement.namespace}"
             + (f", team {t.placement.team}'s queue" if t.placement.team else "") + ")", "", "```",
             f"kubectl apply -f {g.name}/node-checks.yaml",
             f"kubectl {ns} wait --for=condition=complete --timeout=30m job/fmc-node-checks-{g.name}",
             f"kubectl {ns} logs -l job-name=fmc-node-checks-{g.name} --prefix --tail=-1 "
             f"--max-log-requests={max(g.count, 5)} > logs/node-checks-{g.name}.log"]
    if g.count >= 2:
        lines += [f"kubectl apply -f {g.name}/nccl.yaml",
                  f"kubectl {ns} wait --for=condition=Succeeded --timeout=60m mpijob/fmc-nccl-{g.name}",
                  f"kubectl {ns} logs job/fmc-nccl-{g.name}-launcher --tail=-1 > logs/nccl-{g.name}.log"]
    lines.append("```")
    if g.count < 2:
        lines.append("One node: no NCCL run across nodes.")
    if t.quota is not None and t.quota < g.count:
        lines.append(f"Team {t.placement.team} may hold {t.quota} of the {g.count} nodes (guaranteed + borrow): Kueue "
                     "admits the jobs, which need every node, only when the quota allows it; run them before the "
                     "teams' work, or from a team whose quota covers the group.")
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
    for t in kube_targets(cluster):
        chosen = image or pinned.for_arch(KERNEL_ARCH[t.group.architecture])
        name = f"{FIRST_JOB_SCRIPTS}-{t.group.name}"
        job = k8s.first_job_pytorchjob(t.nodes, chosen, t.placement, name, work_dir=f"{MOUNT_PATH}/{WORK_DIR_NAME}",
                                       peak_tflops=peak_tflops_per_gpu(t.group.instance_type))
        _write(folder / f"{t.group.name}.yaml", [k8s.config_map(name, scripts, t.placement), job], files)
        ns = _ns(t)
        lines += [f"  {t.group.name}: {t.group.count} x {t.group.instance_type}, image {chosen}, namespace "
                  f"{t.placement.namespace}",
                  f"    kubectl apply -f {folder / (t.group.name + '.yaml')}",
                  # the training operator names the master's pod JOB-master-0
                  f"    kubectl {ns} logs -f {job['metadata']['name']}-master-0   # step time, tokens/s, MFU"]
    return Rendered(files, "\n".join(lines))

