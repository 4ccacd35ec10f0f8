"""A model of when things become ready on SageMaker HyperPod on EKS, and a replay of a synthesized template's create
order against it (issue 41).

CloudFormation starts a resource once everything it depends on is complete: its ``DependsOn``, and every resource a
``Ref``, ``Fn::GetAtt`` or ``Fn::Sub`` in its properties names. Nothing else orders two resources: a resource may
count only on its dependencies (transitively) being there when it starts, never on a resource it does not depend
on, however early that one starts (:func:`create_order` gives the waves CloudFormation would start them in, for the
messages).

What becomes ready when (the facts the replay judges by, each with its source):

- The EKS control plane needs no node. HyperPod's nodes exist only once the ``AWS::SageMaker::Cluster`` is created,
  and carry their instance group's ``KubernetesConfig.Taints``; a pod lands on a node only when it tolerates every
  ``NoSchedule``/``NoExecute`` taint there (Kubernetes "Taints and Tolerations").
- EKS add-ons that run as DaemonSets (vpc-cni, kube-proxy, eks-pod-identity-agent) are active with no node; those
  with Deployments (CoreDNS, the FSx CSI controller, cert-manager, HyperPod's training operator, observability,
  task governance's Kueue) wait for a node (awsome-distributed-training ``7.sagemaker-hyperpod-eks/terraform-modules``
  ``eks_cluster/main.tf``: "These EKS addons can become active before nodes are available" / CoreDNS "will remain
  degraded until nodes are available"; ``main.tf`` ``features_requiring_nodes``; FACTS.md 5b.x).
- A Helm release installed with ``Wait: true`` is done only when its Deployments are ready; the HyperPod chart's
  training-operator Deployment tolerates no taint (FACTS.md 5b, aws/sagemaker-hyperpod-cli#449), so it needs an
  untainted node. Without ``Wait`` the release is done once Kubernetes accepted its objects (AWS's Terraform
  installs the chart with ``wait = false``).
- The HyperPod cluster needs the chart installed before it is created (FACTS.md 5b); the training operator add-on
  needs cert-manager (FACTS.md 5b); HyperPod's nodes join only with the VPC CNI there.

A resource that needs a node it cannot count on is a failure: CloudFormation waits for it (an add-on stuck
DEGRADED, a chart waiting 15 minutes) and, where the HyperPod cluster itself comes after it, never gets one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

CLUSTER = "AWS::SageMaker::Cluster"
ADDON = "AWS::EKS::Addon"
HELM = "Custom::AWSCDK-EKS-HelmChart"

DAEMONSET_ADDONS = frozenset({"vpc-cni", "kube-proxy", "eks-pod-identity-agent"})
"""Active before any node exists (their pods are a DaemonSet's: none until a node joins)."""
DEPLOYMENT_ADDONS = frozenset({"coredns", "aws-fsx-csi-driver", "cert-manager",
                               "amazon-sagemaker-hyperpod-training-operator",
                               "amazon-sagemaker-hyperpod-observability", "amazon-sagemaker-hyperpod-taskgovernance",
                               "amazon-sagemaker-hyperpod-inference-operator"})
"""Active only once their Deployment's pods run: they need a node."""
ADDON_NEEDS = {"amazon-sagemaker-hyperpod-training-operator": ("cert-manager",)}
"""An add-on that needs another one installed first (its webhooks' certificates)."""
NODE_JOIN_ADDONS = ("vpc-cni",)
"""What a HyperPod node needs on the cluster to join it (the only CNI HyperPod supports)."""
BLOCKING = ("NoSchedule", "NoExecute")


def _sub_references(value: Any) -> set[str]:
    if isinstance(value, str):
        template, names = value, {}
    else:
        template, names = value[0], value[1] if len(value) > 1 else {}
    found = set()
    for name in re.findall(r"\$\{([^}!]+)\}", template):
        name = name.split(".")[0]
        if name not in names and not name.startswith("AWS::"):
            found.add(name)
    return found | references(names)


def references(value: Any) -> set[str]:
    """Every logical ID a ``Ref``, ``Fn::GetAtt`` or ``Fn::Sub`` in ``value`` names (pseudo parameters included;
    callers keep the resources)."""
    if isinstance(value, dict):
        found: set[str] = set()
        for key, inner in value.items():
            if key == "Ref" and isinstance(inner, str):
                found.add(inner)
            elif key == "Fn::GetAtt":
                found.add(inner[0] if isinstance(inner, list) else inner.split(".")[0])
            elif key == "Fn::Sub":
                found |= _sub_references(inner)
            else:
                found |= references(inner)
        return found
    if isinstance(value, list):
        return set().union(*map(references, value)) if value else set()
    return set()


def direct_dependencies(template: dict) -> dict[str, set[str]]:
    """Logical ID -> the resources CloudFormation finishes before starting it (DependsOn, Ref, GetAtt, Sub)."""
    resources = template["Resources"]
    out = {}
    for logical_id, resource in resources.items():
        depends = resource.get("DependsOn", [])
        depends = [depends] if isinstance(depends, str) else depends
        out[logical_id] = ({*depends} | references(resource.get("Properties", {}))) & set(resources)
    return out


def ancestors(template: dict) -> dict[str, set[str]]:
    """Logical ID -> every resource complete when it starts (its dependencies, transitively). A cycle is an error
    CloudFormation would report too."""
    direct = direct_dependencies(template)
    closed: dict[str, set[str]] = {}

    def visit(node: str, seen: tuple[str, ...] = ()) -> set[str]:
        if node not in closed:
            if node in seen:
                raise ValueError(f"dependency cycle through {node}")
            out = set(direct[node])
            for parent in direct[node]:
                out |= visit(parent, (*seen, node))
            closed[node] = out
        return closed[node]

    for logical_id in direct:
        visit(logical_id)
    return closed


def create_order(template: dict) -> list[list[str]]:
    """The waves CloudFormation starts resources in: each resource one wave after its last dependency."""
    direct = direct_dependencies(template)
    wave: dict[str, int] = {}

    def depth(node: str) -> int:
        if node not in wave:
            wave[node] = 1 + max((depth(d) for d in direct[node]), default=-1)
        return wave[node]

    for logical_id in direct:
        depth(logical_id)
    out: list[list[str]] = [[] for _ in range(max(wave.values(), default=-1) + 1)]
    for logical_id in direct:  # template order within a wave
        out[wave[logical_id]].append(logical_id)
    return out


@dataclass(frozen=True)
class Toleration:
    key: str | None
    operator: str = "Equal"
    value: str | None = None
    effect: str | None = None

    def tolerates(self, taint: dict) -> bool:
        if self.effect and self.effect != taint["Effect"]:
            return False
        if self.key is None:
            return self.operator == "Exists"
        if self.key != taint["Key"]:
            return False
        return self.operator == "Exists" or self.value == taint.get("Value")


@dataclass
class Replay:
    """What happened when the template's resources were created in CloudFormation's order."""

    waves: list[list[str]]
    failures: list[str] = field(default_factory=list)
    """One sentence per resource that waits for something it cannot count on."""

    def wave_of(self, logical_id: str) -> int:
        return next(i for i, wave in enumerate(self.waves) if logical_id in wave)


def _node_groups(template: dict, cluster_id: str) -> list[list[dict]]:
    groups = template["Resources"][cluster_id]["Properties"]["InstanceGroups"]
    return [[t for t in (g.get("KubernetesConfig") or {}).get("Taints", []) if t["Effect"] in BLOCKING]
            for g in groups if g.get("InstanceCount", 0) > 0]


def _schedulable(tolerations: list[Toleration], groups: list[list[dict]]) -> bool:
    return any(all(any(t.tolerates(taint) for t in tolerations) for taint in taints) for taints in groups)


def _addon_tolerations(resource: dict) -> list[Toleration]:
    text = resource["Properties"].get("ConfigurationValues")
    if not isinstance(text, str):
        return []
    values = json.loads(text)
    return [Toleration(t.get("key"), t.get("operator", "Equal"), t.get("value"), t.get("effect"))
            for t in values.get("tolerations", [])]


def _waits(resource: dict) -> bool:
    wait = resource["Properties"].get("Wait", False)
    return wait is True or wait == "true"


def replay(template: dict) -> Replay:
    """Create every resource in order; report each that needs a node (or another resource) it cannot count on."""
    resources = template["Resources"]
    before = ancestors(template)
    result = Replay(create_order(template))
    clusters = [k for k, r in resources.items() if r["Type"] == CLUSTER]
    addon_names = {k: r["Properties"]["AddonName"] for k, r in resources.items() if r["Type"] == ADDON}
    charts = [k for k, r in resources.items() if r["Type"] == HELM]

    def nodes_for(logical_id: str, tolerations: list[Toleration], what: str) -> None:
        ready = [c for c in clusters if c in before[logical_id]]
        if not ready:
            after = [c for c in clusters if logical_id in before[c]]
            when = (f"the HyperPod cluster {after[0]} is created after it and never comes" if after else
                    "nothing orders it after the HyperPod cluster, which brings the first node")
            result.failures.append(f"{logical_id} ({what}) starts in wave {result.wave_of(logical_id)} before any "
                                   f"node exists: {when}")
        elif not any(_schedulable(tolerations, _node_groups(template, c)) for c in ready):
            result.failures.append(f"{logical_id} ({what}) needs a node whose taints it tolerates; every instance "
                                   "group's nodes carry a taint it does not tolerate")

    for logical_id, name in addon_names.items():
        if name in DAEMONSET_ADDONS:
            pass
        elif name in DEPLOYMENT_ADDONS:
            nodes_for(logical_id, _addon_tolerations(resources[logical_id]), f"add-on {name}, a Deployment")
        else:
            result.failures.append(f"{logical_id}: add-on {name} is not in the readiness model: say whether it "
                                   "runs a Deployment (needs a node) or only a DaemonSet")
        for needed in ADDON_NEEDS.get(name, ()):
            if not any(k in before[logical_id] for k, n in addon_names.items() if n == needed):
                result.failures.append(f"{logical_id} (add-on {name}) needs add-on {needed} installed first")
    for logical_id in charts:
        if _waits(resources[logical_id]):
            nodes_for(logical_id, [], "Helm release with Wait, its training-operator Deployment tolerates no taint")
    for cluster in clusters:
        for chart in charts:
            if chart not in before[cluster]:
                result.failures.append(f"{cluster} (HyperPod cluster) needs the HyperPod chart {chart} installed "
                                       "before it is created")
        for needed in NODE_JOIN_ADDONS:
            if not any(k in before[cluster] for k, n in addon_names.items() if n == needed):
                result.failures.append(f"{cluster} (HyperPod cluster): its nodes join only with add-on {needed}, "
                                       "which it does not come after")
    return result


def node_addon_chains(template: dict, allowed: dict[str, tuple[str, ...]] | None = None) -> list[str]:
    """Add-ons that need nodes yet wait for one another without a reason (``allowed``: name -> the add-ons it may
    come after; default :data:`ADDON_NEEDS`): each such pair adds an add-on's whole install time to the deploy."""
    allowed = ADDON_NEEDS if allowed is None else allowed
    resources = template["Resources"]
    before = ancestors(template)
    names = {k: r["Properties"]["AddonName"] for k, r in resources.items() if r["Type"] == ADDON}
    out = []
    for logical_id, name in names.items():
        for earlier, earlier_name in names.items():
            if earlier in before[logical_id] and earlier_name in DEPLOYMENT_ADDONS and name in DEPLOYMENT_ADDONS \
                    and earlier_name not in allowed.get(name, ()):
                out.append(f"{name} waits for {earlier_name}")
    return sorted(out)
