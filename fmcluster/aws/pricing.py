"""On-demand prices from the AWS Price List API (boto3 ``pricing``), cached under the user's cache directory.

Only ``fmcluster plan --prices`` calls this. No price is written down anywhere in fmcluster: each
comes from ``GetProducts`` (the OnDemand term of the one product that matches the filters) and is
cached with the date it was read, for :data:`MAX_AGE_DAYS` days.

Filters (attribute names as the Price List spells them): EC2 instances are Linux, shared tenancy,
no pre-installed software, ``capacitystatus: Used``, operation ``RunInstances``, billed in ``Hrs``;
FSx for Lustre PERSISTENT_2 is ``fileSystemType: Lustre``, ``storageType: SSD``,
``deploymentOption: Persistent`` and its ``throughputCapacity`` tier (125/250/500/1000 MB/s per TiB
are PERSISTENT_2's own), billed in ``GB-Mo``. Where more than one price matches, nothing is guessed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from fmcluster.aws.session import AwsSession, is_account_problem
from fmcluster.facts import HOURS_PER_MONTH

PRICING_REGION = "us-east-1"
"""The Price List API answers in us-east-1 (also eu-central-1 and ap-south-1) for every Region's prices."""

MAX_AGE_DAYS = 7
"""A cached price older than this is read again."""



class PriceError(RuntimeError):
    """The Price List could not be read, or did not answer with one price."""


@dataclass(frozen=True)
class Price:
    usd: float
    unit: str
    """``Hrs`` for an instance, ``GB-Mo`` for FSx storage."""
    description: str
    sku: str
    fetched: str
    """The day it was read from the Price List API (ISO 8601)."""


def make_client(session: AwsSession) -> Any:
    """The Price List client of the command's session, in :data:`PRICING_REGION` (tests replace this)."""
    return session.client("pricing", PRICING_REGION)


