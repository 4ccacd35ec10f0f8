"""The compute fleet's status in ParallelCluster's DynamoDB table (``fmcluster.aws.fleet``), on moto."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from fmcluster.aws import fleet


@pytest.fixture
def ddb():
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
        client.create_table(TableName="parallelcluster-c1", KeySchema=[{"AttributeName": "Id", "KeyType": "HASH"}],
                            AttributeDefinitions=[{"AttributeName": "Id", "AttributeType": "S"}],
                            BillingMode="PAY_PER_REQUEST")
        client.put_item(TableName="parallelcluster-c1", Item={"Id": {"S": "COMPUTE_FLEET"}, "Data": {"M": {
            "status": {"S": "RUNNING"}, "lastStatusUpdatedTime": {"S": "2026-11-01 10:00:00+00:00"}}}})
        yield client


def test_a_request_is_written_as_parallelcluster_writes_it(ddb) -> None:
    fleet.request(ddb, "c1", "RUNNING", "STOP_REQUESTED")
    data = ddb.get_item(TableName="parallelcluster-c1", Key=fleet.FLEET_KEY)["Item"]["Data"]["M"]
    assert data["status"] == {"S": "STOP_REQUESTED"}
    assert data["lastStatusUpdatedTime"]["S"] != "2026-11-01 10:00:00+00:00"  # the time of the request


def test_a_status_changed_meanwhile_is_not_overwritten(ddb) -> None:
    with pytest.raises(fleet.FleetError, match="changed while fmcluster set it to STOP_REQUESTED"):
        fleet.request(ddb, "c1", "STOPPED", "STOP_REQUESTED")  # it is RUNNING: someone else's status stays
    assert fleet.status(ddb, "c1") == "RUNNING"


def test_a_cluster_without_a_table_says_so(ddb) -> None:
    with pytest.raises(fleet.FleetError, match="parallelcluster-other"):
        fleet.status(ddb, "other")


def test_a_fleet_already_at_its_goal_is_left_alone(ddb, monkeypatch) -> None:
    monkeypatch.setattr(fleet, "_pause", lambda _s: pytest.fail("no wait"))
    assert fleet.change(ddb, "c1", fleet.START) == "RUNNING"
    assert fleet.status(ddb, "c1") == "RUNNING"


def test_a_fleet_started_by_someone_else_while_stopping_stops_the_wait(ddb, monkeypatch) -> None:
    def someone_starts_it(_seconds: float) -> None:
        fleet.request(ddb, "c1", fleet.status(ddb, "c1"), "START_REQUESTED")

    monkeypatch.setattr(fleet, "_pause", someone_starts_it)
    with pytest.raises(fleet.FleetError, match="went to START_REQUESTED while fmcluster waited for STOPPED"):
        fleet.change(ddb, "c1", fleet.STOP)
