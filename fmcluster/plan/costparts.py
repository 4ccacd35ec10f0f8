"""What an orchestrator adds to a project's bill besides the GPU nodes' hours: its nodes that always run, its
hourly fees, the GPU nodes it keeps running with no job. Each orchestrator's plan module says it
(:data:`fmcluster.plan.cost.ORCHESTRATORS`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FixedNode:
    """Nodes that run while the cluster exists: a head node, a controller, login nodes."""

    role: str
    price_key: str
    """The key of their hourly price in :mod:`fmcluster.prices`."""
    count: int
    volume_gib: int | None = None
    """An EBS volume of each node, billed by the GB-month; None: none of ours."""


@dataclass(frozen=True)
class OrchestratorCost:
    nodes: tuple[FixedNode, ...] = ()
    fees: tuple[tuple[str, str], ...] = ()
    """``(what, price key)``: hourly fees while the cluster exists (a managed controller)."""
    static: dict[str, int] = field(default_factory=dict)
    """Compute group -> nodes that run with no job (absent: none)."""
    instance_prefix: str = "ec2."
    """How the price keys of the GPU nodes start: ``ec2.`` or ``sagemaker.`` (HyperPod bills ``ml.`` types)."""
    buckets: tuple[str, ...] = ()
    """S3 buckets of the orchestrator's own, kept after destroy (billed by use)."""
