"""On-demand prices from the Price List API under botocore's Stubber, on GetProducts answers stored as files
(tests/aws/pricing/): the filters sent, the one OnDemand price taken, pages followed, ambiguity refused,
and the cache with its date. Then `fmcluster plan --prices` end to end on the same answers."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from support import ROOT
from typer.testing import CliRunner

from fmcluster.aws import pricing
from fmcluster.aws.session import translate
from fmcluster.cli import app, plancost

ANSWERS = Path(__file__).with_name("pricing")
TODAY = date(2026, 11, 3)
runner = CliRunner()


def answer(name: str) -> dict:
    return json.loads((ANSWERS / name).read_text())


def request(service: str, filters: list[dict], token: str | None = None) -> dict:
    params = {"ServiceCode": service, "Filters": filters, "FormatVersion": "aws_v1", "MaxResults": 100}
    if token:
        params["NextToken"] = token
    return params


EC2_P5 = [
    {"Type": "TERM_MATCH", "Field": "instanceType", "Value": "p5.48xlarge"},
    {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"},
    {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
    {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
    {"Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA"},
    {"Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used"},
    {"Type": "TERM_MATCH", "Field": "operation", "Value": "RunInstances"},
]
FSX_250 = [
    {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"},
    {"Type": "TERM_MATCH", "Field": "fileSystemType", "Value": "Lustre"},
    {"Type": "TERM_MATCH", "Field": "storageType", "Value": "SSD"},
    {"Type": "TERM_MATCH", "Field": "deploymentOption", "Value": "Persistent"},
    {"Type": "TERM_MATCH", "Field": "throughputCapacity", "Value": "250"},
]


@pytest.fixture
def client():
    """A real boto3 pricing client whose calls the Stubber answers, checking every request's parameters."""
    real = boto3.client("pricing", region_name=pricing.PRICING_REGION)
    with Stubber(real) as stub:
        yield real, stub
        stub.assert_no_pending_responses()


@pytest.fixture
def cache(tmp_path: Path) -> pricing.PriceCache:
    return pricing.PriceCache(tmp_path / "prices.json")


def test_the_filters_sent_and_the_one_on_demand_price_taken(client, cache) -> None:
    real, stub = client
    stub.add_response("get_products", answer("ec2-p5.48xlarge-us-east-1.json"), request("AmazonEC2", EC2_P5))
    stub.add_response("get_products", answer("fsx-lustre-persistent-250-us-east-1.json"), request("AmazonFSx", FSX_250))
    quote = pricing.quote("us-east-1", ["p5.48xlarge"], ("PERSISTENT_2", 250), client=real, cache=cache, today=TODAY)
    p5 = quote.instances["p5.48xlarge"]
    assert (p5.usd, p5.unit, p5.sku, p5.fetched) == (12.5, "Hrs", "TESTSKUP5AAAAAAA", "2026-11-03")  # not Reserved's 1.0
    assert (quote.fsx.usd, quote.fsx.unit) == (0.123, "GB-Mo") and quote.fsx_note is None


def test_cached_prices_are_read_again_after_a_week(client, cache, tmp_path: Path) -> None:
    real, stub = client
    stub.add_response("get_products", answer("ec2-p5.48xlarge-us-east-1.json"), request("AmazonEC2", EC2_P5))
    pricing.quote("us-east-1", ["p5.48xlarge"], None, client=real, cache=cache, today=TODAY)
    stored = json.loads((tmp_path / "prices.json").read_text())
    [entry] = stored.values()
    assert entry["fetched"] == "2026-11-03" and entry["usd"] == 12.5
    # the same week: from the cache, no call (the Stubber has no answer queued and would fail)
    again = pricing.quote("us-east-1", ["p5.48xlarge"], None, client=real,
                          cache=pricing.PriceCache(tmp_path / "prices.json"), today=date(2026, 11, 10))
    assert again.instances["p5.48xlarge"].fetched == "2026-11-03"
    # eight days on: read again, with the new date
    stub.add_response("get_products", answer("ec2-p5.48xlarge-us-east-1.json"), request("AmazonEC2", EC2_P5))
    later = pricing.quote("us-east-1", ["p5.48xlarge"], None, client=real,
                          cache=pricing.PriceCache(tmp_path / "prices.json"), today=date(2026, 11, 11))
    assert later.instances["p5.48xlarge"].fetched == "2026-11-11"


