"""The acceptance jobs and the first training job as Kubernetes objects.

- nccl-tests across a group's nodes: an MPIJob (``kubeflow.org/v2beta1``, the mpi-operator the HyperPod Helm chart
  installs), one worker per node asking for all its GPUs and EFA interfaces; the launcher prints each run between the
  ``FMC-ACCEPTANCE``/``FMC-END`` lines ``fmcluster acceptance report`` reads, so ``kubectl logs`` of the launcher
  is an acceptance log.
- The node checks: a Job of one pod per node (completions = parallelism = nodes, pod anti-affinity on the node's
  host name), each pod running the node-check script from a ConfigMap and printing its logs.
- The first training job: a PyTorchJob (``kubeflow.org/v1``) running ``torchrun`` on the first-job training script
  (from a ConfigMap); the training operator sets ``PET_NNODES``, ``PET_NPROC_PER_NODE``, ``PET_NODE_RANK``,
  ``PET_MASTER_ADDR``/``PORT``, which torchrun reads as its arguments (kubeflow/training-operator
  ``pkg/controller.v1/pytorch/envvar.go``; torch ``distributed/argparse_util.py``: ``PET_`` + the option).

Every job runs in a namespace (the default one, or a team's ``hyperpod-ns-<team>``) and, with task governance, carries
its team's Kueue queue label on the top-level object (where Kueue reads it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from fmcluster.kubernetes.governance import (
    PRIORITY_LABEL,
    QUEUE_LABEL,
    priority_label,
    team_queue,
)
from fmcluster.kubernetes.nodes import NodeGroup
from fmcluster.kubernetes.volumes import pod_volume

NCCL_ENV = {"NCCL_DEBUG": "INFO", "NCCL_NET_PLUGIN": "ofi"}
"""The NCCL settings of every acceptance and training job, the Slurm jobs' decisions (templates/acceptance/common.sh.j2
sets NCCL_DEBUG=INFO, whose INIT lines prove the transport; templates/bootstrap/partials/nccl_profile.sh.j2 gives
NCCL the plugin by name, ``ofi``, which every NCCL from 2.18 opens as libnccl-net-ofi.so, and sets no tuning or
tuner variables). In a container the image's loader path finds the plugin (AWS's images put aws-ofi-nccl's folder on
LD_LIBRARY_PATH); tests/kubernetes holds this to the Slurm templates."""
TESTS = ("all_reduce_perf", "all_gather_perf")
NCCL_TESTS_DIR = "/opt/nccl-tests/build"
"""Where AWS's nccl-tests image has the binaries (awsome-distributed-training ``micro-benchmarks/nccl-tests/
nccl-tests.Dockerfile`` builds them there); ``--nccl-tests-dir`` for another image."""
SCRIPTS_MOUNT = "/fmc/scripts"
MANAGED = {"app.kubernetes.io/managed-by": "fmcluster"}


@dataclass(frozen=True)
class Placement:
    """Where a job runs: its namespace, and the team's queue when task governance admits it."""

    namespace: str = "default"
    team: str | None = None
    """The team whose quota admits the job (None: no task governance; the job is not queued)."""
    priority: str | None = None
    """A priority class of the scheduler config (None: the team's default)."""

    def labels(self) -> dict[str, str]:
        out = dict(MANAGED)
        if self.team is not None:
            out[QUEUE_LABEL] = team_queue(self.team)
            if self.priority is not None:
                out[PRIORITY_LABEL] = priority_label(self.priority)
        return out


def _env(extra: Mapping[str, str] | None = None) -> list[dict]:
    values = dict(NCCL_ENV) | dict(extra or {})
    return [{"name": k, "value": str(v)} for k, v in sorted(values.items())]


def _shm() -> tuple[dict, dict]:
    # NCCL's intra-node buffers live in /dev/shm; a container's default 64 MiB is too small (awsome-distributed-
    # training's EKS manifests mount a memory emptyDir there)
    return {"name": "dshm", "emptyDir": {"medium": "Memory"}}, {"name": "dshm", "mountPath": "/dev/shm"}


def _metadata(name: str, placement: Placement, group: NodeGroup | None = None) -> dict:
    labels = placement.labels()
    if group is not None:
        labels["fmcluster/group"] = group.name
    return {"name": name, "namespace": placement.namespace, "labels": labels}


