"""How a command that calls AWS fails: one line on stderr (``error: ...``) and exit 1 (the account or the
network) or 2 (bad input), never a traceback. The words come from :func:`fmcluster.aws.session.translate`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer

from fmcluster.aws import AwsError


def fail(exc: AwsError, *, as_json: bool = False) -> NoReturn:
    """Print ``exc`` as one line (and as ``{"ok": false, "error": ...}`` on stdout for ``-o json``), then exit."""
    if as_json:
        print(json.dumps({"ok": False, "error": str(exc), "exit_code": exc.exit_code}, indent=2))
    print(f"error: {exc}", file=sys.stderr)
    raise typer.Exit(exc.exit_code)


@contextmanager
def account_errors(*, as_json: bool = False) -> Iterator[None]:
    """Inside, an :class:`AwsError` or anything botocore raises ends the command with one line (botocore's
    exceptions translated by the session's :func:`~fmcluster.aws.session.errors`, as every call inside is)."""
    # boto3 loads here, for the commands that call AWS alone (each makes its session inside)
    from fmcluster.aws.session import errors

    try:
        with errors():
            yield
    except AwsError as exc:
        fail(exc, as_json=as_json)
