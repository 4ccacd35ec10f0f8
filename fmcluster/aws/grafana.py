"""Push dashboards to an Amazon Managed Grafana workspace with a short-lived service-account token.

The flow: find the workspace's endpoint (``DescribeWorkspace``), make sure the ``fmcluster``
service account exists with the ADMIN role (Grafana's Editor "cannot add, edit, or delete data sources":
Grafana docs, "Organization roles"; an account made by an older fmcluster as EDITOR is replaced), mint a
token that lives ``token_ttl_seconds`` (10 minutes by default), create or update the data sources by their
fixed UIDs (``GET``, then ``POST /api/datasources`` or ``PUT /api/datasources/uid/UID``) before anything
that reads them, create the project's folder if it is missing, upload every dashboard with ``overwrite``,
and delete the token whatever happened. The token is never printed or written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from grafana_client import GrafanaApi
from grafana_client.client import GrafanaClientError

SERVICE_ACCOUNT = "fmcluster"
SERVICE_ACCOUNT_ROLE = "ADMIN"
DEFAULT_TOKEN_TTL_SECONDS = 600


class PushError(RuntimeError):
    """The dashboards could not be pushed; the message says why and what to do."""


@dataclass
class PushResult:
    """What a push did."""

    url: str
    folder_uid: str
    dashboards: list[str] = field(default_factory=list)
    """UIDs uploaded, in order."""
    datasources: list[tuple[str, str]] = field(default_factory=list)
    """``(uid, "created" | "updated")`` per data source, in order."""


def folder_uid(project: str) -> str:
    """The UID of the project's dashboard folder (at most 40 characters)."""
    return f"fmc-{project}"[:40]


def workspace_url(grafana: Any, workspace_id: str, scheme: str = "https") -> str:
    """The workspace's base URL, from ``DescribeWorkspace``."""
    endpoint = grafana.describe_workspace(workspaceId=workspace_id)["workspace"]["endpoint"]
    return f"{scheme}://{endpoint}"


def _service_account_id(grafana: Any, workspace_id: str) -> str:
    try:
        created = grafana.create_workspace_service_account(
            workspaceId=workspace_id, name=SERVICE_ACCOUNT, grafanaRole=SERVICE_ACCOUNT_ROLE
        )
        return str(created["id"])
    except grafana.exceptions.ConflictException:
        pass
    paginator_kwargs: dict[str, Any] = {"workspaceId": workspace_id}
    while True:
        page = grafana.list_workspace_service_accounts(**paginator_kwargs)
        for account in page.get("serviceAccounts", []):
            if account["name"] == SERVICE_ACCOUNT:
                if account.get("grafanaRole") == SERVICE_ACCOUNT_ROLE:
                    return str(account["id"])
                # made by an older fmcluster as EDITOR: the AMG API cannot change a service account's role
                grafana.delete_workspace_service_account(workspaceId=workspace_id, serviceAccountId=str(account["id"]))
                created = grafana.create_workspace_service_account(
                    workspaceId=workspace_id, name=SERVICE_ACCOUNT, grafanaRole=SERVICE_ACCOUNT_ROLE)
                return str(created["id"])
        if not page.get("nextToken"):
            break
        paginator_kwargs["nextToken"] = page["nextToken"]
    raise PushError(f"service account {SERVICE_ACCOUNT!r} exists in {workspace_id} but could not be listed")


def push_dashboards(
    grafana: Any,
    workspace_id: str,
    project: str,
    models: Mapping[str, dict[str, Any]],
    *,
    datasources: Sequence[dict[str, Any]] = (),
    token_ttl_seconds: int = DEFAULT_TOKEN_TTL_SECONDS,
    scheme: str = "https",
    api_factory: Callable[[str, str], GrafanaApi] | None = None,
) -> PushResult:
    """Create or update ``datasources`` (Grafana data source JSON, each with a ``uid``), then upload ``models``
    (Grafana dashboard JSON keyed by UID) into the project's folder.

    ``grafana`` is a boto3 ``grafana`` client. ``scheme`` and ``api_factory`` exist for tests
    (a local plain-HTTP stub); real workspaces are HTTPS.
    """
    if not 60 <= token_ttl_seconds <= 2592000:
        raise ValueError("token_ttl_seconds must be between 60 s and 30 days")
    url = workspace_url(grafana, workspace_id, scheme)
    account_id = _service_account_id(grafana, workspace_id)
    token = grafana.create_workspace_service_account_token(
        workspaceId=workspace_id,
        serviceAccountId=account_id,
        name=f"fmcluster-push-{int(time.time())}",
        secondsToLive=token_ttl_seconds,
    )["serviceAccountToken"]
    result = PushResult(url=url, folder_uid=folder_uid(project))
    try:
        factory = api_factory or (lambda u, key: GrafanaApi.from_url(u, credential=key, timeout=30.0))
        api = factory(url, token["key"])
        for source in datasources:  # before the dashboards that select them
            result.datasources.append((source["uid"], _upsert_datasource(api, source)))
        _ensure_folder(api, result.folder_uid, f"fmcluster {project}")
        for uid, model in models.items():
            body = {k: v for k, v in model.items() if k != "id"}
            api.dashboard.update_dashboard(
                {"dashboard": body, "folderUid": result.folder_uid, "overwrite": True, "message": "fmcluster push"}
            )
            result.dashboards.append(uid)
    except GrafanaClientError as exc:  # 4xx (and its subclasses); the token is deleted below
        raise PushError(f"Grafana at {url} refused the upload: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - network or 5xx: report it plainly, after cleaning up
        raise PushError(f"pushing to Grafana at {url} failed: {exc}") from None
    finally:
        grafana.delete_workspace_service_account_token(
            workspaceId=workspace_id, serviceAccountId=account_id, tokenId=token["id"]
        )
    return result


def _ensure_folder(api: GrafanaApi, uid: str, title: str) -> None:
    try:
        api.folder.get_folder(uid)
    except GrafanaClientError as exc:
        if getattr(exc, "status_code", None) != 404:
            raise
        api.folder.create_folder(title, uid=uid)


def _upsert_datasource(api: GrafanaApi, source: dict[str, Any]) -> str:
    """Create the data source, or update the one with its UID in place (its id and users' links stay)."""
    uid = source["uid"]
    try:
        api.datasource.get_datasource_by_uid(uid)
    except GrafanaClientError as exc:
        if getattr(exc, "status_code", None) != 404:
            raise
        api.datasource.create_datasource(source)
        return "created"
    api.datasource.update_datasource_by_uid(uid, source)
    return "updated"
