"""The alerts firing in a project's Prometheus workspace (``fmcluster/aws/alerts.py``): a SigV4-signed GET of the
alert manager API, against a loopback stand-in that refuses an unsigned or wrongly scoped request, with the
session's endpoint, retries and one-line failures."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from support import BASE
from support.alertmanager import AlertManager, alert
from support.loopback import serve_in_thread

from fmcluster import config
from fmcluster.aws import alerts
from fmcluster.aws.session import AwsError, aws_session

WORKSPACE = "ws-0123abcd-4567-89ef-0123-456789abcdef"
CREDENTIALS = Credentials("AKIDEXAMPLE", "secret", "token")


@pytest.fixture
def manager(request: pytest.FixtureRequest):
    server = AlertManager(WORKSPACE, request.param)
    yield server
    server.close()


def test_the_workspace_endpoint_is_the_data_planes() -> None:
    assert alerts.workspace_endpoint("https://aps.us-east-1.amazonaws.com") == \
        "https://aps-workspaces.us-east-1.amazonaws.com"
    assert alerts.workspace_endpoint("https://aps.cn-north-1.amazonaws.com.cn/") == \
        "https://aps-workspaces.cn-north-1.amazonaws.com.cn"
    assert alerts.workspace_endpoint("http://127.0.0.1:4566") == "http://127.0.0.1:4566"  # set by the user: kept


@pytest.mark.parametrize("manager", [[[alert("GpuXidCritical", instance="i-1"), alert("SlurmNodesDown", "warning"),
                                       alert("FsxMountMissing", state="suppressed")]]], indirect=True)
def test_a_signed_get_reads_the_active_alerts(manager: AlertManager) -> None:
    url = manager.url + alerts.PATH.format(workspace=WORKSPACE)
    body = alerts.fetch(url, "us-east-1", CREDENTIALS)
    [request] = manager.requests
    assert request["auth"]["service"] == "aps" and request["auth"]["region"] == "us-east-1"
    assert request["auth"]["key"] == "AKIDEXAMPLE" and request["headers"]["X-Amz-Security-Token"] == "token"
    status = alerts.parse(WORKSPACE, body)
    assert [a.name for a in status.firing] == ["GpuXidCritical", "SlurmNodesDown"]  # critical first
    assert status.firing[0].summary == "GpuXidCritical summary" and status.firing[0].labels["instance"] == "i-1"
    assert status.silenced == 1


@pytest.mark.parametrize("manager", [[[]]], indirect=True)
def test_a_request_signed_for_another_region_is_refused(manager: AlertManager) -> None:
    """The stand-in checks the scope: a signature for us-west-2 (or another service) is not what AMP takes."""
    with pytest.raises(ClientError, match="InvalidSignatureException"):
        alerts.fetch(manager.url + alerts.PATH.format(workspace=WORKSPACE), "us-west-2", CREDENTIALS,
                     sleep=lambda s: None)


@pytest.mark.parametrize("manager", [[(503, "ServiceUnavailableException"), (429, "ThrottlingException"), []]],
                         indirect=True)
def test_throttling_and_server_errors_are_retried(manager: AlertManager) -> None:
    waits: list[float] = []
    body = alerts.fetch(manager.url + alerts.PATH.format(workspace=WORKSPACE), "us-east-1", CREDENTIALS,
                        sleep=waits.append)
    assert body == [] and len(manager.requests) == 3 and len(waits) == 2


@pytest.mark.parametrize("manager", [[(404, "ResourceNotFoundException")]], indirect=True)
def test_a_missing_workspace_is_a_problem_in_the_section(manager: AlertManager,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_AMP", manager.url)
    session = aws_session(config.parse(BASE).project, command="status")
    status = alerts.reader(session)(WORKSPACE)
    assert status.problem == (f"cannot read the alerts of workspace {WORKSPACE}: ResourceNotFoundException: "
                              "fake ResourceNotFoundException") and status.firing == []


@pytest.mark.parametrize("manager", [[(403, "AccessDeniedException")]], indirect=True)
def test_access_denied_is_the_sessions_one_line_naming_the_action(manager: AlertManager,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_AMP", manager.url)
    session = aws_session(config.parse(BASE).project, command="status")
    with pytest.raises(AwsError) as caught, session.errors():
        alerts.reader(session)(WORKSPACE)
    assert str(caught.value).startswith("access denied to aps:ListAlertManagerAlerts in us-east-1")
    assert "`fmcluster status` needs cloudformation:DescribeStacks" in str(caught.value)


def test_an_answer_that_is_not_json_is_a_problem_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """An endpoint override that points at something else (a local stand-in of other services) answers 200 with
    HTML: the section says so."""
    class Html(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = b"<html>not here</html>"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Html)
    serve_in_thread(server)
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL_AMP", f"http://127.0.0.1:{server.server_address[1]}")
        status = alerts.reader(aws_session(config.parse(BASE).project, command="status"))(WORKSPACE)
    finally:
        server.shutdown()
        server.server_close()
    assert status.problem.startswith(f"cannot read the alerts of workspace {WORKSPACE}: NotAlertManagerJson: ")
