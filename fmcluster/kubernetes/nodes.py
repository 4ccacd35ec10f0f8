"""A compute group as Kubernetes sees it, and how a pod asks for one of its nodes.

HyperPod labels every node of an instance group ``sagemaker.amazonaws.com/instance-group-name=<group>`` and the
kubelet labels it ``node.kubernetes.io/instance-type=ml.<type>`` (AWS docs, "SageMaker HyperPod EKS": node labels;
Kubernetes well-known labels). The instance group's ``KubernetesConfig`` adds the project's labels and taints (the
HyperPod stack, fmcluster.stacks); the same values come in here as explicit inputs so that the pods match them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from fmcluster import catalog

GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
"""HyperPod's label naming a node's instance group (= the compute group's name)."""
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
GPU_RESOURCE = "nvidia.com/gpu"
"""What the NVIDIA device plugin (in the HyperPod Helm chart) advertises per GPU."""
EFA_RESOURCE = "vpc.amazonaws.com/efa"
"""What the EFA device plugin advertises per EFA interface (FACTS.md section 5b)."""
HEALTH_TAINT = "sagemaker.amazonaws.com/node-health-status"
"""The taint HyperPod puts on a node while it checks it (FACTS.md section 5b): jobs do not tolerate it."""
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
HUGEPAGES_RESOURCE = "hugepages-2Mi"
EFA_HUGEPAGES = "5120Mi"
EFA_MEMORY = "32000Mi"
"""What a pod using EFA asks for besides the interfaces, as the EKS user guide's EFA page does: "Amazon EC2 instances
with the EFA driver installed pre-allocate 5128 2MiB Huge Pages, which you can request as resources", and its
nccl-tests MPIJob's p5.48xlarge worker requests (= limits) ``hugepages-2Mi: 5120Mi`` and ``memory: 32000Mi`` beside
``nvidia.com/gpu: 8`` and ``vpc.amazonaws.com/efa: 32`` (awsdocs/amazon-eks-user-guide@
3088c3d146859e8c0408d7d28a112c3d9f92252f latest/ug/ml/node-efa.adoc, "Prerequisites" note and "Test the performance
of the EFA"). Kubernetes requires a pod asking for huge pages to ask for memory or CPU too, requests equal to limits
(Kubernetes docs, "Manage HugePages")."""


@dataclass(frozen=True)
class Taint:
    key: str
    value: str | None
    effect: str

    def __post_init__(self) -> None:
        if self.effect not in EFFECTS:
            raise ValueError(f"taint {self.key}: effect {self.effect!r} is not one of {', '.join(EFFECTS)}")

    def toleration(self) -> dict:
        """The toleration that matches exactly this taint."""
        if self.value is None:
            return {"key": self.key, "operator": "Exists", "effect": self.effect}
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


@dataclass(frozen=True)
class NodeGroup:
    """One compute group's nodes: what a pod needs to land on them and to use all of one."""

    name: str
    instance_type: str
    """The EC2 name (``p5.48xlarge``); :attr:`sagemaker_type` is HyperPod's."""
    count: int
    labels: Mapping[str, str] = field(default_factory=dict)
    """Labels fmcluster puts on the group's nodes (``KubernetesConfig.Labels``), beyond HyperPod's own."""
    taints: tuple[Taint, ...] = ()
    """Taints fmcluster puts on them (``KubernetesConfig.Taints``): the group's pods tolerate each."""

    @property
    def sagemaker_type(self) -> str:
        return catalog.hyperpod_type(self.instance_type)

    @property
    def gpus(self) -> int:
        """GPUs per node (the catalog)."""
        return catalog.get(self.instance_type).gpus

    @property
    def efa(self) -> int:
        """EFA interfaces per node: HyperPod attaches as many as the type takes (the catalog's maximum), and the EFA
        device plugin advertises each (awsome-distributed-training's HyperPod EKS nccl-tests manifests ask for 32
        on p5.48xlarge, 16 on p5en.48xlarge)."""
        return catalog.get(self.instance_type).max_efa_interfaces

    def node_selector(self) -> dict[str, str]:
        return {GROUP_LABEL: self.name, INSTANCE_TYPE_LABEL: self.sagemaker_type}

    def tolerations(self) -> list[dict]:
        return [t.toleration() for t in self.taints]

    def whole_node(self) -> dict:
        """Container resources asking for every GPU and EFA interface of a node (limits = requests: extended
        resources cannot be overcommitted), with the huge pages and memory EFA needs (:data:`EFA_HUGEPAGES`)."""
        wanted: dict[str, int | str] = {GPU_RESOURCE: self.gpus}
        if self.efa:
            wanted |= {EFA_RESOURCE: self.efa, HUGEPAGES_RESOURCE: EFA_HUGEPAGES, "memory": EFA_MEMORY}
        return {"limits": dict(wanted), "requests": dict(wanted)}


def node_groups(groups: Iterable, labels: Mapping[str, Mapping[str, str]] | None = None,
                taints: Mapping[str, Iterable[Taint]] | None = None) -> list[NodeGroup]:
    """NodeGroups from plan groups (anything with ``name``, ``instance_type``, ``count``), with each group's labels
    and taints by name (those the cluster stack gives its instance group)."""
    labels, taints = labels or {}, taints or {}
    return [NodeGroup(g.name, g.instance_type, g.count, dict(labels.get(g.name, {})), tuple(taints.get(g.name, ())))
            for g in groups]