def config_map(name: str, files: Mapping[str, str], placement: Placement) -> dict:
    """The scripts a job runs, as a ConfigMap (mounted at :data:`SCRIPTS_MOUNT`)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": placement.namespace, "labels": dict(MANAGED)},
            "data": dict(sorted(files.items()))}


def _scripts_volume(config: str) -> tuple[dict, dict]:
    return ({"name": "scripts", "configMap": {"name": config, "defaultMode": 0o755}},
            {"name": "scripts", "mountPath": SCRIPTS_MOUNT, "readOnly": True})


def _worker_pod(group: NodeGroup, container: dict, volumes: list[tuple[dict, dict]], **spec: Any) -> dict:
    container = container | {"volumeMounts": [m for _, m in volumes]}
    pod = {"nodeSelector": group.node_selector(), "containers": [container], "volumes": [v for v, _ in volumes]}
    if group.taints:
        pod["tolerations"] = group.tolerations()
    return {"metadata": {"labels": {"fmcluster/group": group.name}}, "spec": pod | spec}


def launcher_script(group: NodeGroup, nccl_tests_dir: str = NCCL_TESTS_DIR, tests: tuple[str, ...] = TESTS) -> str:
    """The MPIJob launcher's command: each test across every worker, framed for the report."""
    ranks = group.count * group.gpus
    lines = [
        "set -uo pipefail",
        "hosts=$(awk '{ print $1 }' /etc/mpi/hostfile | paste -sd, -)",
        f"for test in {' '.join(tests)}; do",
        f'  echo "FMC-ACCEPTANCE kind=nccl test=${{test}} scope=group group={group.name} '
        f'instance_type={group.instance_type} nodes={group.count} hosts=${{hosts}}"',
        "  rc=0",
        f"  mpirun --allow-run-as-root -np {ranks} -N {group.gpus} --bind-to none "
        + " ".join(f"-x {k}" for k in sorted(NCCL_ENV)) + " -x LD_LIBRARY_PATH -x PATH "
        "--mca pml '^ucx' --mca btl tcp,self "
        f'"{nccl_tests_dir}/${{test}}" -b 8 -e 16G -f 2 -g 1 -c 1 -n 20 2>&1 || rc=$?',
        '  echo "FMC-END rc=${rc}"',
        "done",
    ]
    return "\n".join(lines) + "\n"


def nccl_mpijob(group: NodeGroup, image: str, placement: Placement, *, nccl_tests_dir: str = NCCL_TESTS_DIR) -> dict:
    """nccl-tests all_reduce and all_gather across every node of ``group`` (at least 2)."""
    if group.count < 2:
        raise ValueError(f"group {group.name} has {group.count} node: NCCL across nodes needs 2")
    name = f"fmc-nccl-{group.name}"
    command = ["/bin/bash", "-c", launcher_script(group, nccl_tests_dir)]
    launcher = {"name": "launcher", "image": image, "command": command,
                "env": _env(), "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    # The launcher may land on the group's nodes: under task governance Kueue admits the whole job on the team's
    # quota, whose resource flavor is the group's instance type, and so places every pod of it there (Kueue
    # "Resource Flavor": an admitted workload's pods get the flavor's node labels). It then needs the group's taints
    # tolerated as the workers do (nvidia.com/gpu=true:NoSchedule by default), never HyperPod's health taint.
    launcher_pod: dict[str, Any] = {"containers": [launcher]}
    if group.taints:
        launcher_pod["tolerations"] = group.tolerations()
    # No command: mpi-operator v2 runs `/usr/sbin/sshd -De` in a worker without one, after the image's entrypoint
    # (which may set up the ssh credentials it mounts): kubeflow/mpi-operator pkg/controller/mpi_job_controller.go
    worker = {"name": "worker", "image": image, "env": _env(), "resources": group.whole_node()}
    return {
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
        "metadata": _metadata(name, placement, group),
        "spec": {
            "slotsPerWorker": group.gpus,
            "mpiImplementation": "OpenMPI",
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "restartPolicy": "Never",
                             "template": {"spec": launcher_pod}},
                "Worker": {"replicas": group.count, "restartPolicy": "Never",
                           "template": _worker_pod(group, worker, [_shm()])},
            },
        },
    }


