"""Observability: alert rules, the collector config, dashboards and pushing them to Grafana.

No CDK here. The observability stack reads :func:`fmcluster.observability.rules.rules_yaml` and
:func:`fmcluster.observability.rules.alertmanager_definition`; the bootstrap renders
:func:`fmcluster.observability.collector.render_collector_config` for the head node.
"""

WORKSPACE_OUTPUT = "GrafanaWorkspaceId"
"""The output of the ``NAME-observability`` stack that holds the Grafana workspace ID."""
