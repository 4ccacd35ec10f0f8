"""Every Kubernetes object fmcluster generates validates against its schema (built-in kinds: kubernetes-validate;
MPIJob, PyTorchJob: their CRDs, unknown fields refused), and a wrong field fails for each kind."""

from __future__ import annotations

import copy

import jsonschema
import pytest
import yaml
from support import kubernetes as k8s

from fmcluster.kubernetes import jobs, volumes
from fmcluster.kubernetes.nodes import (
    EFA_RESOURCE,
    GPU_RESOURCE,
    GROUP_LABEL,
    NodeGroup,
    Taint,
)

TAINT = Taint("fmcluster/gpu", "true", "NoSchedule")
P5 = NodeGroup("train", "p5.48xlarge", 4, taints=(TAINT,))
TEAM = jobs.Placement(namespace="hyperpod-ns-research", team="research", priority="training")
FS = ("fs-0123456789abcdef0", "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com", "abcdefgh")


def _objects() -> dict[str, dict]:
    config = jobs.config_map("fmc-scripts", {"node-checks.sh": "#!/bin/bash\necho hi\n"}, TEAM)
    pv, pvc = volumes.fsx_volumes("proj", ["hyperpod-ns-research"], *FS, 1200)
    return {
        "ConfigMap": config, "PersistentVolume": pv, "PersistentVolumeClaim": pvc,
        "MPIJob": jobs.nccl_mpijob(P5, "public.ecr.aws/hpc-cloud/nccl-tests:latest", TEAM),
        "Job": jobs.node_checks_job(P5, "nccl-tests:latest", TEAM, "fmc-scripts"),
        "PyTorchJob": jobs.first_job_pytorchjob(P5, "pytorch:latest", TEAM, "fmc-first-job",
                                               work_dir="/fsx/fmcluster-first-job", peak_tflops=989.5),
    }


@pytest.mark.parametrize("kind", sorted(_objects()))
def test_every_generated_object_validates(kind):
    obj = _objects()[kind]
    assert obj["kind"] == kind
    assert k8s.validate(obj) == []
    # and survives the trip through the YAML kubectl applies
    assert list(yaml.safe_load_all(jobs.to_yaml([obj]))) == [obj]


WRONG = {
    # an unknown field at each level a typo lands on, and a wrong type
    "ConfigMap": ("data", {"a": 1}),
    "PersistentVolume": ("spec.csi.volumeHandel", "fs-1"),
    "PersistentVolumeClaim": ("spec.storageClass", ""),
    "MPIJob": ("spec.mpiReplicaSpecs.Worker.template.spec.containers.0.resource", {}),
    "Job": ("spec.template.spec.nodeSelectors", {}),
    "PyTorchJob": ("spec.pytorchReplicaSpecs.Master.replica", 1),
}


def _set(obj: dict, path: str, value) -> dict:
    bad = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node = bad
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    node[last] = value
    return bad


@pytest.mark.parametrize("kind", sorted(WRONG))
def test_a_wrong_field_fails_for_each_kind(kind):
    path, value = WRONG[kind]
    assert k8s.validate(_set(_objects()[kind], path, value)), f"{kind}: {path}={value!r} passed"


@pytest.mark.parametrize("kind, path, value", [
    ("MPIJob", "spec.mpiImplementation", "OpenMPI4"),  # an enum the CRD states
    ("MPIJob", "spec.runPolicy.cleanPodPolicies", "Running"),
    ("PyTorchJob", "spec.nprocPerNode", 8),  # a string in kubeflow.org/v1
    ("MPIJob", "metadata.label", {"a": "b"}),  # ObjectMeta, through the built-in schema
    ("PyTorchJob", "metadata.namespace", 3),
])
def test_custom_resources_are_judged_by_their_crds(kind, path, value):
    assert k8s.validate(_set(_objects()[kind], path, value))


