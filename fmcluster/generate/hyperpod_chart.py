"""The HyperPod Helm chart that must be on the EKS cluster before the HyperPod cluster is created (SageMaker developer
guide, "Install packages on the Amazon EKS cluster using Helm"), as data: where it comes from, its pin and hash, how
fmcluster finds it on the workstation, and the values fmcluster sets. Pure: no network, no AWS.

How the chart reaches the deploy: ``fmcluster hyperpod-eks fetch-chart`` (online, once per workstation) clones
aws/sagemaker-hyperpod-cli at :data:`CHART_COMMIT`, removes the stale ``health-monitoring-agent-0.1.0.tgz`` (beside its
source directory, ``helm template`` picks either at random: FACTS.md section 5b), checks the source tree against
:data:`CHART_TREE_SHA256`, vendors the remote subcharts (``helm dependency build``) and leaves the result in
:func:`cache_dir`. Synthesis then ships that folder as an asset (CDK's ``HelmChart`` from an asset runs no
``helm dependency build``, so every subchart must already be in ``charts/``). Why on the workstation and not in the
deploy-time handler: the handler would need the internet from inside a private VPC at deploy time, and a failed
clone there fails the stack half way (the installer-Lambda failures of FACTS.md 5b); here it fails before anything
is deployed, and the pin and hash are checked where the user can see it. Without the cache (CI, tests), synthesis
uses the stub chart in ``templates/hyperpod_chart_stub`` (same values keys, no network) and ``fmcluster preflight``
refuses to deploy it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from fmcluster import templates
from fmcluster.generate.hyperpod_eks import HEALTH_TAINT, instance_groups, taints
from fmcluster.plan import ClusterPlan

CHART_REPOSITORY = "https://github.com/aws/sagemaker-hyperpod-cli"
CHART_COMMIT = "011ca927123e02b35a399935bbb3ab1905fe33c7"
"""The commit FACTS.md section 5b and ``shared/k8s-crds`` were read at."""
CHART_PATH = "helm_chart/HyperPodHelmChart"
STALE_FILES = ("charts/health-monitoring-agent-0.1.0.tgz",)
"""Left out of the tree (and removed from the cache): a stale copy of a subchart whose source sits beside it."""
CHART_TREE_SHA256 = "05eea797a6559368c5d81dd50fe6a06ef1ce4e46404d0e1eb2c3e27c13dd6de9"
""":func:`tree_sha256` of ``CHART_PATH`` at ``CHART_COMMIT`` without :data:`STALE_FILES` (146 files; computed from a
snapshot of the repository). The remote subcharts ``helm dependency build`` adds (nvidia-device-plugin 0.16.1 from
nvidia.github.io/k8s-device-plugin, aws-efa-k8s-device-plugin 0.5.20 from aws.github.io/eks-charts, both named by
version in Chart.yaml) are pinned by version only: their digests are not known offline (unconfirmed)."""
REMOTE_SUBCHARTS = ("nvidia-device-plugin", "aws-efa-k8s-device-plugin", "cert-manager")
RELEASE = "hyperpod-dependencies"
NAMESPACE = "kube-system"
"""The release name and namespace of AWS's install instructions (``helm install hyperpod-dependencies
helm_chart/HyperPodHelmChart --namespace kube-system``); the chart itself makes ``aws-hyperpod``."""
CHART_ENV = "FMC_HYPERPOD_CHART"
"""A folder holding a prepared chart, used instead of the cache (tests point it at a copy)."""
STUB_DIR = templates.HYPERPOD_CHART_STUB

EKS_IMAGE_ACCOUNTS: dict[str, str] = {
    # Amazon EKS user guide, "View Amazon container image registries for Amazon EKS add-ons": the account of
    # <account>.dkr.ecr.<region>.amazonaws.com/eks/... per Region; 602401143452 for the Regions not listed apart.
    "af-south-1": "877085696533", "ap-east-1": "800184023465", "ap-south-2": "900889452093",
    "ap-southeast-3": "296578399912", "ap-southeast-4": "491585149902", "ca-west-1": "761377655185",
    "eu-central-2": "900612956339", "eu-south-1": "590381155156", "eu-south-2": "455263428931",
    "il-central-1": "066635153087", "me-central-1": "759879836304", "me-south-1": "558608220178",
}
DEFAULT_EKS_IMAGE_ACCOUNT = "602401143452"
EKS_IMAGE_REGIONS = tuple(sorted({*EKS_IMAGE_ACCOUNTS, "us-east-1", "us-east-2", "us-west-1", "us-west-2",
                                  "ca-central-1", "sa-east-1", "eu-central-1", "eu-west-1", "eu-west-2", "eu-west-3",
                                  "eu-north-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
                                  "ap-southeast-1", "ap-southeast-2"}))
"""The Regions the stack's image-account mapping lists (the same user guide page)."""
EFA_PLUGIN_IMAGE = "{account}.dkr.ecr.{region}.amazonaws.com/eks/aws-efa-k8s-device-plugin"
"""The EFA device plugin's image, in the project's Region (the chart renders us-west-2's by default: FACTS.md 5b)."""


