"""The dated table of AWS list prices the plan and ``destroy`` read, by Region: ``fmcluster/prices.json``.

Pure data: no AWS call. The table is generated (``python -m fmcluster.aws.pricetable``), never edited by hand.
Each figure names the AWS page it is a list price on (``source``) and where it was read
(``via``: the AWS Price List API, or a public copy of the page). A figure no source gave is an **estimate** made by a
stated rule (``estimate`` says how, and that AWS's own figure is unconfirmed): the plan adds it to its totals marked
``~`` and names it. ``fmcluster plan --prices`` reads the AWS Price List API instead (:mod:`fmcluster.aws.pricing`),
for the project's own Region and today.

Keys: ``ec2.<instance type>`` (Linux on-demand, per hour), ``sagemaker.<ml. type>`` (SageMaker HyperPod
instance, per hour), ``fsx.lustre.persistent2.<MB/s per TiB>`` (GB-month), ``nat.hour``, ``nat.gb``, ``ipv4.hour``
(a public IPv4 address), ``s3.standard``, ``ebs.gp3``, ``logs.storage`` (GB-month), ``logs.ingest`` (GB),
``kms.key`` and ``secretsmanager.secret`` (month), ``aurora.serverless_v2.acu`` (ACU-hour), ``aurora.storage``
(GB-month), ``aps.ingest`` (per 10 million samples), ``aps.storage`` (GB-month), ``grafana.editor`` and
``grafana.viewer`` (user-month), ``pcs.<small|medium|large>`` (the PCS cluster controller, per hour),
``eks.cluster`` and ``eks.cluster.extended`` (the EKS control plane, per hour: :func:`eks_control_plane_key`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

TABLE_PATH = Path(__file__).with_name("prices.json")


@dataclass(frozen=True)
class ListPrice:
    usd: float | None
    """USD per :attr:`unit`; None: no figure (a live lookup that found none)."""
    unit: str
    """``hour``, ``GB-month``, ``month``, ``ACU-hour``, ``user-month``, ``10M samples``, ``GB``."""
    what: str
    """Words for the plan."""
    source: str
    """The page the figure is AWS's list price on (URL)."""
    via: str = ""
    """Where the figure was read when not on :attr:`source` itself (a public copy, the Price List API)."""
    estimate: str = ""
    """Non-empty: the figure is an estimate, made as this says (AWS's own figure is unconfirmed)."""


PriceLookup = Callable[[str], ListPrice]


@cache
def _table() -> dict:
    return json.loads(TABLE_PATH.read_text(encoding="utf-8"))


PRICE_REGION: str = _table()["base_region"]
"""The Region whose figures stand in for a Region the table does not hold."""
PRICE_DATE: str = _table()["date"]
"""The day the table's figures were read (ISO 8601)."""
REGIONS: tuple[str, ...] = tuple(_table()["regions"])
RESOURCE_TYPES: dict[str, tuple[str, ...]] = {t: tuple(k) for t, k in _table()["resource_types"].items()}
"""A CloudFormation type the stacks create -> the price keys (or key prefixes) its bill is made of."""
FREE_TYPES: dict[str, str] = dict(_table()["free_types"])
"""A CloudFormation type that bills nothing of its own -> why."""


def _entry(raw: dict) -> ListPrice:
    return ListPrice(raw["usd"], raw["unit"], raw["what"], raw["source"], raw.get("via", ""), raw.get("estimate", ""))


@cache
def region_table(region: str | None) -> dict[str, ListPrice]:
    """Every figure of ``region``; a Region the table lacks gets us-east-1's, each marked as an estimate. No Region
    (a project that names none): us-east-1's, as they are (the plan's notes say which Region's figures it shows)."""
    prices = _table()["prices"]
    region = region or PRICE_REGION
    if region in prices:
        return {k: _entry(v) for k, v in prices[region].items()}
    where = region
    out = {}
    for key, raw in prices[PRICE_REGION].items():
        p = _entry(raw)
        how = f"{PRICE_REGION}'s figure; {where} is not in the table (`plan --prices` reads its own)"
        out[key] = ListPrice(p.usd, p.unit, p.what, p.source, p.via, f"{how}; {p.estimate}" if p.estimate else how)
    return out


TABLE: dict[str, ListPrice] = region_table(PRICE_REGION)
"""Every figure of the base Region, by key."""


def list_price(key: str, region: str | None = PRICE_REGION) -> ListPrice:
    """The table's figure for ``key`` in ``region``; ``ValueError`` naming the key when the table has no such key."""
    try:
        return region_table(region)[key]
    except KeyError:
        raise ValueError(f"no list price {key!r} in the table ({region or PRICE_REGION}, {PRICE_DATE})") from None


def lookup(region: str | None) -> PriceLookup:
    """The table's prices for one Region, as the plan's cost reads them."""
    return lambda key: list_price(key, region)


def eks_control_plane_key(extended_support: bool) -> str:
    """The price key of the EKS control plane: standard support ($0.10/h) or, for a Kubernetes version past its end
    of standard support, extended support ($0.60/h; shared/FACTS.md section 5b.x)."""
    return "eks.cluster.extended" if extended_support else "eks.cluster"
