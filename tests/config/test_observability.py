"""The ``observability:`` config section."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fmcluster.config.observability import ObservabilityConfig


def test_defaults() -> None:
    cfg = ObservabilityConfig()
    assert cfg.prometheus and cfg.grafana.enabled and cfg.grafana.authentication == "AWS_SSO"
    assert cfg.scrape_interval == "30s" and cfg.alerts.sns_topic_arn is None and cfg.alerts.emails == []


def test_every_field_has_a_description() -> None:
    from fmcluster.config.observability import Alerts, Grafana

    for model in (ObservabilityConfig, Grafana, Alerts):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name}"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"scrape_interval": "soon"}, "duration"),
        ({"scrape_interval": "1s"}, "outside"),
        ({"grafana": {"authentication": "LDAP"}}, "AWS_SSO"),
        ({"alerts": {"emails": ["not-an-address"]}}, "e-mail"),
        ({"alerts": {"sns_topic_arn": "arn:aws:sns:us-east-1:123456789012:t", "emails": ["a@b.co"]}}, "emails"),
        ({"prometheus": False}, "grafana needs prometheus"),
        ({"scrape_intervall": "30s"}, "Extra inputs"),
    ],
)
def test_bad_values_are_refused(data: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ObservabilityConfig.model_validate(data)


def test_prometheus_off_with_grafana_off_is_fine() -> None:
    cfg = ObservabilityConfig.model_validate({"prometheus": False, "grafana": {"enabled": False}})
    assert not cfg.prometheus
