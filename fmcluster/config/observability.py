"""The ``observability:`` section of a project file (plugged into ``Project`` as ``observability``)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from fmcluster.config.base import Model
from fmcluster.facts import KMS_KEY_ARN, LogRetentionDays

SNS_TOPIC_ARN = r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DURATION = re.compile(r"^[0-9]+[smh]$")



class Grafana(Model):
    """The Amazon Managed Grafana workspace."""

    enabled: bool = Field(default=True, description="Create an Amazon Managed Grafana workspace for the project.")
    authentication: Literal["AWS_SSO", "SAML"] = Field(
        default="AWS_SSO",
        description="How users sign in: `AWS_SSO` (needs IAM Identity Center in the account) or `SAML`.",
    )


class Alerts(Model):
    """Where alerts go: one SNS topic, optionally with e-mail subscriptions."""

    sns_topic_arn: str | None = Field(
        default=None,
        pattern=SNS_TOPIC_ARN,
        description="Existing SNS topic to send alerts to. Default: the stack creates an encrypted topic.",
    )
    emails: list[str] = Field(
        default_factory=list,
        description="E-mail addresses to subscribe to the created topic (each must confirm the subscription).",
    )

    @field_validator("emails")
    @classmethod
    def _emails(cls, value: list[str]) -> list[str]:
        bad = [v for v in value if not _EMAIL.match(v)]
        if bad:
            raise ValueError(f"not e-mail addresses: {', '.join(bad)}")
        dupes = sorted({v for v in value if value.count(v) > 1})
        if dupes:
            raise ValueError(f"listed more than once: {', '.join(dupes)}")
        return value

    @model_validator(mode="after")
    def _emails_need_own_topic(self) -> Alerts:
        if self.emails and self.sns_topic_arn:
            raise ValueError("`emails` subscribe to the topic the stack creates; with `sns_topic_arn` subscribe them there")
        return self


class ObservabilityConfig(Model):
    """Metrics (Amazon Managed Prometheus), alerts and dashboards (Amazon Managed Grafana)."""

    prometheus: bool = Field(
        default=True, description="Create an Amazon Managed Prometheus workspace and the collector on the head node."
    )
    grafana: Grafana = Field(default_factory=Grafana, description="The Grafana workspace.")
    alerts: Alerts = Field(default_factory=Alerts, description="Where alerts are sent.")
    scrape_interval: str = Field(
        default="30s", description="How often the collector scrapes each exporter, as a Prometheus duration (`15s`, `1m`)."
    )
    log_retention_days: LogRetentionDays = Field(
        default=90, description="Days to keep the Prometheus workspace's logs in CloudWatch Logs."
    )
    kms_key_arn: str | None = Field(
        default=None, pattern=KMS_KEY_ARN, description="Customer managed KMS key for the Prometheus workspace (optional)."
    )
    extra_rule_files: list[str] = Field(
        default_factory=list,
        description="More Prometheus rule files (paths relative to the project file) added to the shipped rules.",
    )

    @field_validator("scrape_interval")
    @classmethod
    def _interval(cls, value: str) -> str:
        if not _DURATION.match(value):
            raise ValueError(f"{value!r} is not a Prometheus duration like 15s, 30s or 1m")
        seconds = int(value[:-1]) * {"s": 1, "m": 60, "h": 3600}[value[-1]]
        if not 5 <= seconds <= 300:
            raise ValueError(f"scrape interval {value} is outside 5s..5m")
        return value

    @model_validator(mode="after")
    def _grafana_needs_prometheus(self) -> ObservabilityConfig:
        if self.grafana.enabled and not self.prometheus:
            raise ValueError("grafana needs prometheus: set `prometheus: true` or `grafana: {enabled: false}`")
        return self
