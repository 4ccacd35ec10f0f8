"""Every resource type the synthesized stacks hold (the suite's shared synthesis of every project and example) is
either billed by keys of the price table (``fmcluster/prices.json``'s ``resource_types``, each key priced in every
Region of the table) or listed free with a reason (``free_types``); and each project's plan has a cost line for what
its own stacks create, so nothing the project creates is missing from its cost."""

from __future__ import annotations

import pytest
from support import PROJECTS, Synthesized

from fmcluster import prices
from fmcluster.generate.costs import project_cost as cost_summary
from fmcluster.plan import make_plan


def billing_type(resource: dict) -> str:
    """The type as the table bills it: an S3 gateway endpoint is not an interface endpoint."""
    kind = resource["Type"]
    if kind == "AWS::EC2::VPCEndpoint" and resource.get("Properties", {}).get("VpcEndpointType") == "Gateway":
        return f"{kind}#Gateway"
    return kind


def types_by_project(synthesized: Synthesized) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for stack, template in synthesized.templates.items():
        project = next(name for name in sorted(PROJECTS, key=len, reverse=True) if stack.startswith(f"{name}-"))
        out.setdefault(project, set()).update(billing_type(r) for r in template.get("Resources", {}).values())
    return out


def priced(prefix: str, keys: set[str]) -> bool:
    return any(key == prefix or (prefix.endswith(".") and key.startswith(prefix)) for key in keys)


def test_every_created_type_is_priced_or_free_with_a_reason(synthesized: Synthesized) -> None:
    created = set().union(*types_by_project(synthesized).values())
    assert created, "the shared synthesis holds no stack"
    missing = sorted(created - set(prices.RESOURCE_TYPES) - set(prices.FREE_TYPES))
    assert not missing, f"created, with no price line and not listed free (fmcluster.aws.pricetable): {missing}"
    assert not set(prices.RESOURCE_TYPES) & set(prices.FREE_TYPES)
    assert all(reason.strip() for reason in prices.FREE_TYPES.values())
    for region in prices.REGIONS:
        table = set(prices.region_table(region))
        for kind in created & set(prices.RESOURCE_TYPES):
            for prefix in prices.RESOURCE_TYPES[kind]:
                assert priced(prefix, table), f"{kind}: no {prefix} price in {region}"


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_the_plan_has_a_cost_line_for_what_its_stacks_create(synthesized: Synthesized, name: str) -> None:
    c = cost_summary(make_plan(PROJECTS[name]))
    keys = {i.key for i in (*c.running_per_hour, *c.idle_per_month) if i.key}
    for kind in sorted(types_by_project(synthesized)[name] & set(prices.RESOURCE_TYPES)):
        assert any(priced(prefix, keys) for prefix in prices.RESOURCE_TYPES[kind]), \
            f"{name}: its stacks create {kind}, the plan has no {' or '.join(prices.RESOURCE_TYPES[kind])} line"
