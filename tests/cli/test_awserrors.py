"""The command's outer guard: botocore's exceptions raised outside a session's ``errors()`` still end the command
with the session's one line (the same words), and other exceptions pass through."""

from __future__ import annotations

import pytest
import typer
from botocore.exceptions import ClientError, NoCredentialsError

from fmcluster.aws import session as aws
from fmcluster.cli.awserrors import account_errors


def test_a_botocore_error_is_the_sessions_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as caught, account_errors():
        raise NoCredentialsError()
    assert caught.value.exit_code == 1
    assert capsys.readouterr().err == f"error: {aws.translate(NoCredentialsError())}\n"


def test_a_denied_call_is_worded_as_the_session_words_it(capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aws, "_current", [])  # no session made earlier in this process words it
    exc = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "DescribeStacks")
    with pytest.raises(typer.Exit), account_errors(as_json=True):
        raise exc
    out = capsys.readouterr()
    assert out.err.startswith("error: access denied to DescribeStacks") and '"ok": false' in out.out


def test_other_exceptions_pass_through() -> None:
    with pytest.raises(KeyError), account_errors():
        raise KeyError("x")
