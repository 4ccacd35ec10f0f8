"""The dated table of list prices (:mod:`fmcluster.prices`): a key for everything a project creates, each figure
with the AWS page it is a list price on, and an unknown key refused by name."""

from __future__ import annotations

from datetime import date

import pytest

from fmcluster import catalog, prices
from fmcluster.config import hyperpod, parallelcluster, pcs
from fmcluster.config.storage import PERSISTENT_2_THROUGHPUT


def test_every_instance_a_project_can_run_has_a_key() -> None:
    ec2 = {*catalog.CATALOG, *parallelcluster.DEFAULT_HEAD_NODE.values(), *parallelcluster.DEFAULT_LOGIN_NODE.values(),
           pcs.DEFAULT_LOGIN_TYPE}
    for itype in ec2:
        assert prices.list_price(f"ec2.{itype}").unit == "hour", itype
    for itype in {*map(catalog.hyperpod_type, catalog.HYPERPOD_TYPES), hyperpod.DEFAULT_CONTROLLER,
                  hyperpod.DEFAULT_LOGIN}:
        assert prices.list_price(f"sagemaker.{itype}").unit == "hour", itype


def test_every_persistent_2_tier_and_pcs_size_has_a_key() -> None:
    assert [prices.list_price(f"fsx.lustre.persistent2.{t}").unit for t in PERSISTENT_2_THROUGHPUT] == [
        "GB-month"] * len(PERSISTENT_2_THROUGHPUT)
    for size in pcs.SIZE_NODES:
        assert prices.list_price(f"pcs.{size.lower()}").unit == "hour"


@pytest.mark.parametrize("key", ["nat.hour", "nat.gb", "s3.standard", "kms.key", "logs.storage",
                                 "aurora.serverless_v2.acu", "aurora.storage", "secretsmanager.secret", "aps.ingest",
                                 "aps.storage", "grafana.editor", "eks.cluster", "ebs.gp3"])
def test_the_services_a_project_creates_have_keys(key: str) -> None:
    assert prices.list_price(key).what


def test_every_figure_names_the_aws_page_it_is_a_list_price_on() -> None:
    for key, price in prices.TABLE.items():
        assert price.source.startswith("https://aws.amazon.com/") and price.source.endswith("/pricing/") or \
            price.source == prices.EC2_PRICING, key
        assert price.usd is None or price.usd > 0, key
        if price.usd is not None:  # none was read on the AWS page itself (script-rendered or not in the sources)
            assert price.via, f"{key}: a figure read elsewhere than its AWS page names where"


def test_the_table_is_dated_and_of_one_region() -> None:
    assert prices.PRICE_REGION == "us-east-1"
    assert date.fromisoformat(prices.PRICE_DATE) <= date.today()


def test_an_unknown_key_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'ec2.p9.96xlarge'"):
        prices.list_price("ec2.p9.96xlarge")
