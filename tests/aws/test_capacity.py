"""``fmcluster capacity search`` under botocore's Stubber (moto has no capacity blocks): the request sent, pages
followed, offerings sorted by start then price, priced per GPU-hour, zone IDs, the purchase command and the block."""

from __future__ import annotations

import importlib
import json
from datetime import datetime, timezone

import boto3
import pytest
from botocore.stub import Stubber
from rich.console import Console
from typer.testing import CliRunner

from fmcluster.aws import capacity
from fmcluster.cli import app

runner = CliRunner()
D = lambda day, hour=11: datetime(2026, 12, day, hour, 30, tzinfo=timezone.utc)  # noqa: E731
ZONES = {"AvailabilityZones": [{"ZoneName": "us-east-1a", "ZoneId": "use1-az4"},
                               {"ZoneName": "us-east-1b", "ZoneId": "use1-az6"}]}


def offering(oid: str, zone: str, start: datetime, fee: str, count: int = 4) -> dict:
    return {"CapacityBlockOfferingId": oid, "InstanceType": "p5.48xlarge", "AvailabilityZone": zone,
            "InstanceCount": count, "StartDate": start, "EndDate": start.replace(day=start.day + 7),
            "CapacityBlockDurationHours": 168, "UpfrontFee": fee, "CurrencyCode": "USD", "Tenancy": "default"}


@pytest.fixture
def ec2():
    client = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def test_sorted_by_start_then_price_and_priced_per_gpu_hour(ec2) -> None:
    client, stub = ec2
    request = {"InstanceType": "p5.48xlarge", "InstanceCount": 4, "CapacityDurationHours": 168,
               "StartDateRange": D(1, 0)}
    stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [
        offering("cbr-late", "us-east-1a", D(9), "20000.00"), offering("cbr-dear", "us-east-1b", D(2), "40000.00")],
        "NextToken": "t2"}, request)
    stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [
        offering("cbr-cheap", "us-east-1a", D(2), "30105.60")]}, {**request, "NextToken": "t2"})
    stub.add_response("describe_availability_zones", ZONES, {"AllAvailabilityZones": True})
    offers = capacity.search(client, "p5.48xlarge", 4, 7, start_after=D(1, 0))
    assert [o.offering_id for o in offers] == ["cbr-cheap", "cbr-dear", "cbr-late"]
    cheap = offers[0]
    assert cheap.gpus == 32 and cheap.zone_id == "use1-az4" and offers[1].zone_id == "use1-az6"
    assert cheap.per_gpu_hour == pytest.approx(30105.60 / (32 * 168))  # 5.60 USD per GPU-hour
    assert "--capacity-block-offering-id cbr-cheap --instance-platform Linux/UNIX" in cheap.purchase_command("us-east-1")
    assert "availability_zone_id: use1-az4" in cheap.capacity_yaml() and "type: capacity-block" in cheap.capacity_yaml()


def test_an_ultraserver_search_asks_for_ultraservers(ec2) -> None:
    client, stub = ec2
    stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": []},
                      {"UltraserverType": "u-p6e-gb200x72", "UltraserverCount": 1, "CapacityDurationHours": 24})
    assert capacity.search(client, "p6e-gb200.36xlarge", 18, 1, ultraserver_type="u-p6e-gb200x72",
                           ultraserver_count=1) == []


@pytest.mark.parametrize("days, ok", [(1, True), (14, True), (15, False), (21, True), (182, True), (189, False), (0, False)])
def test_durations(days: int, ok: bool) -> None:
    assert capacity.valid_days(days) is ok


def test_the_command_prints_the_purchase_and_the_block(monkeypatch: pytest.MonkeyPatch, ec2) -> None:
    client, stub = ec2
    monkeypatch.setattr(capacity, "make_client", lambda session: client)
    # the command's console is made at import: give it the width, whatever the terminal was then
    monkeypatch.setattr(importlib.import_module("fmcluster.cli.capacity"), "out", Console(width=160, color_system=None))
    request = {"InstanceType": "p5.48xlarge", "InstanceCount": 4, "CapacityDurationHours": 168}
    for _ in range(2):
        stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [
            offering("cbr-cheap", "us-east-1a", D(2), "30105.60")]}, request)
        stub.add_response("describe_availability_zones", ZONES, {"AllAvailabilityZones": True})
    args = ["capacity", "search", "--instance-type", "p5.48xlarge", "--count", "4", "--days", "7"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "use1-az4 (us-east-1a)" in result.stdout and "30,105.60 USD" in result.stdout and "5.60" in result.stdout
    assert "aws ec2 purchase-capacity-block --region us-east-1 --capacity-block-offering-id cbr-cheap" in result.stdout
    assert "reservation_id: cr-..." in result.stdout
    data = json.loads(runner.invoke(app, args + ["-o", "json"]).stdout)
    assert data["offerings"][0]["per_gpu_hour"] == pytest.approx(5.6) and data["offerings"][0]["gpus"] == 32


def test_a_bad_duration_exits_2_with_a_hint_before_any_call() -> None:
    result = runner.invoke(app, ["capacity", "search", "--instance-type", "p5.48xlarge", "--count", "4", "--days", "15",
                                 "--region", "us-east-1"])
    assert result.exit_code == 2 and "--days 15 is not a capacity block duration" in result.stderr