NODE_CHECKS = "node-checks.sh"
HEALTH_DIR = "/var/lib/fmcluster"
"""Where the bootstrap's health check writes its verdict on the node (templates/bootstrap/healthcheck.sh.j2)."""


def node_checks_job(group: NodeGroup, image: str, placement: Placement, config: str) -> dict:
    """One pod per node of ``group`` running ``node-checks.sh`` from ConfigMap ``config``, which writes its logs
    under ``FMC_ACCEPTANCE_DIR/logs``; the pod prints them (``kubectl logs`` keeps them)."""
    name = f"fmc-node-checks-{group.name}"
    run = (f'mkdir -p "${{FMC_ACCEPTANCE_DIR}}"; rc=0; bash {SCRIPTS_MOUNT}/{NODE_CHECKS} || rc=$?; '
           'cat "${FMC_ACCEPTANCE_DIR}"/logs/*.log 2>/dev/null; exit "${rc}"')
    container = {"name": "node-checks", "image": image, "command": ["/bin/bash", "-c", run],
                 "env": _env({"FMC_ACCEPTANCE_DIR": "/tmp/fmc-acceptance"}), "resources": group.whole_node()}
    # the verdict the node's bootstrap health check wrote at boot (node-checks.sh reads it where it cannot sudo)
    verdict = ({"name": "fmc-health", "hostPath": {"path": HEALTH_DIR, "type": "DirectoryOrCreate"}},
               {"name": "fmc-health", "mountPath": HEALTH_DIR, "readOnly": True})
    pod = _worker_pod(group, container, [_scripts_volume(config), verdict, _shm()], restartPolicy="Never",
                      # the node's own host name in the logs (node-checks.sh names a node by `hostname -s`)
                      hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet",
                      affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                          {"labelSelector": {"matchLabels": {"fmcluster/job": name}},
                           "topologyKey": "kubernetes.io/hostname"}]}})
    pod["metadata"]["labels"]["fmcluster/job"] = name
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": _metadata(name, placement, group),
        "spec": {"completions": group.count, "parallelism": group.count, "completionMode": "Indexed",
                 "backoffLimit": 0, "template": pod},
    }


FIRST_JOB_SCRIPTS = ("first_job_train.py", "first_job_flops.py")
FIRST_JOB_PORT = 29500


def first_job_pytorchjob(group: NodeGroup, image: str, placement: Placement, config: str, *,
                         work_dir: str, steps: int = 50, peak_tflops: float | None = None) -> dict:
    """torchrun on every node of ``group`` (Master + Workers, ``nprocPerNode`` = GPUs), data and checkpoints on the
    namespace's FSx claim under ``work_dir``."""
    name = f"fmc-first-job-{group.name}"
    args = [f"{SCRIPTS_MOUNT}/first_job_train.py", "--data-dir", f"{work_dir}/data", "--checkpoint-dir",
            f"{work_dir}/checkpoints", "--steps", str(steps), "--instance-type", group.instance_type]
    if peak_tflops is not None:
        args += ["--peak-tflops-per-gpu", f"{peak_tflops:g}"]
    container = {"name": "pytorch", "image": image, "command": ["torchrun"], "args": args, "env": _env(),
                 "ports": [{"name": "pytorchjob-port", "containerPort": FIRST_JOB_PORT}],
                 "resources": group.whole_node()}
    volumes = [_scripts_volume(config), pod_volume(), _shm()]

    def replica(count: int) -> dict:
        return {"replicas": count, "restartPolicy": "Never", "template": _worker_pod(group, container, volumes)}

    replicas = {"Master": replica(1)}
    if group.count > 1:
        replicas["Worker"] = replica(group.count - 1)
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": _metadata(name, placement, group),
        "spec": {"nprocPerNode": str(group.gpus), "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 0},
                 "pytorchReplicaSpecs": replicas},
    }


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (scripts) as literal blocks, readable in the file ``kubectl apply`` takes."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def to_yaml(objects: list[dict]) -> str:
    """Objects as one multi-document YAML stream, keys in their built order (``kubectl apply -f``)."""
    return "".join("---\n" + yaml.dump(o, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
                   for o in objects)