def cache_dir() -> Path:
    """``$FMCLUSTER_CACHE_DIR``, else ``$XDG_CACHE_HOME/fmcluster``, else ``~/.cache/fmcluster``."""
    if os.environ.get("FMCLUSTER_CACHE_DIR"):
        return Path(os.environ["FMCLUSTER_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fmcluster"


def _match(**terms: str) -> list[dict[str, str]]:
    return [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in terms.items()]


def ec2_filters(instance_type: str, region: str) -> list[dict[str, str]]:
    return _match(instanceType=instance_type, regionCode=region, operatingSystem="Linux", tenancy="Shared",
                  preInstalledSw="NA", capacitystatus="Used", operation="RunInstances")


SAGEMAKER_HYPERPOD_COMPONENT = "Cluster"
"""**Unconfirmed**: the AmazonSageMaker Price List's ``component`` value for HyperPod cluster instances. A wrong value
matches no product: the plan and the table then keep the table's figure (nothing is guessed from another product)."""


def sagemaker_filters(ml_type: str, region: str) -> list[dict[str, str]]:
    """A SageMaker HyperPod instance (``ml.`` type), by :data:`SAGEMAKER_HYPERPOD_COMPONENT` (unconfirmed)."""
    return _match(regionCode=region, instanceName=ml_type, component=SAGEMAKER_HYPERPOD_COMPONENT)


def ebs_filters(volume_type: str, region: str) -> list[dict[str, str]]:
    """An EBS volume type's storage (``volumeApiName``, billed in ``GB-Mo``)."""
    return _match(regionCode=region, productFamily="Storage", volumeApiName=volume_type)


def fsx_filters(deployment_type: str, throughput_per_tib: int | None, region: str) -> list[dict[str, str]] | None:
    """Filters for the storage price of an FSx for Lustre file system; None where fmcluster knows none."""
    if deployment_type != "PERSISTENT_2" or throughput_per_tib is None:
        return None
    return _match(regionCode=region, fileSystemType="Lustre", storageType="SSD", deploymentOption="Persistent",
                  throughputCapacity=str(throughput_per_tib))


def on_demand_price(client: Any, service: str, filters: list[dict[str, str]], unit: str, today: date) -> Price | None:
    """The one on-demand USD price per ``unit`` of the products matching ``filters``; None when none matches."""
    found: dict[float, Price] = {}
    token = None
    while True:
        args: dict[str, Any] = {"ServiceCode": service, "Filters": filters, "FormatVersion": "aws_v1", "MaxResults": 100}
        if token:
            args["NextToken"] = token
        try:
            page = client.get_products(**args)
        except ClientError as exc:
            if is_account_problem(exc):
                raise  # credentials, permissions, throttling: the session's translation words it
            raise PriceError(f"cannot read the AWS Price List ({service}): {exc}") from None
        for item in page.get("PriceList", []):
            for price in _on_demand(json.loads(item) if isinstance(item, str) else item, unit, today):
                found.setdefault(price.usd, price)
        token = page.get("NextToken")
        if not token:
            break
    if len(found) > 1:
        what = ", ".join(f"{p.usd:g} USD ({p.sku})" for p in found.values())
        raise PriceError(f"the Price List has {len(found)} different {service} prices for {_describe(filters)}: "
                         f"{what}; not choosing one")
    return next(iter(found.values()), None)


def _on_demand(product: dict[str, Any], unit: str, today: date) -> Iterable[Price]:
    sku = product.get("product", {}).get("sku", "")
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            usd = float(dimension.get("pricePerUnit", {}).get("USD", "0") or 0)
            if dimension.get("unit") == unit and usd > 0:
                yield Price(usd, unit, dimension.get("description", ""), sku, today.isoformat())


def _describe(filters: list[dict[str, str]]) -> str:
    return ", ".join(f"{f['Field']}={f['Value']}" for f in filters)


class PriceCache:
    """Prices read before, by service and filters, each with the day it was read (JSON under :func:`cache_dir`)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or cache_dir() / "prices.json"
        try:
            self.entries: dict[str, dict[str, Any]] = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.entries = {}

    @staticmethod
    def key(service: str, filters: list[dict[str, str]]) -> str:
        return f"{service}|{_describe(sorted(filters, key=lambda f: f['Field']))}"

    def get(self, key: str, today: date) -> Price | None:
        entry = self.entries.get(key)
        if not entry:
            return None
        try:
            price = Price(**entry)
            age = (today - date.fromisoformat(price.fetched)).days
        except (TypeError, ValueError):
            return None
        return price if 0 <= age <= MAX_AGE_DAYS else None

    def put(self, key: str, price: Price) -> None:
        self.entries[key] = asdict(price)

    def save(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self.entries, indent=1, sort_keys=True), encoding="utf-8")
        except OSError:
            pass  # a cache we cannot write costs a lookup next time, nothing more


@dataclass(frozen=True)
class Quote:
    """What the Price List says for one project's instance types and file system, in one Region."""

    region: str
    instances: dict[str, Price | None]
    fsx: Price | None
    fsx_note: str | None
    """Why there is no FSx price, when there is none."""
    cache: Path
    hours_per_month: int = HOURS_PER_MONTH
    fsx_tier: int | None = None
    """The file system's MB/s per TiB that :attr:`fsx` is the price of."""
    sagemaker: dict[str, Price | None] = field(default_factory=dict)
    """SageMaker HyperPod prices by ``ml.`` type (HyperPod projects)."""


def quote(region: str, instance_types: Iterable[str], fsx: tuple[str, int | None] | None, *, client: Any = None,
          session: AwsSession | None = None, cache: PriceCache | None = None, today: date | None = None,
          ml_types: Iterable[str] = ()) -> Quote:
    """On-demand prices for ``instance_types``, SageMaker HyperPod's for ``ml_types`` and the storage of ``fsx``
    (deployment type, MB/s per TiB).

    The Price List client (``client``, else one of ``session``) is made only when a price is not cached."""
    today = today or date.today()
    cache = cache or PriceCache()
    client_: list[Any] = [client]

    def lookup(service: str, filters: list[dict[str, str]], unit: str) -> Price | None:
        key = PriceCache.key(service, filters)
        cached = cache.get(key, today)
        if cached is not None:
            return cached
        if client_[0] is None:
            if session is None:
                raise PriceError("no cached price and no AWS session to read one")
            client_[0] = make_client(session)
        price = on_demand_price(client_[0], service, filters, unit, today)
        if price is not None:
            cache.put(key, price)
        return price

    try:
        instances = {t: lookup("AmazonEC2", ec2_filters(t, region), "Hrs") for t in sorted(set(instance_types))}
        sagemaker = {t: lookup("AmazonSageMaker", sagemaker_filters(t, region), "Hrs") for t in sorted(set(ml_types))}
        fsx_price, note = None, None
        if fsx is not None:
            filters = fsx_filters(fsx[0], fsx[1], region)
            if filters is None:
                note = f"no Price List filters known for {fsx[0]} here"
            else:
                fsx_price = lookup("AmazonFSx", filters, "GB-Mo")
                note = None if fsx_price else f"the Price List has no {fsx[0]} price at {fsx[1]} MB/s per TiB in {region}"
    finally:
        cache.save()
    return Quote(region, instances, fsx_price, note, cache.path, fsx_tier=None if fsx is None else fsx[1],
                 sagemaker=sagemaker)