def test_the_closed_schema_keeps_what_the_crd_preserves():
    schema = {"type": "object", "properties": {"a": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                                      "properties": {"b": {"type": "string"}}}}}
    closed = k8s.closed(schema)
    assert closed["additionalProperties"] is False
    assert "additionalProperties" not in closed["properties"]["a"]


def test_workers_ask_for_every_gpu_and_efa_interface_of_their_node():
    job = _objects()["MPIJob"]
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 4
    limits = worker["template"]["spec"]["containers"][0]["resources"]["limits"]
    # p5.48xlarge: 8 GPUs, 32 EFA interfaces (catalog); with EFA the huge pages and memory of the EKS user guide's EFA
    # page (node-efa.adoc: the EFA driver pre-allocates 5128 2 MiB pages; its p5 worker asks 5120Mi and 32000Mi)
    efa = {"hugepages-2Mi": "5120Mi", "memory": "32000Mi"}
    assert limits == {GPU_RESOURCE: 8, EFA_RESOURCE: 32} | efa
    assert worker["template"]["spec"]["containers"][0]["resources"]["requests"] == limits  # huge pages: equal
    assert job["spec"]["slotsPerWorker"] == 8
    p5en = jobs.nccl_mpijob(NodeGroup("infer", "p5en.48xlarge", 2), "img", jobs.Placement())
    limits = p5en["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {GPU_RESOURCE: 8, EFA_RESOURCE: 16} | efa
    for kind in ("Job", "PyTorchJob"):  # every EFA pod, not only nccl-tests'
        for pod in _pod_specs(_objects()[kind]):
            assert pod["containers"][0]["resources"]["limits"] == {GPU_RESOURCE: 8, EFA_RESOURCE: 32} | efa, kind


def test_the_launcher_tolerates_its_groups_taints_and_not_the_health_taint():
    """Under task governance Kueue places every pod of the admitted job on the quota's flavor (the GPU group), the
    launcher too: it must tolerate the group's taints, as the workers do, and not HyperPod's node-health taint."""
    job = _objects()["MPIJob"]
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    assert launcher["tolerations"] == [{"key": "fmcluster/gpu", "operator": "Equal", "value": "true",
                                        "effect": "NoSchedule"}]
    assert not [t for t in launcher["tolerations"] if t["key"] == "sagemaker.amazonaws.com/node-health-status"]
    untainted = jobs.nccl_mpijob(NodeGroup("cpu", "p5.48xlarge", 2), "img", jobs.Placement())
    assert "tolerations" not in untainted["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]


def test_pods_land_on_their_group_and_tolerate_its_taints():
    for kind in ("MPIJob", "Job", "PyTorchJob"):
        obj = _objects()[kind]
        pods = _pod_specs(obj)
        gpu_pods = [p for p in pods if GPU_RESOURCE in p["containers"][0]["resources"].get("limits", {})]
        assert gpu_pods, kind
        for pod in gpu_pods:
            assert pod["nodeSelector"][GROUP_LABEL] == "train"
            assert pod["nodeSelector"]["node.kubernetes.io/instance-type"] == "ml.p5.48xlarge"
            assert pod["tolerations"] == [{"key": "fmcluster/gpu", "operator": "Equal", "value": "true",
                                           "effect": "NoSchedule"}]
        assert obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "hyperpod-ns-research-localqueue"
        assert obj["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "training-priority"
        assert obj["metadata"]["namespace"] == "hyperpod-ns-research"


def test_no_queue_label_without_task_governance():
    obj = jobs.nccl_mpijob(P5, "img", jobs.Placement())
    assert "kueue.x-k8s.io/queue-name" not in obj["metadata"]["labels"]
    assert obj["metadata"]["namespace"] == "default"


def _pod_specs(obj: dict) -> list[dict]:
    spec = obj["spec"]
    if obj["kind"] == "Job":
        return [spec["template"]["spec"]]
    replicas = spec.get("mpiReplicaSpecs") or spec["pytorchReplicaSpecs"]
    return [r["template"]["spec"] for r in replicas.values()]


def test_every_container_has_the_nccl_environment():
    for kind in ("MPIJob", "Job", "PyTorchJob"):
        for pod in _pod_specs(_objects()[kind]):
            env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
            assert env["NCCL_NET_PLUGIN"] == "ofi" and env["NCCL_DEBUG"] == "INFO", kind


def test_a_one_node_group_has_no_mpijob_and_a_master_only_first_job():
    one = NodeGroup("solo", "p5.48xlarge", 1)
    with pytest.raises(ValueError, match="needs 2"):
        jobs.nccl_mpijob(one, "img", jobs.Placement())
    job = jobs.first_job_pytorchjob(one, "img", jobs.Placement(), "cm", work_dir="/fsx/w")
    assert list(job["spec"]["pytorchReplicaSpecs"]) == ["Master"]
    assert k8s.validate(job) == []


def test_fsx_volumes_are_static_retained_and_one_pair_per_namespace():
    objs = volumes.fsx_volumes("proj", ["default", "hyperpod-ns-a", "default"], *FS, 1200)
    assert [(o["kind"], o["metadata"].get("namespace")) for o in objs] == [
        ("PersistentVolume", None), ("PersistentVolumeClaim", "default"),
        ("PersistentVolume", None), ("PersistentVolumeClaim", "hyperpod-ns-a")]
    for pv, pvc in zip(objs[::2], objs[1::2]):
        assert pv["spec"]["csi"] == {"driver": "fsx.csi.aws.com", "volumeHandle": FS[0],
                                     "volumeAttributes": {"dnsname": FS[1], "mountname": FS[2]}}
        assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        assert pv["spec"]["storageClassName"] == "" == pvc["spec"]["storageClassName"]
        assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert len({pv["metadata"]["name"] for pv in objs[::2]}) == 2
    assert k8s.validate_all(objs) == {}


def test_the_launcher_frames_each_run_for_the_report():
    script = jobs.launcher_script(P5)
    assert script.count("FMC-ACCEPTANCE kind=nccl") == 1 and "for test in all_reduce_perf all_gather_perf" in script
    assert "-np 32 -N 8" in script
    assert "-x NCCL_DEBUG -x NCCL_NET_PLUGIN" in script


def test_the_nccl_environment_is_the_slurm_jobs():
    """NCCL_ENV restates what the Slurm jobs set: the acceptance jobs' common part exports NCCL_DEBUG=INFO, and the
    bootstrap's NCCL profile names the plugin ofi and sets nothing else of NCCL's."""
    common = (k8s.ROOT / "templates/acceptance/common.sh.j2").read_text()
    profile = (k8s.ROOT / "templates/bootstrap/partials/nccl_profile.sh.j2").read_text()
    assert f"export NCCL_DEBUG={jobs.NCCL_ENV['NCCL_DEBUG']}" in common
    assert f"NCCL_NET_PLUGIN={jobs.NCCL_ENV['NCCL_NET_PLUGIN']}\n" in profile
    code = [line for line in profile.splitlines() if not line.lstrip().startswith("#")]
    set_there = {w.split("=")[0] for line in code for w in line.split() if w.startswith("NCCL_") and "=" in w}
    assert set_there == set(jobs.NCCL_ENV) - {"NCCL_DEBUG"}


def test_unknown_fields_pass_the_plain_crd_and_fail_the_closed_one():
    """The reason for :func:`support.kubernetes.closed`: the published CRD alone lets a typo through (the API server
    would prune it silently)."""
    bad = _set(_objects()["MPIJob"], "spec.slotPerWorker", 8)
    schema = k8s._crds()[("kubeflow.org/v2beta1", "MPIJob")]
    assert list(jsonschema.Draft7Validator(schema).iter_errors(bad | {"metadata": {}})) == []
    assert k8s.validate(bad)


def test_the_namespaces_that_mount_fsx():
    assert volumes.namespaces(["a", "b"], True) == ["default", "hyperpod-ns-a", "hyperpod-ns-b"]
    assert volumes.namespaces(["a"], False) == ["default"]
