"""The stacks' once-per-process CDK values (fmcluster.stacks.tokens) answer as CDK itself does."""

from __future__ import annotations

from aws_cdk import App, Aws, Fn, Stack, Token
from aws_cdk import aws_ec2 as ec2

from fmcluster.stacks import tokens


def _samples() -> list[object]:
    stack = Stack(App(), "Probe")
    vpc = ec2.CfnVPC(stack, "Vpc", cidr_block="10.0.0.0/16")
    number = Token.as_number(vpc.attr_vpc_id)
    return [
        "subnet-0123", "", "Token[", "${Token[]}", "${Token[TOKEN.1", "prefix ${Token[not valid!]} suffix",
        vpc.ref, f"arn:{Aws.PARTITION}:s3:::b/*", Fn.import_value("x-VpcId"), f"{vpc.attr_cidr_block}/extra",
        Token.as_string(number), str(-1.8881545897087626e+289), "#{Token[TOKEN.12]}",
        Token.as_list(vpc.attr_cidr_block_associations)[0], number, 42, Token.as_list(vpc.attr_ipv6_cidr_blocks),
    ]


def test_is_unresolved_agrees_with_cdk_on_tokens_literals_and_near_misses():
    samples = _samples()
    assert [tokens.is_unresolved(s) for s in samples] == [Token.is_unresolved(s) for s in samples]
    assert any(tokens.is_unresolved(s) for s in samples) and not all(tokens.is_unresolved(s) for s in samples)


def test_cached_values_are_cdks_own():
    assert tokens.AWS.REGION == Aws.REGION and tokens.AWS.ACCOUNT_ID == Aws.ACCOUNT_ID
    stack = Stack(App(), "Ports")
    assert stack.resolve(tokens.tcp(988).to_rule_json()) == stack.resolve(ec2.Port.tcp(988).to_rule_json())
    assert stack.resolve(tokens.tcp(1018, 1023).to_rule_json()) == stack.resolve(
        ec2.Port.tcp_range(1018, 1023).to_rule_json())
    assert tokens.tcp(988, 988) is tokens.tcp(988, 988)  # one jsii object for every stack
    assert tokens.days(7).to_days() == 7
