"""The alerts firing in a project's Amazon Managed Service for Prometheus workspace: its alert manager's HTTP API,
``GET /workspaces/{workspaceId}/alertmanager/api/v2/alerts`` (AMP user guide, "ListAlertManagerAlerts",
docs.aws.amazon.com/prometheus/latest/userguide/AMP-APIReference-ListAlertManagerAlerts.html), signed with SigV4 for
the service ``aps`` and allowed by the IAM action ``aps:ListAlertManagerAlerts`` (AMP user guide, "Understanding IAM
permissions needed for working with alert manager"). It is not an operation of botocore's ``amp`` model, so the
request is made here with botocore's own signer (``SigV4Auth``) and HTTP session, bounded and retried as the
session's clients are, and its refusals become the ``ClientError`` a client would raise, which the session words.

The host is the workspace's: ``aps-workspaces.<region>.<suffix>`` (a workspace's ``PrometheusEndpoint``, the remote
write URL's host), found from the ``amp`` client's endpoint (``aps.<region>.<suffix>``) so that an endpoint the
user set (``AWS_ENDPOINT_URL``, ``AWS_ENDPOINT_URL_AMP``) is the one asked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from random import random
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)
from botocore.exceptions import ConnectTimeoutError as BotoConnectTimeout
from botocore.httpsession import URLLib3Session
from botocore.utils import get_environ_proxies

from fmcluster.aws.session import ATTEMPTS, CONNECT_TIMEOUT_S, READ_TIMEOUT_S, THROTTLED, is_account_problem

SERVICE = "aps"
"""The SigV4 signing name of Amazon Managed Service for Prometheus (botocore ``amp`` model, ``signingName``)."""
OPERATION = "ListAlertManagerAlerts"
ACTION = f"{SERVICE}:{OPERATION}"
PATH = "/workspaces/{workspace}/alertmanager/api/v2/alerts"
CONTROL_HOST = "aps."
DATA_HOST = "aps-workspaces."
RETRIED_STATUS = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Alert:
    name: str
    severity: str | None
    summary: str | None
    since: str | None
    labels: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "severity": self.severity, "summary": self.summary, "since": self.since,
                "labels": dict(self.labels)}


@dataclass(frozen=True)
class AlertsStatus:
    workspace_id: str
    firing: list[Alert] = field(default_factory=list)
    """Active alerts: neither silenced nor inhibited (``status.state`` ``active``)."""
    silenced: int = 0
    problem: str | None = None
    """Why the alerts could not be read (the workspace is gone), in one line; None when they were."""

    def as_dict(self) -> dict[str, Any]:
        return {"workspace_id": self.workspace_id, "firing": [a.as_dict() for a in self.firing],
                "silenced": self.silenced, "problem": self.problem}


AlertsReader = Callable[[str], AlertsStatus]
"""A workspace ID -> its alerts."""


def workspace_endpoint(amp_endpoint: str) -> str:
    """The workspaces' data-plane base URL from the ``amp`` client's endpoint: ``https://aps.us-east-1.amazonaws.com``
    -> ``https://aps-workspaces.us-east-1.amazonaws.com``; an endpoint the user set is kept as it is."""
    parts = urlsplit(amp_endpoint)
    host = parts.netloc
    if host.startswith(CONTROL_HOST):
        host = DATA_HOST + host[len(CONTROL_HOST):]
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def parse(workspace_id: str, body: Any) -> AlertsStatus:
    """The alert manager's answer (a JSON array of alerts, Prometheus Alertmanager API v2 ``gettableAlerts``)."""
    firing: list[Alert] = []
    silenced = 0
    for alert in body if isinstance(body, list) else []:
        state = (alert.get("status") or {}).get("state", "active")
        if state != "active":
            silenced += 1
            continue
        labels = {str(k): str(v) for k, v in (alert.get("labels") or {}).items()}
        notes = alert.get("annotations") or {}
        firing.append(Alert(name=labels.get("alertname", "?"), severity=labels.get("severity"),
                            summary=notes.get("summary") or notes.get("description"), since=alert.get("startsAt"),
                            labels=labels))
    firing.sort(key=lambda a: (a.severity != "critical", a.name, sorted(a.labels.items())))
    return AlertsStatus(workspace_id, firing, silenced)


def _error(status: int, headers: Any, text: str) -> ClientError:
    """A refusal as botocore's REST-JSON parser would raise it: the code from ``x-amzn-ErrorType`` or ``__type``."""
    try:
        body = json.loads(text) if text else {}
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    code = (headers.get("x-amzn-ErrorType") or str(body.get("__type") or body.get("code") or "")).split(":")[0]
    code = code.rsplit("#", 1)[-1] or {403: "AccessDeniedException", 404: "ResourceNotFoundException",
                                       429: "ThrottlingException"}.get(status, f"HTTP{status}")
    message = body.get("message") or body.get("Message") or text[:200]
    return ClientError({"Error": {"Code": code, "Message": message},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, OPERATION)


def fetch(url: str, region: str, credentials: Any, http: Any = None, sleep: Callable[[float], None] = time.sleep,
          ) -> Any:
    """GET ``url`` signed for ``aps`` in ``region``; the JSON answer. Tries :data:`ATTEMPTS` times on a connection
    failure, throttling or a server error, as botocore's standard mode does; raises what a client would raise."""
    http = http or URLLib3Session(proxies=get_environ_proxies(url), timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S))
    for attempt in range(ATTEMPTS):
        request = AWSRequest(method="GET", url=url, headers={"Accept": "application/json"})
        SigV4Auth(credentials, SERVICE, region).add_auth(request)
        last = attempt + 1 == ATTEMPTS
        try:
            response = http.send(request.prepare())
        except (EndpointConnectionError, BotoConnectTimeout, ReadTimeoutError, ConnectionClosedError):
            if last:
                raise
        else:
            text = response.content.decode("utf-8", "replace")
            if response.status_code < 300:
                try:
                    return json.loads(text) if text else []
                except ValueError:  # not the alert manager (an endpoint override pointing elsewhere)
                    raise _error(response.status_code, {"x-amzn-ErrorType": "NotAlertManagerJson"},
                                 f"the answer from {url} is not JSON") from None
            error = _error(response.status_code, response.headers, text)
            code = error.response["Error"]["Code"]
            if last or (response.status_code not in RETRIED_STATUS and code not in THROTTLED):
                raise error
        sleep(random() * 2 ** attempt)  # botocore's standard mode: rand(0, 1) * 2 ** attempt
    raise AssertionError("unreachable")  # pragma: no cover


def reader(session: Any) -> AlertsReader:
    """Reads a workspace's alerts with ``session``'s credentials, Region and endpoint (an
    :class:`fmcluster.aws.session.AwsSession`); its translation words the failures as the action's."""
    def read(workspace_id: str) -> AlertsStatus:
        base = workspace_endpoint(session.client("amp").meta.endpoint_url)
        url = base + PATH.format(workspace=workspace_id)
        session.actions[OPERATION] = session.last = (ACTION, session.region)
        credentials = session.boto.get_credentials()
        if credentials is None:
            raise NoCredentialsError()  # the session words it
        try:
            body = fetch(url, session.region, credentials.get_frozen_credentials())
        except ClientError as exc:
            if is_account_problem(exc):
                raise
            error = exc.response["Error"]
            return AlertsStatus(workspace_id, problem=f"cannot read the alerts of workspace {workspace_id}: "
                                f"{error.get('Code')}: {error.get('Message')}")
        return parse(workspace_id, body)
    return read
