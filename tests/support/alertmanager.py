"""A loopback stand-in for the Amazon Managed Service for Prometheus alert manager API (``GET /workspaces/{id}/
alertmanager/api/v2/alerts``): it answers only a SigV4-signed GET for the service ``aps`` in the expected Region,
with the alerts given, or with the error given (AMP's REST-JSON error form), and records every request."""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from support.loopback import serve_in_thread

SIGNATURE = re.compile(r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)"
                       r"/(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<headers>[^,]+), "
                       r"Signature=(?P<sig>[0-9a-f]{64})$")


class AlertManager:
    """``answers``: the bodies to send in turn (a list of alerts, or ``(status, code)`` for an error); the last one
    repeats."""

    def __init__(self, workspace: str, answers: list[Any], region: str = "us-east-1") -> None:
        self.workspace, self.answers, self.region = workspace, list(answers), region
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                auth = SIGNATURE.match(self.headers.get("Authorization", ""))
                outer.requests.append({"path": self.path, "auth": auth.groupdict() if auth else None,
                                       "headers": dict(self.headers)})
                expected = f"/workspaces/{outer.workspace}/alertmanager/api/v2/alerts"
                answer = outer.answers.pop(0) if len(outer.answers) > 1 else outer.answers[0]
                if auth is None or auth["service"] != "aps" or auth["region"] != outer.region \
                        or "x-amz-date" not in auth["headers"].split(";") or "host" not in auth["headers"].split(";"):
                    answer = (403, "InvalidSignatureException")
                elif self.path != expected:
                    answer = (404, "ResourceNotFoundException")
                if isinstance(answer, tuple):
                    status, code = answer
                    body = json.dumps({"message": f"fake {code}"}).encode()
                    self.send_response(status)
                    self.send_header("x-amzn-ErrorType", f"{code}:http://internal.amazon.com/coral/")
                else:
                    body = json.dumps(answer).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        serve_in_thread(self.server)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def alert(name: str, severity: str = "critical", state: str = "active", **labels: str) -> dict[str, Any]:
    """One alert as the Alertmanager v2 API returns it (AMP user guide, "ListAlertManagerAlerts", sample response)."""
    return {"annotations": {"summary": f"{name} summary"}, "endsAt": "2026-11-30T12:10:00.000Z",
            "fingerprint": "375eab7b59892505", "receivers": [{"name": "sns-0"}], "startsAt": "2026-11-30T12:00:00.000Z",
            "status": {"inhibitedBy": [], "silencedBy": [] if state == "active" else ["s-1"], "state": state},
            "updatedAt": "2026-11-30T12:00:00.000Z", "labels": {"alertname": name, "severity": severity, **labels}}
