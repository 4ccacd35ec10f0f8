"""Facts stated in fmcluster/facts.py agree with the sources they name (botocore, cfn-lint)."""

from __future__ import annotations

import json
from pathlib import Path

import botocore
import cfnlint

from fmcluster import facts


def test_regions_are_botocores() -> None:
    data = json.loads((Path(botocore.__file__).parent / "data" / "endpoints.json").read_text())
    partitions = {p["partition"]: set(p["regions"]) for p in data["partitions"]}
    assert set(facts.REGIONS) == partitions["aws"] | partitions["aws-cn"] | partitions["aws-us-gov"]


def test_az_id_prefixes_of_the_documented_examples() -> None:
    """The AWS "AZ IDs" page names use1-az1 (us-east-1), euw1-az1..3 (eu-west-1); EFS lists usw2, use2, apne1."""
    for zone, region in {"use1": "us-east-1", "euw1": "eu-west-1", "usw2": "us-west-2", "use2": "us-east-2",
                         "apne1": "ap-northeast-1", "apse2": "ap-southeast-2", "usgw1": "us-gov-west-1"}.items():
        assert facts.AZ_ID_REGIONS[zone] == region


def test_stack_limits_are_cfn_lints() -> None:
    schemas = Path(cfnlint.__file__).parent / "data" / "schemas" / "other"
    resources = json.loads((schemas / "resources" / "configuration.json").read_text())
    outputs = json.loads((schemas / "outputs" / "configuration.json").read_text())
    assert resources["maxProperties"] == facts.MAX_RESOURCES_PER_STACK
    assert outputs["maxProperties"] == facts.MAX_OUTPUTS_PER_STACK


def test_tag_rules() -> None:
    assert facts.tag_problem("team", "pre-training 2026/Q1 @x") is None
    assert facts.tag_problem("チーム", "値") is None  # letters of any script
    assert "reserved" in facts.tag_problem("AWS:x", "v")
    assert "'<'" in facts.tag_problem("a", "x<y")
    assert "set by fmcluster" in facts.tag_problem(facts.PROJECT_TAG, "x")