def eks_image_account(region: str) -> str:
    return EKS_IMAGE_ACCOUNTS.get(region, DEFAULT_EKS_IMAGE_ACCOUNT)


def tree_sha256(root: Path) -> str:
    """SHA-256 over ``path NUL sha256(content)`` of every file under ``root``, sorted by path, without
    :data:`STALE_FILES` and without what ``helm dependency build`` adds (``Chart.lock``, the remote subcharts)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel in STALE_FILES or rel == "Chart.lock" or any(
                rel.startswith(f"charts/{name}-") and rel.endswith(".tgz") for name in REMOTE_SUBCHARTS):
            continue
        digest.update(f"{rel}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()


def cache_dir() -> Path:
    """Where ``fetch-chart`` leaves the prepared chart: ``$XDG_CACHE_HOME/fmcluster/hyperpod-chart/<commit>``."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "fmcluster" / "hyperpod-chart" / CHART_COMMIT


def chart_dir() -> tuple[Path, bool]:
    """The chart synthesis ships and whether it is the real one: :data:`CHART_ENV`, else the cache when it holds the
    pinned tree, else the stub. A cache whose tree does not match the pin is not used (the stub is, and preflight
    says why)."""
    named = os.environ.get(CHART_ENV)
    if named:
        path = Path(named)
        return path, path.resolve() != STUB_DIR.resolve()
    cached = cache_dir()
    if (cached / "Chart.yaml").is_file() and not any((cached / s).exists() for s in STALE_FILES) \
            and tree_sha256(cached) == CHART_TREE_SHA256:
        return cached, True
    return STUB_DIR, False


def _tolerations(cluster: ClusterPlan) -> list[dict]:
    out = []
    for t in taints(cluster):
        if t.value is None:
            out.append({"key": t.key, "operator": "Exists", "effect": t.effect})
        else:
            out.append({"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect})
    return out


def gpu_instance_types(cluster: ClusterPlan) -> list[str]:
    """The ``ml.`` types of the project's compute groups, sorted: the device plugins' node affinity."""
    return sorted({g.instance_type for g in instance_groups(cluster) if g.compute_group})


def chart_values(cluster: ClusterPlan, region: str, ecr_account: str) -> dict[str, Any]:
    """The values fmcluster installs the chart with. ``region`` and ``ecr_account`` may be CloudFormation tokens
    (the stack's Region and the EKS image account mapped from it)."""
    tolerations = _tolerations(cluster)
    types = gpu_instance_types(cluster)
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}]}]}}}
    return {
        "global": {"region": region},
        "namespace": {"create": True, "name": "aws-hyperpod"},
        "cert-manager": {"enabled": False},  # the cert-manager add-on instead, where the training operator needs it
        "storage": {"enabled": False},  # FSx as a static PV (the storage subchart makes a dynamic class)
        "mlflow": {"enabled": False},
        "inferenceOperators": {"enabled": False},
        "gpu-operator": {"enabled": False},
        "trainingOperators": {"enabled": True},
        "mpi-operator": {"enabled": True},
        "nvidia-device-plugin": {"devicePlugin": {"enabled": True}, "affinity": affinity, "tolerations": tolerations},
        "neuron-device-plugin": {"devicePlugin": {"enabled": False}},
        "aws-efa-k8s-device-plugin": {
            "devicePlugin": {"enabled": True},
            "image": {"repository": EFA_PLUGIN_IMAGE.format(account=ecr_account, region=region)},
            "supportedInstanceLabels": {"values": types},
            "tolerations": tolerations + [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        },
        "health-monitoring-agent": {"enabled": True, "region": region},
        "deep-health-check": {"enabled": True},
        "job-auto-restart": {"enabled": True},
        "hyperpod-patching": {"enabled": True},
    }


__all__ = ["CHART_COMMIT", "CHART_TREE_SHA256", "HEALTH_TAINT", "NAMESPACE", "RELEASE", "chart_dir", "chart_values"]
