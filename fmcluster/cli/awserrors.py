"""How a command that calls AWS fails: one line on stderr (``error: ...``) and exit 1 (the account or the
network) or 2 (bad input), never a traceback. The words come from :func:`fmcluster.aws.session.translate`."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import typer

from fmcluster.aws import AwsError

F = TypeVar("F", bound=Callable[..., Any])


def fail(exc: AwsError, *, as_json: bool = False) -> NoReturn:
    """Print ``exc`` as one line (and as ``{"ok": false, "error": ...}`` on stdout for ``-o json``), then exit."""
    if as_json:
        print(json.dumps({"ok": False, "error": str(exc), "exit_code": exc.exit_code}, indent=2))
    print(f"error: {exc}", file=sys.stderr)
    raise typer.Exit(exc.exit_code)


@contextmanager
def account_errors(*, as_json: bool = False) -> Iterator[None]:
    """Inside, an :class:`AwsError` or anything botocore raises ends the command with one line."""
    try:
        yield
    except AwsError as exc:
        fail(exc, as_json=as_json)
    except Exception as exc:
        if not type(exc).__module__.startswith("botocore"):
            raise
        # botocore is loaded already: it raised this
        from fmcluster.aws.session import translate

        fail(translate(exc), as_json=as_json)


def aws_command(command: F) -> F:
    """Decorate a Typer command that calls AWS: its failures become one line and a stable exit code."""
    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = str(kwargs.get("output", "")).endswith("json")
        with account_errors(as_json=as_json):
            return command(*args, **kwargs)
    return wrapper  # type: ignore[return-value]
