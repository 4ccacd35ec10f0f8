"""``python -m fmcluster.aws.pricetable``, the command that writes ``fmcluster/prices.json``: the checked-in table is
its output (built again offline here, entry by entry), and with a Price List client (botocore's Stubber: moto has no
``pricing`` API) each EC2, SageMaker HyperPod, FSx and EBS figure is the Price List's, sent with the filters below."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from fmcluster.aws import pricetable, pricing

TODAY = date(2026, 12, 2)


def product(service: str, sku: str, usd: str, unit: str) -> str:
    """One Price List item as GetProducts returns it (a JSON string): its OnDemand term and a Reserved one."""
    dim = {"unit": unit, "description": "test", "pricePerUnit": {"USD": usd}}
    return json.dumps({"product": {"sku": sku, "attributes": {"servicecode": service}}, "serviceCode": service,
                       "terms": {"OnDemand": {f"{sku}.T": {"priceDimensions": {f"{sku}.T.D": dim}}},
                                 "Reserved": {f"{sku}.R": {"priceDimensions": {f"{sku}.R.D": {**dim, "pricePerUnit":
                                                                                                  {"USD": "0.01"}}}}}},
                       "version": "test", "publicationDate": "2026-12-01T00:00:00Z"})


def match(**terms: str) -> list[dict[str, str]]:
    return [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in terms.items()]


def params(service: str, filters: list[dict[str, str]]) -> dict:
    return {"ServiceCode": service, "Filters": filters, "FormatVersion": "aws_v1", "MaxResults": 100}


def test_the_checked_in_table_is_the_commands_output() -> None:
    checked_in = json.loads(pricetable.TABLE_PATH.read_text(encoding="utf-8"))
    offline = pricetable.build()
    assert checked_in["regions"] == offline["regions"] and checked_in["base_region"] == offline["base_region"]
    for region, table in offline["prices"].items():
        assert set(checked_in["prices"][region]) == set(table), region
        for key, entry in checked_in["prices"][region].items():
            if not entry.get("via", "").startswith("AWS Price List API"):  # read live: not rebuilt offline
                assert entry == table[key], f"{region} {key}: edited by hand? run `python -m fmcluster.aws.pricetable`"


def test_offline_the_command_writes_the_table(tmp_path: Path) -> None:
    out = tmp_path / "prices.json"
    assert pricetable.main(["--offline", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == pricetable.TABLE_PATH.read_text(encoding="utf-8")


def test_every_figure_is_read_or_estimated_by_a_stated_rule() -> None:
    for region, table in pricetable.build()["prices"].items():
        for key, entry in table.items():
            assert entry["usd"] > 0, (region, key)
            assert entry.get("estimate") or entry["via"], (region, key)
    # a Region's own hand-read figure wins over us-east-1's
    assert "estimate" not in pricetable.build()["prices"]["us-east-2"]["nat.hour"]


@pytest.fixture
def client():
    real = boto3.client("pricing", region_name=pricing.PRICING_REGION)
    with Stubber(real) as stub:
        yield real, stub
        stub.assert_no_pending_responses()


def test_the_price_list_figures_go_in_with_the_filters_sent(client) -> None:
    real, stub = client
    answers = [
        ("AmazonEC2", match(instanceType="p5.48xlarge", regionCode="us-west-2", operatingSystem="Linux",
                            tenancy="Shared", preInstalledSw="NA", capacitystatus="Used", operation="RunInstances"),
         "12.5", "Hrs", "ec2.p5.48xlarge"),
        ("AmazonSageMaker", match(regionCode="us-west-2", instanceName="ml.p5.48xlarge",
                                  component=pricetable.SAGEMAKER_HYPERPOD_COMPONENT), "20.5", "Hrs",
         "sagemaker.ml.p5.48xlarge"),
        ("AmazonFSx", match(regionCode="us-west-2", fileSystemType="Lustre", storageType="SSD",
                            deploymentOption="Persistent", throughputCapacity="500"), "0.333", "GB-Mo",
         "fsx.lustre.persistent2.500"),
        ("AmazonEC2", match(regionCode="us-west-2", productFamily="Storage", volumeApiName="gp3"), "0.0808",
         "GB-Mo", "ebs.gp3"),
    ]
    for service, filters, usd, unit, key in answers:
        stub.add_response("get_products", {"FormatVersion": "aws_v1",
                                           "PriceList": [product(service, f"SKU{len(key)}", usd, unit)]},
                          params(service, filters))
    live = pricetable.price_list_reader(real, TODAY)
    got = {key: live("us-west-2", key) for *_, key in answers}
    assert {k: v["usd"] for k, v in got.items()} == {key: float(usd) for _, _, usd, _, key in answers}
    assert all(v["via"].startswith("AWS Price List API") and "read 2026-12-02" in v["via"] for v in got.values())
    assert live("us-west-2", "nat.hour") is None  # no filters known: the hand-read figure stays


def test_a_live_figure_wins_and_dates_the_table() -> None:
    def live(region: str, key: str):
        if key == "sagemaker.ml.p5.48xlarge":
            return {"usd": 20.5, "unit": "hour", "what": "ml.p5.48xlarge SageMaker HyperPod",
                    "source": pricetable.SAGEMAKER_PRICING, "via": "AWS Price List API (AmazonSageMaker X), read x"}
        return None

    table = pricetable.build(live, today=TODAY)
    assert table["date"] == "2026-12-02"
    entry = table["prices"]["us-east-1"]["sagemaker.ml.p5.48xlarge"]
    assert entry["usd"] == 20.5 and "estimate" not in entry
    assert "estimate" in table["prices"]["us-east-1"]["sagemaker.ml.p5en.48xlarge"]


def test_no_match_keeps_the_table_figure(client) -> None:
    real, stub = client
    stub.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": []},
                      params("AmazonSageMaker", match(regionCode="us-east-1", instanceName="ml.p5.48xlarge",
                                                      component=pricetable.SAGEMAKER_HYPERPOD_COMPONENT)))
    assert pricetable.price_list_reader(real, TODAY)("us-east-1", "sagemaker.ml.p5.48xlarge") is None