def test_pages_are_followed(client, cache) -> None:
    real, stub = client
    filters = pricing.ec2_filters("p6-b200.48xlarge", "us-west-2")
    stub.add_response("get_products", answer("ec2-p6-b200.48xlarge-us-west-2-page1.json"), request("AmazonEC2", filters))
    stub.add_response("get_products", answer("ec2-p6-b200.48xlarge-us-west-2-page2.json"),
                      request("AmazonEC2", filters, "page-2-token"))
    quote = pricing.quote("us-west-2", ["p6-b200.48xlarge"], None, client=real, cache=cache, today=TODAY)
    assert quote.instances["p6-b200.48xlarge"].usd == 20.75


def test_two_prices_are_not_chosen_between(client, cache) -> None:
    real, stub = client
    stub.add_response("get_products", answer("ec2-p5.48xlarge-two-prices.json"), request("AmazonEC2", EC2_P5))
    with pytest.raises(pricing.PriceError, match="2 different AmazonEC2 prices.*not choosing one"):
        pricing.quote("us-east-1", ["p5.48xlarge"], None, client=real, cache=cache, today=TODAY)


def test_nothing_found_is_said_not_invented(client, cache) -> None:
    real, stub = client
    stub.add_response("get_products", answer("empty.json"), request("AmazonEC2", EC2_P5))
    stub.add_response("get_products", answer("empty.json"), request("AmazonFSx", FSX_250))
    quote = pricing.quote("us-east-1", ["p5.48xlarge"], ("PERSISTENT_2", 250), client=real, cache=cache, today=TODAY)
    assert quote.instances == {"p5.48xlarge": None} and quote.fsx is None
    assert "no PERSISTENT_2 price at 250 MB/s per TiB in us-east-1" in quote.fsx_note
    assert cache.entries == {}  # an absence is not cached


def test_scratch_file_systems_are_not_looked_up(client, cache) -> None:
    real, _ = client
    quote = pricing.quote("us-east-1", [], ("SCRATCH_2", None), client=real, cache=cache, today=TODAY)
    assert quote.fsx is None and "no Price List filters known for SCRATCH_2" in quote.fsx_note


def test_api_errors_become_one_sentence(client, cache) -> None:
    real, stub = client
    stub.add_client_error("get_products", "InvalidParameterException", "Input for filter regionCode is invalid")
    with pytest.raises(pricing.PriceError, match="cannot read the AWS Price List.*regionCode is invalid"):
        pricing.quote("us-east-1", ["p5.48xlarge"], None, client=real, cache=cache, today=TODAY)


def test_account_problems_are_left_to_the_session(client, cache) -> None:
    """Access denied is about the caller: it reaches the command's translation, not a PriceError."""
    real, stub = client
    stub.add_client_error("get_products", "AccessDeniedException", "not authorized to perform pricing:GetProducts")
    with pytest.raises(ClientError) as caught:
        pricing.quote("us-east-1", ["p5.48xlarge"], None, client=real, cache=cache, today=TODAY)
    assert "access denied to GetProducts" in str(translate(caught.value))


def test_cache_dir_is_the_users(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FMCLUSTER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert pricing.cache_dir() == tmp_path / "xdg" / "fmcluster"
    monkeypatch.setenv("FMCLUSTER_CACHE_DIR", str(tmp_path / "own"))
    assert pricing.cache_dir() == tmp_path / "own"


# --- fmcluster plan --prices ---------------------------------------------------------------------

@pytest.fixture
def stubbed_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, client):
    real, stub = client
    monkeypatch.setattr(pricing, "make_client", lambda session: real)
    monkeypatch.setenv("FMCLUSTER_CACHE_DIR", str(tmp_path / "cache"))
    # The default project at the 250 MB/s per TiB tier the recorded FSx price is for (it ships at 500).
    (tmp_path / "projects").mkdir()
    (tmp_path / "projects" / "default.yaml").write_text(
        (ROOT / "projects" / "default.yaml").read_text().replace("throughput_per_tib: 500", "throughput_per_tib: 250"))
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(tmp_path / "projects"))
    monkeypatch.setenv("COLUMNS", "80")
    return stub


