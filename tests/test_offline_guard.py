"""The guard in conftest: a test that reaches for AWS fails instead of leaving the machine."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws
from support import BLOCKED


def test_a_real_aws_call_is_blocked_and_recorded() -> None:
    client = boto3.client("ec2", region_name="us-east-1")
    with pytest.raises(Exception) as info:  # botocore may wrap it; the record below is what fails a test
        client.describe_instance_types(InstanceTypes=["p5.48xlarge"])
    assert "tests must not touch AWS" in repr(info.value) or BLOCKED
    assert any("ec2.us-east-1.amazonaws.com" in attempt for attempt in BLOCKED)
    BLOCKED.clear()  # this test meant to do it


def test_moto_calls_are_fine() -> None:
    with mock_aws():
        client = boto3.client("ec2", region_name="us-east-1")
        types = client.describe_instance_types(InstanceTypes=["p5.48xlarge"])["InstanceTypes"]
        assert types[0]["NetworkInfo"]["EfaInfo"]["MaximumEfaInterfaces"] == 32
