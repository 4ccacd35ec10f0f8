"""Pushing dashboards: boto3 Grafana calls under botocore's Stubber, HTTP against a local stub server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import boto3
import pytest
from botocore.stub import ANY, Stubber
from support.loopback import serve_in_thread
from typer.testing import CliRunner

from fmcluster.aws import grafana
from fmcluster.aws.session import AwsSession
from fmcluster.cli import dashboards as cli
from fmcluster.generate import dashboards

WORKSPACE = "g-abc1234567"
TOKEN_KEY = "glsa_secret_token_value"


@dataclass
class Recorded:
    method: str
    path: str
    authorization: str | None
    body: dict | None


@dataclass
class StubGrafana:
    """A Grafana HTTP API stand-in on 127.0.0.1 that records every request."""

    requests: list[Recorded] = field(default_factory=list)
    folders: set[str] = field(default_factory=set)
    datasources: dict[str, dict] = field(default_factory=dict)
    fail_dashboards_with: int | None = None
    port: int = 0

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture
def stub_grafana(monkeypatch: pytest.MonkeyPatch) -> Iterator[StubGrafana]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    state = StubGrafana()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def _reply(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _record(self) -> Recorded:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            rec = Recorded(self.command, self.path, self.headers.get("Authorization"), body)
            state.requests.append(rec)
            return rec

        def do_GET(self) -> None:  # noqa: N802 - http.server API
            rec = self._record()
            if rec.path.startswith("/api/folders/"):
                uid = rec.path.rsplit("/", 1)[1]
                if uid in state.folders:
                    self._reply(200, {"uid": uid, "title": "x"})
                else:
                    self._reply(404, {"message": "folder not found"})
            elif rec.path.startswith("/api/datasources/uid/"):
                uid = rec.path.rsplit("/", 1)[1]
                if uid in state.datasources:
                    self._reply(200, {"id": 1, **state.datasources[uid]})
                else:
                    self._reply(404, {"message": "Data source not found"})
            else:
                self._reply(404, {"message": "not found"})

        def do_POST(self) -> None:  # noqa: N802 - http.server API
            rec = self._record()
            if rec.path == "/api/folders":
                state.folders.add(rec.body["uid"])
                self._reply(200, {"uid": rec.body["uid"], "title": rec.body["title"]})
            elif rec.path == "/api/datasources":
                if rec.body["uid"] in state.datasources:  # Grafana refuses a second one with the same UID
                    self._reply(409, {"message": "data source with the same uid already exists"})
                else:
                    state.datasources[rec.body["uid"]] = rec.body
                    self._reply(200, {"id": 1, "message": "Datasource added", "name": rec.body["name"]})
            elif rec.path == "/api/dashboards/db":
                if state.fail_dashboards_with:
                    self._reply(state.fail_dashboards_with, {"message": "nope"})
                else:
                    uid = rec.body["dashboard"]["uid"]
                    self._reply(200, {"status": "success", "uid": uid, "version": 1})
            else:
                self._reply(404, {"message": "not found"})

        def do_PUT(self) -> None:  # noqa: N802 - http.server API
            rec = self._record()
            uid = rec.path.rsplit("/", 1)[1]
            if rec.path.startswith("/api/datasources/uid/") and uid in state.datasources:
                state.datasources[uid] = rec.body
                self._reply(200, {"id": 1, "message": "Datasource updated", "name": rec.body["name"]})
            else:
                self._reply(404, {"message": "Data source not found"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = serve_in_thread(server)
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _client_and_stubber() -> tuple[object, Stubber]:
    client = boto3.client("grafana", region_name="us-east-1")
    return client, Stubber(client)


def _workspace(stubber: Stubber, endpoint: str) -> None:
    stubber.add_response(
        "describe_workspace",
        {"workspace": {"id": WORKSPACE, "endpoint": endpoint, "status": "ACTIVE", "authentication": {"providers": ["AWS_SSO"]},
                       "created": "2026-01-01T00:00:00Z", "modified": "2026-01-01T00:00:00Z", "dataSources": ["PROMETHEUS"],
                       "grafanaVersion": "10.4"}},
        {"workspaceId": WORKSPACE},
    )


def _token_calls(stubber: Stubber, account_id: str = "7") -> None:
    stubber.add_response(
        "create_workspace_service_account_token",
        {"serviceAccountToken": {"id": "tok-1", "name": "fmcluster-push", "key": TOKEN_KEY},
         "serviceAccountId": account_id, "workspaceId": WORKSPACE},
        {"workspaceId": WORKSPACE, "serviceAccountId": account_id, "name": ANY, "secondsToLive": 600},
    )


def _delete_token(stubber: Stubber, account_id: str = "7") -> None:
    stubber.add_response(
        "delete_workspace_service_account_token",
        {"tokenId": "tok-1", "serviceAccountId": account_id, "workspaceId": WORKSPACE},
        {"workspaceId": WORKSPACE, "serviceAccountId": account_id, "tokenId": "tok-1"},
    )


def test_push_creates_folder_uploads_every_dashboard_and_deletes_the_token(stub_grafana: StubGrafana) -> None:
    client, stubber = _client_and_stubber()
    _workspace(stubber, stub_grafana.endpoint)
    stubber.add_response(
        "create_workspace_service_account",
        {"id": "7", "name": "fmcluster", "grafanaRole": "ADMIN", "workspaceId": WORKSPACE},
        {"workspaceId": WORKSPACE, "name": "fmcluster", "grafanaRole": "ADMIN"},
    )
    _token_calls(stubber)
    _delete_token(stubber)
    models = dashboards.build_dashboards("llama")
    with stubber:
        result = grafana.push_dashboards(client, WORKSPACE, "llama", models, scheme="http")
        stubber.assert_no_pending_responses()

    assert result.dashboards == list(models)
    assert result.folder_uid == "fmc-llama"
    calls = [(r.method, r.path) for r in stub_grafana.requests]
    assert calls[:2] == [("GET", "/api/folders/fmc-llama"), ("POST", "/api/folders")]
    uploads = [r for r in stub_grafana.requests if r.path == "/api/dashboards/db"]
    assert [r.body["dashboard"]["uid"] for r in uploads] == list(models)
    assert all(r.body["overwrite"] is True and r.body["folderUid"] == "fmc-llama" for r in uploads)
    assert all(r.authorization == f"Bearer {TOKEN_KEY}" for r in stub_grafana.requests)


AMP_WORKSPACE = "ws-0123abcd-4567-89ef-0123-456789abcdef"


def _admin_account(stubber: Stubber) -> None:
    stubber.add_response(
        "create_workspace_service_account",
        {"id": "7", "name": "fmcluster", "grafanaRole": "ADMIN", "workspaceId": WORKSPACE},
        {"workspaceId": WORKSPACE, "name": "fmcluster", "grafanaRole": "ADMIN"},
    )


def test_push_creates_the_prometheus_data_source_before_the_dashboards(stub_grafana: StubGrafana) -> None:
    client, stubber = _client_and_stubber()
    _workspace(stubber, stub_grafana.endpoint)
    _admin_account(stubber)
    _token_calls(stubber)
    _delete_token(stubber)
    source = dashboards.prometheus_datasource("llama", "eu-west-1", AMP_WORKSPACE)
    models = dashboards.build_dashboards("llama")
    with stubber:
        result = grafana.push_dashboards(client, WORKSPACE, "llama", models, datasources=[source], scheme="http")

    calls = [(r.method, r.path) for r in stub_grafana.requests]
    created = calls.index(("POST", "/api/datasources"))
    first_dashboard = calls.index(("POST", "/api/dashboards/db"))
    assert calls[created - 1] == ("GET", "/api/datasources/uid/fmc-llama-amp") and created < first_dashboard
    assert result.datasources == [("fmc-llama-amp", "created")]
    body = stub_grafana.datasources["fmc-llama-amp"]
    assert body["type"] == "prometheus" and body["access"] == "proxy"
    assert body["url"] == f"https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/{AMP_WORKSPACE}/"
    assert body["jsonData"] == {"httpMethod": "POST", "sigV4Auth": True, "sigV4AuthType": "ec2_iam_role",
                                "sigV4Region": "eu-west-1"}
    # every dashboard's ${datasource} variable defaults to that data source
    for upload in (r for r in stub_grafana.requests if r.path == "/api/dashboards/db"):
        variable = next(v for v in upload.body["dashboard"]["templating"]["list"] if v["name"] == "datasource")
        assert variable["query"] == "prometheus" and variable["current"]["value"] == "fmc-llama-amp"
        assert variable["current"]["text"] == body["name"]


def test_a_second_push_updates_the_data_source_in_place(stub_grafana: StubGrafana) -> None:
    stub_grafana.datasources["fmc-llama-amp"] = {"uid": "fmc-llama-amp", "name": "old", "url": "https://old/"}
    client, stubber = _client_and_stubber()
    _workspace(stubber, stub_grafana.endpoint)
    _admin_account(stubber)
    _token_calls(stubber)
    _delete_token(stubber)
    source = dashboards.prometheus_datasource("llama", "us-east-1", AMP_WORKSPACE)
    with stubber:
        result = grafana.push_dashboards(client, WORKSPACE, "llama", {}, datasources=[source], scheme="http")
    assert result.datasources == [("fmc-llama-amp", "updated")]
    assert ("PUT", "/api/datasources/uid/fmc-llama-amp") in [(r.method, r.path) for r in stub_grafana.requests]
    assert ("POST", "/api/datasources") not in [(r.method, r.path) for r in stub_grafana.requests]
    assert stub_grafana.datasources["fmc-llama-amp"]["url"] == source["url"]


def test_an_editor_service_account_from_an_older_push_is_replaced_by_an_admin(stub_grafana: StubGrafana) -> None:
    """Grafana's Editor role cannot add data sources; the AMG API cannot change an account's role."""
    client, stubber = _client_and_stubber()
    _workspace(stubber, stub_grafana.endpoint)
    stubber.add_client_error("create_workspace_service_account", service_error_code="ConflictException",
                             http_status_code=409)
    stubber.add_response(
        "list_workspace_service_accounts",
        {"serviceAccounts": [{"id": "4", "name": "fmcluster", "grafanaRole": "EDITOR", "isDisabled": "false"}],
         "workspaceId": WORKSPACE},
        {"workspaceId": WORKSPACE},
    )
    stubber.add_response("delete_workspace_service_account", {"serviceAccountId": "4", "workspaceId": WORKSPACE},
                         {"workspaceId": WORKSPACE, "serviceAccountId": "4"})
    _admin_account(stubber)
    _token_calls(stubber)
    _delete_token(stubber)
    with stubber:
        grafana.push_dashboards(client, WORKSPACE, "llama", {}, scheme="http")
        stubber.assert_no_pending_responses()


def test_push_reuses_the_service_account_and_an_existing_folder(stub_grafana: StubGrafana) -> None:
    stub_grafana.folders.add("fmc-llama")
    client, stubber = _client_and_stubber()
    _workspace(stubber, stub_grafana.endpoint)
    stubber.add_client_error("create_workspace_service_account", service_error_code="ConflictException",
                             http_status_code=409)
    stubber.add_response(
        "list_workspace_service_accounts",
        {"serviceAccounts": [{"id": "3", "name": "someone", "grafanaRole": "ADMIN", "isDisabled": "false"}],
         "workspaceId": WORKSPACE, "nextToken": "p2"},
        {"workspaceId": WORKSPACE},
    )
    stubber.add_response(
        "list_workspace_service_accounts",
        {"serviceAccounts": [{"id": "9", "name": "fmcluster", "grafanaRole": "ADMIN", "isDisabled": "false"}],
         "workspaceId": WORKSPACE},
        {"workspaceId": WORKSPACE, "nextToken": "p2"},
    )
    _token_calls(stubber, "9")
    _delete_token(stubber, "9")
    models = dashboards.build_dashboards("llama")
    with stubber:
        grafana.push_dashboards(client, WORKSPACE, "llama", models, scheme="http")
        stubber.assert_no_pending_responses()
    assert ("POST", "/api/folders") not in [(r.method, r.path) for r in stub_grafana.requests]


@pytest.mark.parametrize("status", [403, 500])
def test_a_refused_upload_still_deletes_the_token(stub_grafana: StubGrafana, status: int) -> None:
    stub_grafana.fail_dashboards_with = status
    client, stubber = _client_and_stubber()
    _workspace(stubber, stub_grafana.endpoint)
    stubber.add_response(
        "create_workspace_service_account",
        {"id": "7", "name": "fmcluster", "grafanaRole": "ADMIN", "workspaceId": WORKSPACE},
        {"workspaceId": WORKSPACE, "name": "fmcluster", "grafanaRole": "ADMIN"},
    )
    _token_calls(stubber)
    _delete_token(stubber)
    with stubber, pytest.raises(grafana.PushError, match=f"{status}") as info:
        grafana.push_dashboards(client, WORKSPACE, "llama", dashboards.build_dashboards("llama"), scheme="http")
    stubber.assert_no_pending_responses()
    assert TOKEN_KEY not in str(info.value)


def test_token_ttl_is_bounded() -> None:
    client, _ = _client_and_stubber()
    with pytest.raises(ValueError, match="token_ttl"):
        grafana.push_dashboards(client, WORKSPACE, "llama", {}, token_ttl_seconds=5)


PROJECT_YAML = """\
name: llama
region: us-east-1
availability_zone_id: use1-az6
compute_groups:
  - {name: big, instance_type: p5.48xlarge, count: 2}
