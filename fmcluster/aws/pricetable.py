"""Builds ``fmcluster/prices.json``, the dated table of list prices the plan and ``destroy`` read
(:mod:`fmcluster.prices`).

``python -m fmcluster.aws.pricetable`` (``make prices``) writes the table for every Region of :data:`REGIONS`:

1. with AWS credentials, each key that has Price List filters (:func:`filters`: EC2 instances, SageMaker HyperPod
   instances, FSx for Lustre PERSISTENT_2 by tier, EBS gp3) is read from the AWS Price List API (boto3 ``pricing``
   ``GetProducts``, the same reader as ``plan --prices``: :mod:`fmcluster.aws.pricing`);
2. else (``--offline``, or no answer) the figure read by hand from a public page, with that page (:data:`READ`);
3. else an **estimate**, made by a stated rule from other figures (:data:`ESTIMATES`), its ``estimate`` field saying
   how and that AWS's own figure is unconfirmed.

The checked-in ``prices.json`` is this module's output, never edited by hand: ``tests/test_pricetable.py`` builds it
again offline and compares every entry not read from the Price List API.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from fmcluster.aws import pricing
from fmcluster.prices import TABLE_PATH

BASE_REGION = "us-east-1"
REGIONS: tuple[str, ...] = ("us-east-1", "us-east-2", "us-west-2")
"""The Regions the table holds: those of the examples (us-east-1, us-east-2) and us-west-2, the three US Regions
that offer every GPU type of the catalog on demand (dstack's AWS offers, github.com/dstackai/dstack/pull/4110).
A project elsewhere gets us-east-1's figures, marked as estimates (:func:`fmcluster.prices.lookup`)."""

READ_ON = "2026-12-02"
"""The day the hand-read figures of :data:`READ` were read (the table's date when no figure came from the API)."""

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

VANTAGE_COPY = ("github.com/tsaol/aws-gpu data/<family>_instances.js (instances.vantage.sh data, updated "
                "2026-01-21), us-east-1 onDemand")
"""The GPU types' on-demand prices: the AWS page is rendered by script and is not in the sources read here."""
REPO_COPIES = "the same figure in several public repositories' us-east-1 price tables (GitHub code search)"
DSTACK = "github.com/dstackai/dstack/pull/4110 (dstack's AWS on-demand offers, us-east-1/us-east-2/us-west-2)"

GPU_TYPES = ("p4d.24xlarge", "p5.4xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge",
             "p6-b300.48xlarge", "p6e-gb200.36xlarge")
"""The catalog's GPU types (``fmcluster.catalog.CATALOG``; tests/test_prices.py checks every one has a key)."""
OTHER_EC2 = ("m7i.2xlarge", "m7i.4xlarge", "m7g.2xlarge", "m7g.4xlarge")
"""Head, login and controller nodes (fmcluster.config.parallelcluster / pcs defaults)."""
SAGEMAKER_OTHER = ("ml.m5.2xlarge", "ml.m5.4xlarge", "ml.m5.12xlarge")
"""HyperPod controller, login and EKS system-group defaults (fmcluster.config.hyperpod, hyperpod_eks)."""
FSX_TIERS = (125, 250, 500, 1000)


def _p(usd: float, unit: str, what: str, source: str, via: str) -> dict[str, Any]:
    return {"usd": usd, "unit": unit, "what": what, "source": source, "via": via}


READ: dict[str, dict[str, dict[str, Any]]] = {
    "us-east-1": {
        "ec2.p4d.24xlarge": _p(21.957642, "hour", "p4d.24xlarge on-demand (Linux)", EC2_PRICING, VANTAGE_COPY),
        "ec2.p5.4xlarge": _p(6.88, "hour", "p5.4xlarge on-demand (Linux)", EC2_PRICING, VANTAGE_COPY),
        "ec2.p5.48xlarge": _p(55.04, "hour", "p5.48xlarge on-demand (Linux)", EC2_PRICING, VANTAGE_COPY),
        "ec2.p5en.48xlarge": _p(63.296, "hour", "p5en.48xlarge on-demand (Linux)", EC2_PRICING, VANTAGE_COPY),
        "ec2.p6-b200.48xlarge": _p(113.9328, "hour", "p6-b200.48xlarge on-demand (Linux)", EC2_PRICING, VANTAGE_COPY),
        "ec2.m7i.2xlarge": _p(0.4032, "hour", "m7i.2xlarge on-demand (Linux)", EC2_PRICING, REPO_COPIES),
        "ec2.m7i.4xlarge": _p(0.8064, "hour", "m7i.4xlarge on-demand (Linux)", EC2_PRICING, REPO_COPIES),
        "ec2.m7g.2xlarge": _p(0.3264, "hour", "m7g.2xlarge on-demand (Linux)", EC2_PRICING, REPO_COPIES),
        "ec2.m7g.4xlarge": _p(0.6528, "hour", "m7g.4xlarge on-demand (Linux)", EC2_PRICING, REPO_COPIES),
        "fsx.lustre.persistent2.125": _p(0.145, "GB-month", "FSx for Lustre PERSISTENT_2 SSD, 125 MB/s per TiB",
                                         FSX_PRICING, "c3x.dev/resources/aws/aws_fsx_lustre_file_system (SSD, 125 "
                                                      "MB/s/TiB)"),
        "fsx.lustre.scratch2": _p(0.14, "GB-month", "FSx for Lustre SCRATCH_2 SSD (200 MB/s per TiB)", FSX_PRICING,
                                  "a public repository's cost notes ('FSx SCRATCH_2 $0.14/GB-mo', GitHub code "
                                  "search; its Region unstated)"),
        "nat.hour": _p(0.045, "hour", "NAT gateway", VPC_PRICING, "basavytix.com/blog/aws-nat-gateway-pricing "
                       "(us-east-1 rates), cloudpipelines.pages.dev/guides/aws-nat-gateway-pricing-2026"),
        "nat.gb": _p(0.045, "GB", "NAT gateway data processed", VPC_PRICING,
                     "basavytix.com/blog/aws-nat-gateway-pricing (us-east-1 rates)"),
        "ipv4.hour": _p(0.005, "hour", "public IPv4 address (the NAT gateway's Elastic IP)", VPC_PRICING,
                        "github.com/trailofbits/algo/issues/14644 (AWS's announcement: $0.005 per IP per hour from "
                        "February 2024); the same figure in public repositories' us-east-1 tables"),
        "vpce.hour": _p(0.01, "hour", "VPC interface endpoint (per endpoint per Availability Zone)", VPC_PRICING,
                        "public repositories' us-east-1 tables ('$0.01 per endpoint per AZ per hour', one verified "
                        "2026-06-12; GitHub code search)"),
        "vpce.gb": _p(0.01, "GB", "VPC interface endpoint data processed (first PB)", VPC_PRICING,
                      "the same repositories ('data processing $0.01/GB')"),
        "s3.standard": _p(0.023, "GB-month", "S3 Standard, first 50 TB", S3_PRICING,
                          "devnotes.tech/understanding-aws-s3-pricing-a-complete-cost-breakdown-with-examples"),
        "ebs.gp3": _p(0.08, "GB-month", "EBS gp3 volume storage", EBS_PRICING,
                      "public repositories' us-east-1 tables, one citing the AmazonEC2 Price List (GitHub code "
                      "search 'gp3 $0.08/GB-month')"),
        "logs.storage": _p(0.03, "GB-month", "CloudWatch Logs stored (Standard class)", CLOUDWATCH_PRICING,
                           "c3x.dev/blog/cloudwatch-logs-cost-optimization (us-east-1, June 2026)"),
        "logs.ingest": _p(0.50, "GB", "CloudWatch Logs ingested (Standard class)", CLOUDWATCH_PRICING,
                          "c3x.dev/blog/cloudwatch-logs-cost-optimization (us-east-1, June 2026)"),
        "kms.key": _p(1.0, "month", "KMS customer managed key", KMS_PRICING,
                      "cloudburn.io/blog/aws-kms-pricing (from the AWS page, March 2026)"),
        "secretsmanager.secret": _p(0.40, "month", "Secrets Manager secret", SECRETS_PRICING,
                                    "public repositories' cost notes ('$0.40 per secret per month', GitHub code "
                                    "search)"),
        "aurora.serverless_v2.acu": _p(0.12, "ACU-hour", "Aurora Serverless v2 (Standard)", AURORA_PRICING,
                                       "c3x.dev/blog/aws-aurora-serverless-v2-cost (us-east-1)"),
        "aurora.storage": _p(0.10, "GB-month", "Aurora storage (Standard)", AURORA_PRICING,
                             "awsnegotiations.com/blog/aurora-serverless-v2-pricing.html (approximate)"),
        "aps.ingest": _p(0.90, "10M samples", "Managed Prometheus samples ingested (first 2 billion a month)",
                         APS_PRICING, "public repositories quoting the Price List API's AmazonPrometheus us-east-1 "
                                      "figures (GitHub code search '$0.90 per 10M samples')"),
        "aps.storage": _p(0.03, "GB-month", "Managed Prometheus metrics stored", APS_PRICING,
                          "the same repositories ('$0.03 per GB-month')"),
        "aps.query": _p(0.10, "1B samples", "Managed Prometheus query samples processed (rules, dashboards)",
                        APS_PRICING, "a public repository quoting the Price List API's AmazonPrometheus us-east-1 "
                                     "figures ('$0.10 per 1B query samples processed')"),
        "grafana.editor": _p(9.0, "user-month", "Managed Grafana editor (one per workspace at least)",
                             GRAFANA_PRICING, "aws.amazon.com/tr/grafana/pricing/ and /jp/grafana/pricing/"),
        "grafana.viewer": _p(5.0, "user-month", "Managed Grafana viewer", GRAFANA_PRICING,
                             "aws.amazon.com/tr/grafana/pricing/"),
        "eks.cluster": _p(0.10, "hour", "EKS control plane, standard support", EKS_PRICING,
                          "aws.amazon.com/blogs/containers/amazon-eks-extended-support-for-kubernetes-versions-pricing"
                          "; shared/FACTS.md section 5b.x"),
        "eks.cluster.extended": _p(0.60, "hour", "EKS control plane, extended support", EKS_PRICING,
                                   "aws.amazon.com/blogs/containers/amazon-eks-extended-support-for-kubernetes-"
                                   "versions-pricing; shared/FACTS.md section 5b.x"),
    },
    "us-east-2": {
        "ec2.p5en.48xlarge": _p(63.296, "hour", "p5en.48xlarge on-demand (Linux)", EC2_PRICING, DSTACK),
        "nat.hour": _p(0.045, "hour", "NAT gateway", VPC_PRICING,
                       "github.com/api-evangelist/amazon-vpc plans/amazon-vpc-plans-pricing.yml (the VPC page's US "
                       "East (Ohio) example, read 2026-09-20)"),
        "nat.gb": _p(0.045, "GB", "NAT gateway data processed", VPC_PRICING,
                     "github.com/api-evangelist/amazon-vpc plans/amazon-vpc-plans-pricing.yml (US East (Ohio))"),
    },
    "us-west-2": {
        "ec2.p5en.48xlarge": _p(63.296, "hour", "p5en.48xlarge on-demand (Linux)", EC2_PRICING, DSTACK),
    },
}
"""Figures read by hand from a public page, by Region: the AWS page (``source``) and where it was read (``via``)."""

WHAT: dict[str, tuple[str, str]] = {
    **{f"ec2.{t}": ("hour", f"{t} on-demand (Linux)") for t in (*GPU_TYPES, *OTHER_EC2)},
    **{f"sagemaker.ml.{t}": ("hour", f"ml.{t} SageMaker HyperPod") for t in GPU_TYPES},
    **{f"sagemaker.{t}": ("hour", f"{t} SageMaker HyperPod") for t in SAGEMAKER_OTHER},
    **{f"fsx.lustre.persistent2.{t}": ("GB-month", f"FSx for Lustre PERSISTENT_2 SSD, {t} MB/s per TiB")
       for t in FSX_TIERS},
    **{f"pcs.{s}": ("hour", f"AWS PCS {s.upper()} cluster controller") for s in ("small", "medium", "large")},
    "sagemaker.volume": ("GB-month", "SageMaker HyperPod instance storage (EBS volume of a node)"),
}
"""Keys no page read gave a figure for: their unit and words (the figure is an estimate)."""

SOURCES = {"ec2": EC2_PRICING, "sagemaker": SAGEMAKER_PRICING, "fsx": FSX_PRICING, "pcs": PCS_PRICING}

FSX_TIER_RATIO = {250: 0.46 / 0.31, 500: 0.77 / 0.31, 1000: 1.39 / 0.31}
"""PERSISTENT_2's tiers against its 125 MB/s/TiB tier: the hourly prices of 1.2 TiB at 125/250/500/1000 MB/s/TiB in
ap-northeast-1 ($0.31, $0.46, $0.77, $1.39; DevelopersIO (classmethod), "FSx for Lustre Persistent 2 のスペック別利用
料金", 2022-09-03). Only the 125 tier's us-east-1 price was found; the others are estimated by these ratios."""
M5_LARGE = 0.096
"""m5.large on-demand (Linux) in us-east-1, USD/hour (public repositories' tables); m5 sizes scale linearly."""

Table = dict[str, dict[str, Any]]

BILLED_BY: dict[str, tuple[str, ...]] = {
    "AWS::EC2::EIP": ("ipv4.hour",),
    "AWS::EC2::NatGateway": ("nat.hour", "nat.gb"),
    "AWS::EC2::VPCEndpoint": ("vpce.hour", "vpce.gb"),  # interface endpoints; the S3 gateway endpoint is free
    "AWS::EC2::FlowLog": ("logs.ingest", "logs.storage"),
    "AWS::EC2::LaunchTemplate": ("ec2.",),  # the GPU instances launched from it
    "AWS::EKS::Cluster": ("eks.cluster",),
    "AWS::FSx::FileSystem": ("fsx.lustre.",),
    "AWS::Grafana::Workspace": ("grafana.editor",),
    "AWS::APS::Workspace": ("aps.ingest", "aps.storage"),
    "AWS::APS::RuleGroupsNamespace": ("aps.query",),  # rule evaluation: query samples processed
    "AWS::KMS::Key": ("kms.key",),
    "AWS::Logs::LogGroup": ("logs.storage", "logs.ingest"),
    "AWS::PCS::Cluster": ("pcs.",),
    "AWS::PCS::ComputeNodeGroup": ("ec2.",),
    "AWS::RDS::DBCluster": ("aurora.storage",),
    "AWS::RDS::DBInstance": ("aurora.serverless_v2.acu",),
    "AWS::S3::Bucket": ("s3.standard",),
    "AWS::SageMaker::Cluster": ("sagemaker.",),
    "AWS::SecretsManager::Secret": ("secretsmanager.secret",),
    "Custom::PclusterCluster": ("ec2.", "ebs.gp3"),  # ParallelCluster's head, login and compute nodes, their volumes
}
"""A CloudFormation type the stacks create -> the price keys (or key prefixes) its bill is made of."""

FREE: dict[str, str] = {
    "AWS::CloudFormation::Stack": "a nested stack: CloudFormation does not charge for AWS:: resources",
    "AWS::EC2::InternetGateway": "no charge of its own (VPC pricing page: data transfer bills, not the gateway)",
    "AWS::EC2::PlacementGroup": "no charge (placement groups are free)",
    "AWS::EC2::Route": "routing: no charge", "AWS::EC2::RouteTable": "routing: no charge",
    "AWS::EC2::SecurityGroup": "no charge", "AWS::EC2::SecurityGroupEgress": "no charge",
    "AWS::EC2::SecurityGroupIngress": "no charge", "AWS::EC2::Subnet": "no charge",
    "AWS::EC2::SubnetRouteTableAssociation": "no charge", "AWS::EC2::VPC": "no charge (the VPC itself)",
    "AWS::EC2::VPCGatewayAttachment": "no charge",
    "AWS::EKS::AccessEntry": "no charge (EKS bills the cluster)",
    "AWS::EKS::Addon": "no charge of its own: its pods run on the cluster's nodes",
    "AWS::FSx::DataRepositoryAssociation": "no charge of its own (S3 requests it makes are by use)",
    "AWS::IAM::InstanceProfile": "IAM is free", "AWS::IAM::ManagedPolicy": "IAM is free",
    "AWS::IAM::Policy": "IAM is free", "AWS::IAM::Role": "IAM is free",
    "AWS::Lambda::Function": "CDK's provider functions: invoked only while deploying and destroying, no standing "
                             "charge",
    "AWS::Lambda::LayerVersion": "a layer of CDK's provider functions: no standing charge",
    "AWS::PCS::Queue": "no charge of its own (PCS bills the controller and the instances)",
    "AWS::RDS::DBClusterParameterGroup": "no charge", "AWS::RDS::DBSubnetGroup": "no charge",
    "AWS::S3::BucketPolicy": "no charge",
    "AWS::SageMaker::ClusterSchedulerConfig": "task governance settings: no charge of their own",
    "AWS::SageMaker::ComputeQuota": "task governance settings: no charge of their own",
    "AWS::SNS::Topic": "billed per notification sent (alerts: a few a month), no standing charge",
    "AWS::SNS::Subscription": "no charge of its own", "AWS::SNS::TopicPolicy": "no charge",
    "AWS::SSM::Parameter": "standard-tier parameters are free (fmcluster creates ParameterTier.STANDARD ones)",
    "Custom::AWSCDK-EKS-HelmChart": "a deploy-time custom resource (its pods run on the cluster's nodes)",
    "Custom::AWSCDK-EKS-KubernetesResource": "a deploy-time custom resource",
    "Custom::CDKBucketDeployment": "a deploy-time custom resource (the bucket it fills bills)",
    "AWS::EC2::VPCEndpoint#Gateway": "the S3 gateway endpoint: gateway endpoints are free (VPC pricing page)",
}
"""A CloudFormation type the stacks create that bills nothing of its own, and why."""


def _from(table: Table, key: str, factor: float, how: str) -> tuple[float, str] | None:
    base = table.get(key)
    return None if base is None else (round(base["usd"] * factor, 4), how)


def _sagemaker(table: Table, key: str) -> tuple[float, str] | None:
    if key == "sagemaker.volume":
        return _from(table, "ebs.gp3", 1.0, "EBS gp3's price; SageMaker's price for a HyperPod node's volume is "
                                            "unconfirmed")
    itype = key.removeprefix("sagemaker.").removeprefix("ml.")
    if itype.startswith("m5."):
        size = itype.split(".")[1]
        factor = {"2xlarge": 8, "4xlarge": 16, "12xlarge": 48}[size]
        return (round(M5_LARGE * factor, 6), f"the EC2 on-demand price of {itype} (m5.large ${M5_LARGE}/h x "
                f"{factor}); SageMaker's HyperPod price of ml.{itype} is unconfirmed and at least this")
    return _from(table, f"ec2.{itype}", 1.0, f"the EC2 on-demand price of {itype}; SageMaker's HyperPod price of "
                                              f"ml.{itype} is unconfirmed and at least this")


def _rule(key: str, table: Table) -> tuple[float, str] | None:
    if key.startswith("sagemaker."):
        return _sagemaker(table, key)
    if key == "ec2.p5e.48xlarge":
        return _from(table, "ec2.p5en.48xlarge", 1.0, "p5en.48xlarge's price (the same 8 x H200); p5e's own "
                                                      "on-demand price is unconfirmed (not offered in us-east-1)")
    if key == "ec2.p6-b300.48xlarge":
        return _from(table, "ec2.p6-b200.48xlarge", 1.0, "p6-b200.48xlarge's price, as a floor; p6-b300's own "
                                                         "on-demand price is unconfirmed here")
    if key == "ec2.p6e-gb200.36xlarge":
        return _from(table, "ec2.p6-b200.48xlarge", 4 / 8, "4 GPUs at p6-b200.48xlarge's price per GPU; "
                                                           "p6e-gb200 is sold as UltraServer capacity, its on-demand "
                                                           "price is unconfirmed")
    if key.startswith("fsx.lustre.persistent2."):
        tier = int(key.rsplit(".", 1)[1])
        return _from(table, "fsx.lustre.persistent2.125", FSX_TIER_RATIO[tier],
                     f"the 125 MB/s/TiB price x {FSX_TIER_RATIO[tier]:.3f}, the {tier}:125 tier ratio of "
                     "ap-northeast-1's prices (DevelopersIO, 2022); this tier's us-east-1 price is unconfirmed")
    if key.startswith("pcs."):
        return _from(table, "ec2.m7i.4xlarge", 1.0, "the EC2 price of ParallelCluster's default head node "
                                                    "(m7i.4xlarge), the node a PCS controller stands in for; AWS "
                                                    "PCS's controller price is unconfirmed (its page was not "
                                                    "found in the sources read)")
    return None


ESTIMATES: Callable[[str, Table], tuple[float, str] | None] = _rule
"""Key, the Region's table so far -> (USD, how the estimate is made); None: no rule."""


def keys() -> list[str]:
    return sorted({*READ[BASE_REGION], *WHAT})


def build_region(region: str, live: Callable[[str, str], dict[str, Any] | None] | None = None) -> Table:
    """One Region's table: the Price List (``live(region, key)``), else a hand-read figure, else an estimate (from
    this Region's figures, else us-east-1's)."""
    table: Table = {}
    base = READ[BASE_REGION]
    for key in keys():  # sorted: ec2.* before fsx.*/pcs.*/sagemaker.*, which estimate from them
        got = live(region, key) if live else None
        if got is not None:
            table[key] = got
        elif key in READ.get(region, {}):
            table[key] = dict(READ[region][key])
        elif region != BASE_REGION and key in base:
            table[key] = {**base[key], "estimate": f"us-east-1's figure; {region}'s is unconfirmed"}
    for key in keys():
        if key in table:
            continue
        made = ESTIMATES(key, table)
        if made is None:
            raise ValueError(f"no figure and no estimate rule for {key} in {region}")
        unit, what = WHAT[key]
        table[key] = {"usd": made[0], "unit": unit, "what": what, "source": SOURCES[key.split(".")[0]], "via": "",
                      "estimate": made[1]}
    return dict(sorted(table.items()))


def build(live: Callable[[str, str], dict[str, Any] | None] | None = None, today: date | None = None) -> dict:
    prices = {region: build_region(region, live) for region in REGIONS}
    read = any(p.get("via", "").startswith("AWS Price List API") for t in prices.values() for p in t.values())
    return {"date": (today or date.today()).isoformat() if read else READ_ON, "base_region": BASE_REGION,
            "regions": list(REGIONS), "resource_types": {t: list(k) for t, k in sorted(BILLED_BY.items())},
            "free_types": dict(sorted(FREE.items())), "prices": prices}


def write(table: dict, path: Path = TABLE_PATH) -> None:
    path.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


# --- the Price List API ------------------------------------------------------------------------------------------

SAGEMAKER_HYPERPOD_COMPONENT = pricing.SAGEMAKER_HYPERPOD_COMPONENT


def filters(key: str, region: str) -> tuple[str, list[dict[str, str]], str] | None:
    """(service code, GetProducts filters, unit) of ``key`` in ``region``; None: the table does not read it there."""
    if key.startswith("ec2."):
        return "AmazonEC2", pricing.ec2_filters(key.removeprefix("ec2."), region), "Hrs"
    if key.startswith("sagemaker."):
        return "AmazonSageMaker", pricing.sagemaker_filters(key.removeprefix("sagemaker."), region), "Hrs"
    if key.startswith("fsx.lustre.persistent2."):
        return "AmazonFSx", pricing.fsx_filters("PERSISTENT_2", int(key.rsplit(".", 1)[1]), region) or [], "GB-Mo"
    if key == "ebs.gp3":
        return "AmazonEC2", pricing.ebs_filters("gp3", region), "GB-Mo"
    return None


def price_list_reader(client: Any, today: date) -> Callable[[str, str], dict[str, Any] | None]:
    """``live(region, key)`` on a ``pricing`` client: the Price List's one on-demand price, or None."""
    def live(region: str, key: str) -> dict[str, Any] | None:
        found = filters(key, region)
        if found is None:
            return None
        service, terms, unit = found
        try:
            price = pricing.on_demand_price(client, service, terms, unit, today)
        except pricing.PriceError:
            return None
        if price is None:
            return None
        unit_word, what = WHAT.get(key) or (READ[BASE_REGION][key]["unit"], READ[BASE_REGION][key]["what"])
        source = SOURCES.get(key.split(".")[0], EBS_PRICING)
        return {"usd": price.usd, "unit": unit_word, "what": what, "source": source,
                "via": f"AWS Price List API ({service} {price.sku}), read {price.fetched}"}

    return live


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fmcluster.aws.pricetable", description=__doc__.split("\n")[0])
    parser.add_argument("--offline", action="store_true", help="no Price List call: hand-read figures and estimates")
    parser.add_argument("--out", type=Path, default=TABLE_PATH)
    args = parser.parse_args(argv)
    live = None
    if not args.offline:
        import boto3  # only a refresh with credentials calls AWS; --offline and the tests never load it
        from botocore.exceptions import BotoCoreError, ClientError  # as above

        client = boto3.client("pricing", region_name=pricing.PRICING_REGION)
        reader = price_list_reader(client, date.today())

        def live(region: str, key: str) -> dict[str, Any] | None:
            try:
                return reader(region, key)
            except (BotoCoreError, ClientError) as exc:
                raise SystemExit(f"error: the AWS Price List could not be read ({exc}); run with --offline to build "
                                 "the table from the hand-read figures alone") from None
    table = build(live)
    write(table, args.out)
    estimated = sum(1 for t in table["prices"].values() for p in t.values() if p.get("estimate"))
    print(f"{args.out}: {sum(len(t) for t in table['prices'].values())} prices in {len(REGIONS)} Regions, "
          f"{estimated} of them estimates", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