def test_plan_prices_per_hour_and_day(stubbed_cli) -> None:
    stubbed_cli.add_response("get_products", answer("ec2-p5.48xlarge-us-east-1.json"), request("AmazonEC2", EC2_P5))
    stubbed_cli.add_response("get_products", answer("fsx-lustre-persistent-250-us-east-1.json"),
                             request("AmazonFSx", FSX_250))
    result = runner.invoke(app, ["plan", "default", "--prices"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert all(len(line.rstrip()) <= 80 for line in out.splitlines() if not line.startswith("cached in "))
    # 2 nodes x 12.50 = 25.00/h, 600.00/day; FSx 1,200 GiB x 0.123 / 730 h = 0.20/h, 4.85/day
    assert "2 x 12.50/h" in out and "25.00" in out and "600.00" in out
    assert "1,200 GiB x 0.123/GB-month" in out and "0.20" in out and "4.85" in out
    assert "25.20" in out and "604.85" in out  # the total
    assert f"prices: AWS Price List API, read {date.today().isoformat()}" in out
    assert "prices need --prices" not in out and "…" not in out


def test_plan_prices_say_capacity_blocks_are_priced_by_their_offering(stubbed_cli) -> None:
    filters = pricing.ec2_filters("p5en.48xlarge", "us-east-1")
    stubbed_cli.add_response("get_products", answer("ec2-p5en.48xlarge-us-east-1.json"), request("AmazonEC2", filters))
    stubbed_cli.add_response("get_products", answer("empty.json"),
                             request("AmazonFSx", pricing.fsx_filters("PERSISTENT_2", 1000, "us-east-1")))
    result = runner.invoke(app, ["plan", str(ROOT / "examples" / "p5en-capacity-block.yaml"), "--prices"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "capacity-block offering" in out and "train: priced by its capacity-block offering, left out" in out
    assert "capacity-block term: priced by its offering (`fmcluster capacity search`)" in out
    assert "14.25" not in out  # the on-demand rate is not passed off as the block's price


def test_plan_json_gains_prices_only_with_the_flag(stubbed_cli) -> None:
    plain = json.loads(runner.invoke(app, ["plan", "default", "-o", "json"]).stdout)
    assert "prices" not in plain
    stubbed_cli.add_response("get_products", answer("ec2-p5.48xlarge-us-east-1.json"), request("AmazonEC2", EC2_P5))
    stubbed_cli.add_response("get_products", answer("fsx-lustre-persistent-250-us-east-1.json"),
                             request("AmazonFSx", FSX_250))
    priced = json.loads(runner.invoke(app, ["plan", "default", "-o", "json", "--prices"]).stdout)
    assert priced["prices"]["instances"]["p5.48xlarge"]["usd"] == 12.5
    assert {k: v for k, v in priced.items() if k not in ("prices", "cost")} == {
        k: v for k, v in plain.items() if k != "cost"}
    # the cost lays the Price List's figures over the table: 2 nodes x 12.50, 1,200 GiB x 0.123
    [gpu] = [i for i in priced["cost"]["running_per_hour"]["items"] if i["key"] == "ec2.p5.48xlarge"]
    [fsx] = [i for i in priced["cost"]["idle_per_month"]["items"] if i["item"] == "FSx for Lustre"]
    assert gpu["usd"] == 2 * 12.5 and fsx["usd"] == 1200 * 0.123
    assert priced["cost"]["live_prices"] == {"read": True, "why_not": None}
    assert plain["cost"]["live_prices"] == {"read": False, "why_not": None}


def test_plan_without_prices_never_calls_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(session: object) -> None:
        raise AssertionError("plan without --prices made a pricing client")

    monkeypatch.setattr(pricing, "make_client", refuse)
    monkeypatch.setenv("FMCLUSTER_PROJECTS_DIR", str(ROOT / "projects"))
    result = runner.invoke(app, ["plan", "default"])
    assert result.exit_code == 0 and "cost (USD)" in result.stdout and "`plan --prices` reads" in result.stdout


def test_plan_prices_errors_print_the_plan_and_one_line(stubbed_cli) -> None:
    """The Price List failing is not the plan failing: the plan with the table's figures, exit 0, one line."""
    stubbed_cli.add_client_error("get_products", "ThrottlingException", "Rate exceeded")
    result = runner.invoke(app, ["plan", "default", "--prices"])
    assert result.exit_code == 0 and "Traceback" not in result.output
    [line] = [line for line in result.stderr.splitlines() if "live prices" in line]
    assert line.startswith(f"warning: {plancost.LIVE_NOT_READ}: AWS throttled GetProducts in us-east-1")
    assert "standard retry mode" in line
    assert "cost (USD)" in result.stdout and "prices: AWS Price List API" not in result.stdout


def test_plan_prices_that_do_not_agree_print_the_plan_and_one_line(stubbed_cli) -> None:
    stubbed_cli.add_response("get_products", answer("ec2-p5.48xlarge-two-prices.json"), request("AmazonEC2", EC2_P5))
    result = runner.invoke(app, ["plan", "default", "--prices"])
    assert result.exit_code == 0
    [line] = [line for line in result.stderr.splitlines() if "live prices" in line]
    assert line.startswith(f"warning: {plancost.LIVE_NOT_READ}: the Price List has 2 different AmazonEC2 prices")
    assert "cost (USD)" in result.stdout


def _sagemaker_answer(ml_type: str, usd: str) -> dict:
    """A GetProducts answer with one SageMaker HyperPod product (its OnDemand term; a Reserved one to be ignored)."""
    sku = "TESTSKUSM" + ml_type.replace(".", "").upper()[:7]
    dim = {"unit": "Hrs", "description": f"{ml_type} HyperPod", "pricePerUnit": {"USD": usd}}
    item = {"product": {"sku": sku, "productFamily": "ML Instance",
                        "attributes": {"servicecode": "AmazonSageMaker", "instanceName": ml_type,
                                       "regionCode": "us-east-1"}},
            "serviceCode": "AmazonSageMaker", "version": "test", "publicationDate": "2026-12-01T00:00:00Z",
            "terms": {"OnDemand": {f"{sku}.T": {"priceDimensions": {f"{sku}.T.D": dim}}},
                      "Reserved": {f"{sku}.R": {"priceDimensions": {f"{sku}.R.D": {**dim, "pricePerUnit":
                                                                                        {"USD": "1.0"}}}}}}}
    return {"FormatVersion": "aws_v1", "PriceList": [json.dumps(item)]}


def test_plan_prices_read_sagemaker_and_fsx_prices_for_hyperpod(stubbed_cli) -> None:
    """--prices on a HyperPod project reads the ml. types' prices from SageMaker's Price List (not EC2's) and the
    file system's: the cost lines use them, unmarked; what the Price List has not, keeps the table's estimate."""
    path = ROOT / "examples" / "p5en-hyperpod.yaml"
    stubbed_cli.add_response("get_products", answer("ec2-p5en.48xlarge-us-east-1.json"),
                             request("AmazonEC2", pricing.ec2_filters("p5en.48xlarge", "us-east-1")))
    for ml_type, found in (("ml.m5.12xlarge", None), ("ml.m5.4xlarge", "0.99"), ("ml.p5en.48xlarge", "70.5")):
        stubbed_cli.add_response("get_products", _sagemaker_answer(ml_type, found) if found else answer("empty.json"),
                                 request("AmazonSageMaker", pricing.sagemaker_filters(ml_type, "us-east-1")))
    stubbed_cli.add_response("get_products", answer("fsx-lustre-persistent-250-us-east-1.json"),
                             request("AmazonFSx", pricing.fsx_filters("PERSISTENT_2", 500, "us-east-1")))
    result = runner.invoke(app, ["plan", str(path), "-o", "json", "--prices"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["prices"]["sagemaker"]["ml.p5en.48xlarge"]["usd"] == 70.5
    assert data["prices"]["sagemaker"]["ml.m5.12xlarge"] is None
    idle = {i["key"]: i for i in data["cost"]["idle_per_month"]["items"] if i["key"]}
    train = idle["sagemaker.ml.p5en.48xlarge"]
    assert train["status"] == "priced" and "at 70.5/h" in train["basis"]
    assert idle["sagemaker.ml.m5.4xlarge"]["status"] == "priced"
    assert idle["sagemaker.ml.m5.12xlarge"]["status"] == "estimate"  # not in the Price List: the table's estimate
    fsx = idle["fsx.lustre.persistent2.500"]  # the recorded answer's 0.123 stands for the 500 tier's here
    assert fsx["status"] == "priced" and "0.123/GB-month" in fsx["basis"]
