"""CDK values the stacks read many times, each read across jsii at most once per process.

Every read of a CDK static (``Aws.REGION``, ``ec2.Port.tcp(988)``, ``Duration.days(7)``) and every
``Token.is_unresolved`` is a round trip to jsii's Node.js process: a project asks for them dozens of times, the
same answers each time. Here they are asked once (CDK's pseudo parameters are ``static readonly`` strings; ports
and durations are immutable values, safe to share between stacks), and a string is tested for tokens in Python,
exactly as CDK does.
"""

from __future__ import annotations

import re
from functools import cache

from aws_cdk import Aws, Duration, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_s3 as s3

_STRING_TOKEN = re.compile(r"\$\{Token\[[a-zA-Z0-9:._-]+\]\}|-1\.\d{10,16}e\+289")
"""aws-cdk-lib 2.275.0 ``core/lib/private/encoding.js``: ``STRING_TOKEN_REGEX`` (``BEGIN_STRING_TOKEN_MARKER``,
``VALID_KEY_CHARS``, ``END_TOKEN_MARKER``, ``STRINGIFIED_NUMBER_PATTERN``), which ``unresolved()`` tests a string with
once it contains ``ANY_TOKEN_MARKER`` (``Token[``)."""


def is_unresolved(value: object) -> bool:
    """``Token.is_unresolved(value)``; a string is tested here as CDK's ``unresolved()`` tests it, anything else in
    CDK."""
    if isinstance(value, str):
        return "Token[" in value and _STRING_TOKEN.search(value) is not None
    return Token.is_unresolved(value)


class _Pseudo:
    """``aws_cdk.Aws`` (``AWS::Region``, ``AWS::AccountId``...): ``static readonly`` tokens in CDK, the same string
    on every read, so each is read across jsii once."""

    def __getattr__(self, name: str) -> str:
        value = getattr(Aws, name)
        setattr(self, name, value)
        return value


AWS = _Pseudo()


@cache
def tcp(low: int, high: int | None = None) -> ec2.Port:
    """``ec2.Port.tcp(low)``, or ``tcp_range(low, high)`` when ``high`` differs."""
    return ec2.Port.tcp(low) if high is None or high == low else ec2.Port.tcp_range(low, high)


@cache
def all_traffic() -> ec2.Port:
    return ec2.Port.all_traffic()


@cache
def days(count: int) -> Duration:
    return Duration.days(count)


@cache
def block_all_public_access() -> s3.BlockPublicAccess:
    """``s3.BlockPublicAccess.BLOCK_ALL`` (``static readonly`` in CDK)."""
    return s3.BlockPublicAccess.BLOCK_ALL
