"""The EKS cluster and the SageMaker HyperPod cluster on it, inside ``NAME-cluster`` (``orchestrator.type:
hyperpod-eks``)."""

from __future__ import annotations

from typing import Any

from fmcluster.bootstrap.bundles import LifecycleBundles
from fmcluster.contracts import MetricsContract


def build(stack: Any, bundles: LifecycleBundles, metrics: MetricsContract | None) -> None:
    """The EKS and HyperPod clusters in ``stack`` (:data:`fmcluster.stacks.cluster.BUILDERS`)."""
    raise NotImplementedError("hyperpod-eks stacks: in progress on branch eks")
