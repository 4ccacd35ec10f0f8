"""A dated table of AWS list prices in one Region, for the plan's cost before anything is spent.

Pure data: no AWS call. Each figure names the page it was read from and :data:`PRICE_DATE`; a figure no
source gave is ``usd=None`` (the plan then says "not in the table"). ``fmcluster plan --prices`` reads the
AWS Price List API instead (:mod:`fmcluster.aws.pricing`), for the project's own Region and today.

Keys: ``ec2.<instance type>`` (Linux on-demand, per hour), ``sagemaker.<ml. type>`` (SageMaker HyperPod
instance, per hour), ``fsx.lustre.persistent2.<MB/s per TiB>`` (GB-month), ``nat.hour``, ``nat.gb``,
``s3.standard``, ``ebs.gp3``, ``logs.storage`` (GB-month), ``logs.ingest`` (GB), ``kms.key`` and
``secretsmanager.secret`` (month), ``aurora.serverless_v2.acu`` (ACU-hour), ``aurora.storage`` (GB-month),
``aps.ingest`` (per 10 million samples), ``aps.storage`` (GB-month), ``grafana.editor`` and
``grafana.viewer`` (user-month), ``pcs.<small|medium|large>`` (the PCS cluster controller, per hour),
``eks.cluster`` and ``eks.cluster.extended`` (hour: standard and extended support).
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
    """The page the figure is AWS's list price on (URL)."""
    via: str = ""
    """Where the figure was read when not on :attr:`source` itself (a secondary copy; empty: read there); for a
    None figure, why the sources read gave none."""


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


VANTAGE_COPY = ("github.com/tsaol/aws-gpu data/<family>_instances.js (instances.vantage.sh data, updated "
                "2026-01-21), us-east-1 onDemand")
"""The GPU types' on-demand prices: the AWS page is rendered by script and is not in the sources read here."""
REPO_COPIES = "the same figure in several public repositories' us-east-1 price tables (GitHub code search)"

_EC2: dict[str, tuple[float | None, str]] = {
    # GPU types of the catalog (fmcluster.catalog.CATALOG)
    "p4d.24xlarge": (21.957642, VANTAGE_COPY),
    "p5.4xlarge": (6.88, VANTAGE_COPY),
    "p5.48xlarge": (55.04, VANTAGE_COPY),
    "p5e.48xlarge": (None, "the source lists no us-east-1 on-demand price (not offered there)"),
    "p5en.48xlarge": (63.296, VANTAGE_COPY),
    "p6-b200.48xlarge": (113.9328, VANTAGE_COPY),
    "p6-b300.48xlarge": (None, "the source lists an on-demand price in us-west-2 only"),
    "p6e-gb200.36xlarge": (None, "the source lists no on-demand price (UltraServer capacity)"),
    # head, login and controller nodes (fmcluster.config.parallelcluster / pcs defaults)
    "m7i.2xlarge": (0.4032, REPO_COPIES),
    "m7i.4xlarge": (0.8064, REPO_COPIES),
    "m7g.2xlarge": (0.3264, REPO_COPIES),
    "m7g.4xlarge": (0.6528, REPO_COPIES),
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
    "ml.m5.2xlarge": None,  # the HyperPod EKS system group's default: no source read gave its HyperPod price
}

_FSX: dict[int, tuple[float | None, str]] = {
    125: (0.145, "c3x.dev/resources/aws/aws_fsx_lustre_file_system (SSD, 125 MB/s/TiB)"),
    250: (None, ""), 500: (None, ""), 1000: (None, ""),
}

