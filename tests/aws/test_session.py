"""The one AWS session: where its Region comes from, and how what botocore raises reads -- with botocore's own
configuration files, token caches and proxies underneath."""

from __future__ import annotations

import hashlib
import json
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest
from support import clean_aws_home

from fmcluster.aws import AwsError
from fmcluster.aws import session as aws
from fmcluster.facts import DEFAULT_REGIONS, REGIONS, is_opt_in

CONFIG = """\
[default]
region = ap-south-1
[profile dev]
region = eu-west-1
[profile sso]
sso_start_url = https://example.awsapps.com/start
sso_region = us-east-1
sso_account_id = 123456789012
sso_role_name = Admin
region = us-east-1
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return clean_aws_home(tmp_path, monkeypatch, CONFIG)


def project(region: str | None = None, zone: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(region=region, availability_zone_id=zone)


# --- the Region ----------------------------------------------------------------------------------

SOURCES = [("--region", "ca-central-1"), ("the project's region:", "sa-east-1"), ("AWS_REGION", "eu-north-1"),
           ("AWS_DEFAULT_REGION", "eu-west-3"), ("profile dev's region", "eu-west-1")]


@pytest.mark.parametrize("first", range(len(SOURCES)), ids=[s for s, _ in SOURCES])
def test_the_first_region_found_wins_in_the_documented_order(first: int, home: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Every source set from ``first`` on (none before it): the session takes ``first``'s Region."""
    given = dict(SOURCES[first:])
    monkeypatch.setenv("AWS_PROFILE", "dev")
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if var in given:
            monkeypatch.setenv(var, given[var])
    made = aws.aws_session(project(given.get("the project's region:")), region=given.get("--region"))
    assert (made.region, made.region_from) == SOURCES[first][::-1]
    assert made.client("ec2").meta.region_name == SOURCES[first][1]


def test_the_zone_names_the_region_when_nothing_else_does(home: Path) -> None:
    (home / "config").write_text("")
    made = aws.aws_session(project(zone="apne1-az4"))
    assert (made.region, made.region_from) == ("ap-northeast-1", "availability_zone_id apne1-az4")


def test_the_default_profile_region_comes_before_the_zone(home: Path) -> None:
    with pytest.raises(AwsError) as caught:
        aws.aws_session(project(zone="use1-az6"))
    assert caught.value.exit_code == 2
    assert str(caught.value) == ("Region ap-south-1 (from profile default's region) does not contain the project's "
                                 "availability_zone_id use1-az6, which is in us-east-1 (hint: set AWS_REGION or use "
                                 "--region us-east-1)")


def test_a_flag_without_the_zone_is_refused_and_one_with_it_is_taken(home: Path) -> None:
    with pytest.raises(AwsError, match=r"Region us-west-2 \(from --region\) does not contain .* use1-az6"):
        aws.aws_session(project(zone="use1-az6"), region="us-west-2")
    assert aws.aws_session(project(zone="use1-dfw2-az1"), region="us-east-1").region == "us-east-1"  # a Local Zone


def test_no_region_at_all(home: Path) -> None:
    (home / "config").write_text("")
    with pytest.raises(AwsError) as caught:
        aws.aws_session()
    assert caught.value.exit_code == 2 and str(caught.value).startswith("no AWS Region: fmcluster looks at --region")


def test_default_regions_are_real_and_the_rest_opt_in() -> None:
    assert DEFAULT_REGIONS <= set(REGIONS)
    assert not is_opt_in("us-east-1") and is_opt_in("af-south-1") and is_opt_in("mx-central-1")
    assert not is_opt_in("cn-north-1") and not is_opt_in("us-gov-west-1")  # other partitions: no opt-in


# --- what botocore raises, in one line -----------------------------------------------------------

def identity(made: aws.AwsSession) -> None:
    with made.errors():
        made.client("sts").get_caller_identity()


def test_an_expired_sso_token_in_the_cache_says_to_sign_in(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's own token cache (``~/.aws/sso/cache/<sha1 of the start URL>.json``) with a token past its time."""
    cache = home / ".aws" / "sso" / "cache"
    cache.mkdir(parents=True)
    key = hashlib.sha1(b"https://example.awsapps.com/start").hexdigest()
    (cache / f"{key}.json").write_text(json.dumps({"startUrl": "https://example.awsapps.com/start", "region": "us-east-1",
                                                   "accessToken": "old", "expiresAt": "2020-01-01T00:00:00Z"}))
    monkeypatch.setenv("AWS_PROFILE", "sso")
    with pytest.raises(AwsError) as caught:
        identity(aws.aws_session())
    assert caught.value.exit_code == 1
    assert str(caught.value) == ("the AWS SSO sign-in of profile sso has no valid token (missing or expired) (hint: "
                                 "run `aws sso login --profile sso`, then run this command again)")


def test_half_a_key_pair(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    with pytest.raises(AwsError, match=r"^incomplete AWS credentials: .*AWS_SECRET_ACCESS_KEY"):
        identity(aws.aws_session())


def test_a_config_file_that_does_not_parse_is_bad_input(home: Path) -> None:
    (home / "config").write_text("[profile dev\nregion = eu-west-1\n")
    with pytest.raises(AwsError) as caught:
        aws.aws_session(region="us-east-1")
    assert caught.value.exit_code == 2 and str(caught.value).startswith("cannot read the AWS configuration:")


def test_an_unreachable_proxy_is_named(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    with pytest.raises(AwsError) as caught:
        identity(aws.aws_session(region="us-east-1"))
    assert str(caught.value).startswith(f"cannot reach the proxy http://127.0.0.1:{port}")
    assert "HTTPS_PROXY" in str(caught.value)


# --- the service models ----------------------------------------------------------------------------

def test_every_session_of_a_process_reads_a_service_model_once(home: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore gives each session a loader of its own, which would parse EC2's ~6 MB model again for each one: after
    the first session on a data path (AWS_DATA_PATH), the next ones read no model file; another data path gets a
    loader of its own (a model placed there is the one its sessions see)."""
    import botocore.session
    from botocore.loaders import JSONFileLoader, create_loader

    # botocore's own loader per session, as outside this suite (tests/conftest.py shares one for the suite's sessions)
    monkeypatch.setattr(botocore.session, "create_loader", create_loader)
    read: list[str] = []
    real = JSONFileLoader.load_file

    def counted(self: JSONFileLoader, file_path: str) -> object:
        read.append(file_path)
        return real(self, file_path)

    monkeypatch.setattr(JSONFileLoader, "load_file", counted)
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path / "models"))  # a data path no session of this process used yet
    aws.aws_session(region="eu-west-1").client("ec2")
    assert any("ec2" in path for path in read)
    read.clear()
    for region in ("eu-west-1", "us-east-1"):
        aws.aws_session(region=region).client("ec2")
    assert read == []

    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path / "other-models"))
    aws.aws_session(region="eu-west-1").client("ec2")
    assert any("ec2" in path for path in read)
