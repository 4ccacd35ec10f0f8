"""`fmcluster capacity search` refuses bad arguments before any AWS call: an instance type not in the catalog
(with "did you mean"), an UltraServer the type does not come in, dates in the past or in the wrong order."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from typer.testing import CliRunner

from fmcluster.aws import capacity as aws_capacity
from fmcluster.cli import app
from fmcluster.cli import capacity as cli

runner = CliRunner()
BASE = ["capacity", "search", "--count", "2", "--days", "7", "--region", "us-east-1"]


@pytest.fixture(autouse=True)
def no_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(region):
        raise AssertionError("the arguments were bad: AWS must not be called")
    monkeypatch.setattr(aws_capacity, "make_client", refuse)


@pytest.mark.parametrize(("args", "message"), [
    (["--instance-type", "p5.48xlarg"], "--instance-type 'p5.48xlarg' is not in the catalog (hint: did you mean "
                                        "'p5.48xlarge'?"),
    (["--instance-type", "m5.large"], "--instance-type 'm5.large' is not in the catalog (hint: known types: "),
    (["--instance-type", "p6-b200"], "--instance-type 'p6-b200' is not in the catalog (hint: did you mean "
                                     "'p6-b200.48xlarge'?"),
    (["--instance-type", "p5.48xlarge", "--start-after", "2020-01-01"], "--start-after 2020-01-01 is in the past"),
    (["--instance-type", "p5.48xlarge", "--end-before", "2021-06-30T12:00"], "--end-before 2021-06-30 is in the past"),
    (["--instance-type", "p5.48xlarge", "--start-after", "2999-02-01", "--end-before", "2999-01-01"],
     "--end-before 2999-01-01 00:00 is not after --start-after 2999-02-01 00:00"),
    (["--instance-type", "p6e-gb200.36xlarge", "--ultraserver", "u-p6e-gb200x64", "--ultraserver-count", "1"],
     "--ultraserver 'u-p6e-gb200x64' is not an UltraServer of p6e-gb200.36xlarge (hint: one of u-p6e-gb200x36, "
     "u-p6e-gb200x72)"),
])
def test_bad_arguments_exit_2_before_any_aws_call(args: list[str], message: str) -> None:
    result = runner.invoke(app, BASE + args)
    assert result.exit_code == cli.INPUT_EXIT, result.output
    assert f"error: {message}" in result.stderr and "Traceback" not in result.output


def test_today_is_not_in_the_past() -> None:
    now = datetime(2026, 11, 30, 21, 0, tzinfo=timezone.utc)
    today = datetime(2026, 11, 30, tzinfo=timezone.utc)
    assert cli.argument_problems("p5.48xlarge", today, None, None, now) == []
    assert cli.argument_problems("p5.48xlarge", datetime(2026, 11, 29, tzinfo=timezone.utc), None, None, now)


def test_good_arguments_reach_aws() -> None:
    result = runner.invoke(app, BASE + ["--instance-type", "p5.48xlarge", "--start-after", "2999-01-01"])
    assert isinstance(result.exception, AssertionError) and "must not be called" in str(result.exception)


def test_a_duration_blocks_are_not_sold_in_is_refused_with_exit_2_before_any_aws_call() -> None:
    """README: a bad argument exits 2, as a bad project file does; the nearest durations are named."""
    from typer.testing import CliRunner

    from fmcluster.cli import app

    result = CliRunner().invoke(app, ["capacity", "search", "--instance-type", "p5.48xlarge", "--count", "4",
                                      "--days", "20"])
    assert result.exit_code == 2
    assert "--days 20 is not a capacity block duration" in result.output and "nearest: 14 or 21" in result.output