TABLE: dict[str, ListPrice] = {
    **{f"ec2.{t}": ListPrice(usd, "hour", f"{t} on-demand (Linux)", EC2_PRICING, via)
       for t, (usd, via) in _EC2.items()},
    **{f"sagemaker.{t}": _hour(usd, f"{t} SageMaker HyperPod", SAGEMAKER_PRICING) for t, usd in _SAGEMAKER.items()},
    **{f"fsx.lustre.persistent2.{tier}": ListPrice(usd, "GB-month", f"FSx for Lustre PERSISTENT_2 SSD, "
                                                   f"{tier} MB/s per TiB", FSX_PRICING, via)
       for tier, (usd, via) in _FSX.items()},
    "nat.hour": ListPrice(0.045, "hour", "NAT gateway", VPC_PRICING, "basavytix.com/blog/aws-nat-gateway-pricing "
                          "(us-east-1 rates), cloudpipelines.pages.dev/guides/aws-nat-gateway-pricing-2026"),
    "nat.gb": ListPrice(0.045, "GB", "NAT gateway data processed", VPC_PRICING,
                        "basavytix.com/blog/aws-nat-gateway-pricing (us-east-1 rates)"),
    "s3.standard": ListPrice(0.023, "GB-month", "S3 Standard, first 50 TB", S3_PRICING,
                             "devnotes.tech/understanding-aws-s3-pricing-a-complete-cost-breakdown-with-examples"),
    "ebs.gp3": ListPrice(None, "GB-month", "EBS gp3 volume", EBS_PRICING),
    "logs.storage": ListPrice(0.03, "GB-month", "CloudWatch Logs stored (Standard class)", CLOUDWATCH_PRICING,
                              "c3x.dev/blog/cloudwatch-logs-cost-optimization (us-east-1, June 2026)"),
    "logs.ingest": ListPrice(0.50, "GB", "CloudWatch Logs ingested (Standard class)", CLOUDWATCH_PRICING,
                             "c3x.dev/blog/cloudwatch-logs-cost-optimization (us-east-1, June 2026)"),
    "kms.key": ListPrice(1.0, "month", "KMS customer managed key", KMS_PRICING,
                         "cloudburn.io/blog/aws-kms-pricing (from the AWS page, March 2026)"),
    "secretsmanager.secret": ListPrice(None, "month", "Secrets Manager secret", SECRETS_PRICING),
    "aurora.serverless_v2.acu": ListPrice(0.12, "ACU-hour", "Aurora Serverless v2 (Standard)", AURORA_PRICING,
                                          "c3x.dev/blog/aws-aurora-serverless-v2-cost (us-east-1)"),
    "aurora.storage": ListPrice(0.10, "GB-month", "Aurora storage (Standard)", AURORA_PRICING,
                                "awsnegotiations.com/blog/aurora-serverless-v2-pricing.html (approximate)"),
    "aps.ingest": ListPrice(None, "10M samples", "Managed Prometheus samples ingested (first tier)", APS_PRICING),
    "aps.storage": ListPrice(None, "GB-month", "Managed Prometheus metrics stored", APS_PRICING),
    "grafana.editor": ListPrice(9.0, "user-month", "Managed Grafana editor (one per workspace at least)",
                                GRAFANA_PRICING, "aws.amazon.com/tr/grafana/pricing/ and /jp/grafana/pricing/"),
    "grafana.viewer": ListPrice(5.0, "user-month", "Managed Grafana viewer", GRAFANA_PRICING,
                                "aws.amazon.com/tr/grafana/pricing/"),
    **{f"pcs.{size}": _hour(None, f"AWS PCS {size.upper()} cluster controller", PCS_PRICING)
       for size in ("small", "medium", "large")},
    "eks.cluster": ListPrice(0.10, "hour", "EKS cluster, standard support", EKS_PRICING,
                             "aws.amazon.com/blogs/containers/amazon-eks-extended-support-for-kubernetes-versions-"
                             "pricing"),
    # added by the EKS work (issue 41): the control plane of a Kubernetes version past its end of standard support
    "eks.cluster.extended": ListPrice(0.60, "hour", "EKS cluster, extended support", EKS_PRICING,
                                      "aws.amazon.com/blogs/containers/amazon-eks-extended-support-for-kubernetes-"
                                      "versions-pricing"),
}
"""Every figure of the table, by key."""


def list_price(key: str) -> ListPrice:
    """The table's figure for ``key``; ``ValueError`` naming the key when the table has no such key."""
    try:
        return TABLE[key]
    except KeyError:
        raise ValueError(f"no list price {key!r} in the table ({PRICE_REGION}, {PRICE_DATE})") from None
