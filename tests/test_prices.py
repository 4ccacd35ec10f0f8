"""The dated table of list prices (:mod:`fmcluster.prices`, ``fmcluster/prices.json``): a key for everything a project
creates, in every Region the table holds, each figure with the AWS page it is a list price on and where it was read,
no figure missing (an estimate says how it is made), an unknown key refused by name."""

from __future__ import annotations

from datetime import date

import pytest

from fmcluster import catalog, prices
from fmcluster.config import hyperpod, hyperpod_eks, parallelcluster, pcs
from fmcluster.config.storage import PERSISTENT_2_THROUGHPUT


@pytest.mark.parametrize("region", prices.REGIONS)
def test_every_instance_a_project_can_run_has_a_figure(region: str) -> None:
    ec2 = {*catalog.CATALOG, *parallelcluster.DEFAULT_HEAD_NODE.values(), *parallelcluster.DEFAULT_LOGIN_NODE.values(),
           pcs.DEFAULT_LOGIN_TYPE}
    for itype in ec2:
        p = prices.list_price(f"ec2.{itype}", region)
        assert p.unit == "hour" and p.usd, itype
    for itype in {*map(catalog.hyperpod_type, catalog.HYPERPOD_TYPES), hyperpod.DEFAULT_CONTROLLER,
                  hyperpod.DEFAULT_LOGIN, hyperpod_eks.DEFAULT_SYSTEM_TYPE}:
        p = prices.list_price(f"sagemaker.{itype}", region)
        assert p.unit == "hour" and p.usd, itype


@pytest.mark.parametrize("region", prices.REGIONS)
def test_every_fsx_tier_and_pcs_size_has_a_figure(region: str) -> None:
    for tier in PERSISTENT_2_THROUGHPUT:
        p = prices.list_price(f"fsx.lustre.persistent2.{tier}", region)
        assert p.unit == "GB-month" and p.usd, tier
    assert prices.list_price("fsx.lustre.scratch2", region).usd
    for size in pcs.SIZE_NODES:
        assert prices.list_price(f"pcs.{size.lower()}", region).unit == "hour"


@pytest.mark.parametrize("key", ["nat.hour", "nat.gb", "ipv4.hour", "s3.standard", "kms.key", "logs.storage",
                                 "aurora.serverless_v2.acu", "aurora.storage", "secretsmanager.secret", "aps.ingest",
                                 "aps.storage", "grafana.editor", "eks.cluster", "eks.cluster.extended", "ebs.gp3"])
def test_the_services_a_project_creates_have_figures(key: str) -> None:
    for region in prices.REGIONS:
        assert prices.list_price(key, region).usd, (key, region)


def test_every_figure_names_the_aws_page_and_where_it_was_read_or_how_it_is_estimated() -> None:
    for region in prices.REGIONS:
        for key, price in prices.region_table(region).items():
            assert price.source.startswith("https://aws.amazon.com/") and price.source.endswith("/pricing/") or \
                price.source.endswith("/pricing/on-demand/"), key
            assert price.usd is not None and price.usd > 0, (region, key)
            assert price.via or price.estimate, f"{region} {key}: a figure names where it was read or how it is made"


def test_the_eks_control_plane_key_follows_extended_support() -> None:
    assert prices.list_price(prices.eks_control_plane_key(False)).usd == 0.10
    assert prices.list_price(prices.eks_control_plane_key(True)).usd == 0.60  # shared/FACTS.md section 5b.x


def test_a_region_outside_the_table_gets_us_east_1s_figures_marked_as_estimates() -> None:
    base = prices.list_price("ec2.p5.48xlarge")
    elsewhere = prices.list_price("ec2.p5.48xlarge", "eu-north-1")
    assert elsewhere.usd == base.usd and "eu-north-1 is not in the table" in elsewhere.estimate
    assert not prices.list_price("ec2.p5.48xlarge", None).estimate  # no Region: us-east-1's, the notes say so


def test_the_table_is_dated() -> None:
    assert prices.PRICE_REGION == "us-east-1" and prices.PRICE_REGION in prices.REGIONS
    assert date.fromisoformat(prices.PRICE_DATE) <= date.today()


def test_an_unknown_key_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'ec2.p9.96xlarge'"):
        prices.list_price("ec2.p9.96xlarge")