"""


@pytest.mark.parametrize("orchestrator, slurm", [("", False), ("orchestrator: {type: parallelcluster}\n", True)])
def test_cli_export_writes_json(orchestrator: str, slurm: bool, tmp_path: Path) -> None:
    """Every dashboard, the Slurm one only where a node of ours runs slurmctld (not without a scheduler)."""
    project = tmp_path / "llama.yaml"
    project.write_text(PROJECT_YAML + orchestrator)
    result = CliRunner().invoke(cli.app, ["dashboards", "export", str(project), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in (tmp_path / "out").glob("*.json"))
    assert names == sorted(f"{uid}.json" for uid in dashboards.build_dashboards("llama", slurm=slurm))
    assert ("fmc-llama-slurm.json" in names) is slurm


def test_cli_reports_a_bad_project_with_exit_2(tmp_path: Path) -> None:
    project = tmp_path / "bad.yaml"
    project.write_text("name: Bad Name\n")
    result = CliRunner().invoke(cli.app, ["dashboards", "export", str(project), "--out", str(tmp_path)])
    assert result.exit_code == 2


def test_cli_push_reads_the_workspace_from_the_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "llama.yaml"
    project.write_text(PROJECT_YAML)
    cfn = boto3.client("cloudformation", region_name="us-east-1")
    cfn_stub = Stubber(cfn)
    cfn_stub.add_response(
        "describe_stacks",
        {"Stacks": [{"StackName": "llama-observability", "CreationTime": "2026-01-01T00:00:00Z",
                     "StackStatus": "CREATE_COMPLETE",
                     "Outputs": [{"OutputKey": cli.WORKSPACE_OUTPUT, "OutputValue": WORKSPACE},
                                 {"OutputKey": cli.PROMETHEUS_OUTPUT, "OutputValue": AMP_WORKSPACE}]}]},
        {"StackName": "llama-observability"},
    )
    graf = boto3.client("grafana", region_name="us-east-1")
    seen: dict[str, object] = {}

    def client(self: AwsSession, name: str, region: str | None = None) -> object:
        seen["region"] = self.region
        return {"cloudformation": cfn, "grafana": graf}[name]

    def fake_push(client: object, workspace_id: str, project_name: str, models: dict, **kwargs: object):
        seen.update(workspace=workspace_id, project=project_name, uids=list(models), client=client,
                    datasources=kwargs["datasources"])
        return grafana.PushResult(url="https://g.example", folder_uid="fmc-llama", dashboards=list(models),
                                  datasources=[("fmc-llama-amp", "created")])

    monkeypatch.setattr(AwsSession, "client", client)
    monkeypatch.setattr(grafana, "push_dashboards", fake_push)
    with cfn_stub:
        result = CliRunner().invoke(cli.app, ["dashboards", "push", str(project)])
    assert result.exit_code == 0, result.output
    assert seen["workspace"] == WORKSPACE and seen["project"] == "llama" and seen["region"] == "us-east-1"
    assert seen["client"] is graf
    assert seen["datasources"] == [dashboards.prometheus_datasource("llama", "us-east-1", AMP_WORKSPACE)]
    assert "data source fmc-llama-amp" in result.output and "pushed" in result.output
    assert f"aws grafana update-permissions --workspace-id {WORKSPACE}" in result.output


def test_the_access_command_is_valid_for_the_grafana_api() -> None:
    """The printed --update-instruction-batch, with a real-looking user ID, passes botocore's own validation."""
    batch = json.loads(cli.ACCESS_BATCH.replace("USER_ID", "906754ba5e-1234abcd-12ab-34cd-56ef-1234567890ab"))
    client, stubber = _client_and_stubber()
    stubber.add_response("update_permissions", {"errors": []},
                         {"workspaceId": WORKSPACE, "updateInstructionBatch": batch})
    with stubber:
        client.update_permissions(workspaceId=WORKSPACE, updateInstructionBatch=batch)
    assert "update-workspace-authentication" in cli.access_text(WORKSPACE, "SAML")
