"""A dated table of AWS list prices in one Region, for the plan's cost before anything is spent.

Pure data: no AWS call. Each figure names the page it was read from and :data:`PRICE_DATE`; a figure no
source gave is ``usd=None`` (the plan then says "not in the table"). ``fmcluster plan --prices`` reads the
AWS Price List API instead (:mod:`fmcluster.aws.pricing`), for the project's own Region and today.

Keys: ``ec2.<instance type>`` (Linux on-demand, per hour), ``sagemaker.<ml. type>`` (SageMaker HyperPod
instance, per hour), ``fsx.lustre.persistent2.<MB/s per TiB>`` (GB-month), ``nat.hour``, ``nat.gb``,
``s3.standard``, ``ebs.gp3``, ``logs.storage`` (GB-month), ``kms.key`` and ``secretsmanager.secret``
(month), ``aurora.serverless_v2.acu`` (ACU-hour), ``aurora.storage`` (GB-month), ``aps.ingest`` (per
10 million samples), ``aps.storage`` (GB-month), ``grafana.editor`` and ``grafana.viewer`` (user-month),
``pcs.<small|medium|large>`` (the PCS cluster controller, per hour), ``eks.cluster`` (hour).
"""

from __future__ import annotations

from dataclasses import dataclass

PRICE_REGION = "us-east-1"
"""The Region whose list prices the table holds."""

PRICE_DATE = "2026-12-01"
"""The day the table's sources were read (ISO 8601)."""


@dataclass(frozen=True)
class ListPrice:
    usd: float | None
    """USD per :attr:`unit`; None: no source read gave the figure."""
    unit: str
    """``hour``, ``GB-month``, ``month``, ``ACU-hour``, ``user-month``, ``10M samples``, ``GB``."""
    what: str
    """Words for the plan."""
    source: str
    """The page the figure was read from (URL)."""


EC2_PRICING = "https://aws.amazon.com/ec2/pricing/on-demand/"
SAGEMAKER_PRICING = "https://aws.amazon.com/sagemaker/pricing/"
FSX_PRICING = "https://aws.amazon.com/fsx/lustre/pricing/"
VPC_PRICING = "https://aws.amazon.com/vpc/pricing/"
S3_PRICING = "https://aws.amazon.com/s3/pricing/"
EBS_PRICING = "https://aws.amazon.com/ebs/pricing/"
KMS_PRICING = "https://aws.amazon.com/kms/pricing/"
CLOUDWATCH_PRICING = "https://aws.amazon.com/cloudwatch/pricing/"
AURORA_PRICING = "https://aws.amazon.com/rds/aurora/pricing/"
SECRETS_PRICING = "https://aws.amazon.com/secrets-manager/pricing/"
APS_PRICING = "https://aws.amazon.com/prometheus/pricing/"
GRAFANA_PRICING = "https://aws.amazon.com/grafana/pricing/"
PCS_PRICING = "https://aws.amazon.com/pcs/pricing/"
EKS_PRICING = "https://aws.amazon.com/eks/pricing/"


def _hour(usd: float | None, what: str, source: str) -> ListPrice:
    return ListPrice(usd, "hour", what, source)


_EC2: dict[str, float | None] = {
    # GPU types of the catalog (fmcluster.catalog.CATALOG)
    "p4d.24xlarge": None,
    "p5.4xlarge": None,
    "p5.48xlarge": None,
    "p5e.48xlarge": None,
    "p5en.48xlarge": None,
    "p6-b200.48xlarge": None,
    "p6-b300.48xlarge": None,
    "p6e-gb200.36xlarge": None,
    # head, login and controller nodes (fmcluster.config.parallelcluster / pcs defaults)
    "m7i.2xlarge": None,
    "m7i.4xlarge": None,
    "m7g.2xlarge": None,
    "m7g.4xlarge": None,
}

_SAGEMAKER: dict[str, float | None] = {
    "ml.p4d.24xlarge": None,
    "ml.p5.4xlarge": None,
    "ml.p5.48xlarge": None,
    "ml.p5e.48xlarge": None,
    "ml.p5en.48xlarge": None,
    "ml.p6-b200.48xlarge": None,
    "ml.p6-b300.48xlarge": None,
    "ml.p6e-gb200.36xlarge": None,
    # HyperPod controller and login defaults (fmcluster.config.hyperpod)
    "ml.m5.4xlarge": None,
    "ml.m5.12xlarge": None,
}

_FSX: dict[int, float | None] = {125: None, 250: None, 500: None, 1000: None}

TABLE: dict[str, ListPrice] = {
    **{f"ec2.{t}": _hour(usd, f"{t} on-demand (Linux)", EC2_PRICING) for t, usd in _EC2.items()},
    **{f"sagemaker.{t}": _hour(usd, f"{t} SageMaker HyperPod", SAGEMAKER_PRICING) for t, usd in _SAGEMAKER.items()},
    **{f"fsx.lustre.persistent2.{tier}": ListPrice(usd, "GB-month", f"FSx for Lustre PERSISTENT_2 SSD, "
                                                   f"{tier} MB/s per TiB", FSX_PRICING)
       for tier, usd in _FSX.items()},
    "nat.hour": _hour(0.045, "NAT gateway", VPC_PRICING),
    "nat.gb": ListPrice(0.045, "GB", "NAT gateway data processed", VPC_PRICING),
    "s3.standard": ListPrice(None, "GB-month", "S3 Standard, first 50 TB", S3_PRICING),
    "ebs.gp3": ListPrice(None, "GB-month", "EBS gp3 volume", EBS_PRICING),
    "logs.storage": ListPrice(None, "GB-month", "CloudWatch Logs archived", CLOUDWATCH_PRICING),
    "kms.key": ListPrice(None, "month", "KMS customer managed key", KMS_PRICING),
    "secretsmanager.secret": ListPrice(None, "month", "Secrets Manager secret", SECRETS_PRICING),
    "aurora.serverless_v2.acu": ListPrice(None, "ACU-hour", "Aurora Serverless v2 (Standard)", AURORA_PRICING),
    "aurora.storage": ListPrice(None, "GB-month", "Aurora storage (Standard)", AURORA_PRICING),
    "aps.ingest": ListPrice(None, "10M samples", "Managed Prometheus samples ingested (first tier)", APS_PRICING),
    "aps.storage": ListPrice(None, "GB-month", "Managed Prometheus metrics stored", APS_PRICING),
    "grafana.editor": ListPrice(9.0, "user-month", "Managed Grafana editor (one per workspace at least)",
                                GRAFANA_PRICING),
    "grafana.viewer": ListPrice(5.0, "user-month", "Managed Grafana viewer", GRAFANA_PRICING),
    **{f"pcs.{size}": _hour(None, f"AWS PCS {size.upper()} cluster controller", PCS_PRICING)
       for size in ("small", "medium", "large")},
    "eks.cluster": _hour(None, "EKS cluster, standard support", EKS_PRICING),
}
"""Every figure of the table, by key."""


def list_price(key: str) -> ListPrice:
    """The table's figure for ``key``; ``ValueError`` naming the key when the table has no such key."""
    try:
        return TABLE[key]
    except KeyError:
        raise ValueError(f"no list price {key!r} in the table ({PRICE_REGION}, {PRICE_DATE})") from None
