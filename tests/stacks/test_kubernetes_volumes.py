"""The FSx volumes' manifest as the stack applies it: one PV and claim per namespace, every object valid against the
Kubernetes schema, applied after what it is told to wait for; nothing without FSx."""

from __future__ import annotations

import json

from aws_cdk import App, CfnResource, Stack
from aws_cdk import aws_eks_v2 as eks2
from fmcluster.stacks.kubernetes_volumes import add_fsx_volumes
from support import kubernetes as k8s
from support import load

from fmcluster import checks
from fmcluster.contracts import MountContract

FSX = MountContract("fs-0123456789abcdef0", "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com", "abcdefgh", "/fsx",
                    False)


def _plan(task_governance: bool):
    loaded = load({"name": "k8s", "availability_zone_id": "use1-az6", "os": "al2023",
                   "orchestrator": {"type": "hyperpod-eks", "hyperpod_eks": {
                       "task_governance": task_governance, "admins": ["arn:aws:iam::111122223333:role/admin"]}},
                   "compute_groups": [{"name": "train", "instance_type": "p5.48xlarge", "count": 4}],
                   # teams need task governance on HyperPod EKS (the hyperpod-eks-teams check)
                   "teams": [{"name": "research", "instances": {"train": {"guaranteed": 2}}}] if task_governance
                   else []})
    return checks.validate(loaded)[0].cluster


def _synth(cluster_plan, fsx=FSX) -> dict | None:
    app = App()
    stack = Stack(app, "S")
    handler = eks2.KubectlProvider.from_kubectl_provider_attributes(
        stack, "Kubectl", service_token="arn:aws:lambda:us-east-1:000000000000:function:kubectl")
    cluster = eks2.Cluster.from_cluster_attributes(stack, "Eks", cluster_name="k8s", kubectl_provider=handler)
    quota = CfnResource(stack, "Quota", type="AWS::SageMaker::ComputeQuota", properties={})
    if add_fsx_volumes(stack, cluster, cluster_plan, fsx, 1200, after=[quota]) is None:
        return None
    return app.synth().get_stack_by_name("S").template


def _manifest(template: dict) -> tuple[str, dict, list[dict]]:
    (logical, resource), = [(k, v) for k, v in template["Resources"].items()
                            if v["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"]
    return logical, resource, json.loads(resource["Properties"]["Manifest"])


def test_one_volume_and_claim_per_namespace_and_all_valid():
    _, resource, objects = _manifest(_synth(_plan(True)))
    assert [(o["kind"], o["metadata"].get("namespace")) for o in objects] == [
        ("PersistentVolume", None), ("PersistentVolumeClaim", "default"),
        ("PersistentVolume", None), ("PersistentVolumeClaim", "hyperpod-ns-research")]
    handles = {o["spec"]["csi"]["volumeHandle"] for o in objects if o["kind"] == "PersistentVolume"}
    assert handles == {FSX.file_system_id}
    assert k8s.validate_all(objects) == {}
    assert "Quota" in resource.get("DependsOn", [])


def test_without_task_governance_only_default_and_without_fsx_nothing():
    _, _, objects = _manifest(_synth(_plan(False)))
    assert {o["metadata"].get("namespace") for o in objects} == {None, "default"}
    assert _synth(_plan(False), fsx=None) is None
