"""The one AWS session of every command that calls AWS: its Region, its bounded waits, and what its failures say.

``aws_session(project, region=...)`` makes it; ``session.client(name)`` makes each boto3 client with
:data:`CLIENT_CONFIG`; :func:`translate` turns anything botocore raises into one :class:`AwsError` line
(exit 1: the account or the network; exit 2: bad input), and ``fmcluster.cli.awserrors`` prints it.

The Region, first found wins (:data:`REGION_ORDER`): the command's ``--region``, the project's
``region:``, ``AWS_REGION``, ``AWS_DEFAULT_REGION``, the profile's ``region`` (``~/.aws/config``), and
last the Region the project's ``availability_zone_id`` names (``use1-az6`` is in us-east-1,
:data:`fmcluster.facts.AZ_ID_REGIONS`). A Region found earlier that does not contain the project's zone
is refused: the project's stacks and capacity are in the zone's Region.

A command uses it so (``fmcluster/cli/hyperpod.py`` is a short example)::

    with account_errors():                      # fmcluster.cli.awserrors: one line, exit 1 or 2
        from fmcluster.aws.session import aws_session  # boto3 loads only for the commands that call AWS

        session = aws_session(loaded.project, region=region)
        with session.errors():
            session.client("cloudformation").describe_stacks(StackName=name)

Code under ``fmcluster/aws`` that turns a service's refusal into its own error first lets the caller's
problems through: ``if is_account_problem(exc): raise``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.loaders import create_loader
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConfigParseError,
    ConnectionClosedError,
    ConnectTimeoutError,
    CredentialRetrievalError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
    ProxyConnectionError,
    ReadTimeoutError,
    SSOError,
    TokenRetrievalError,
)
from botocore.retries.standard import ThrottledRetryableChecker

from fmcluster.aws import INPUT_EXIT, AwsError
from fmcluster.aws.permissions import COMMAND_ACTIONS
from fmcluster.facts import AZ_ID_REGIONS, is_opt_in, zone_region_prefix

# --- bounded waits -------------------------------------------------------------------------------

CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 7
ATTEMPTS = 3
"""Tries per request, the first included (botocore's ``total_max_attempts``), in botocore's standard retry mode."""
MAX_BACKOFF_S = 1 + 2
"""Standard mode waits ``rand(0, 1) * 2 ** i`` seconds before retry ``i`` (botocore ``retries/standard.py``,
``ExponentialBackoff``): at most 1 + 2 s over three attempts."""
GIVE_UP_S = ATTEMPTS * max(CONNECT_TIMEOUT_S, READ_TIMEOUT_S) + MAX_BACKOFF_S
"""The longest one request may take before fmcluster gives up and says so (24 s): under the 30 s promised."""

CLIENT_CONFIG = Config(connect_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S,
                       retries={"mode": "standard", "total_max_attempts": ATTEMPTS}, user_agent_extra="fmcluster")

# --- error codes ---------------------------------------------------------------------------------

THROTTLED = frozenset(ThrottledRetryableChecker._THROTTLED_ERROR_CODES)
"""The codes botocore's standard retry mode treats as throttling (botocore ``retries/standard.py``)."""
EXPIRED = frozenset({"ExpiredToken", "ExpiredTokenException", "RequestExpired", "TokenRefreshRequired"})
REFUSED = frozenset({"InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch", "AuthFailure",
                     "InvalidSignatureException", "IncompleteSignature", "InvalidAccessKeyId", "OptInRequired",
                     "MissingAuthenticationToken"})
DENIED = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedAccess",
                    "AuthorizationError", "Forbidden"})
ACCOUNT_CODES = THROTTLED | EXPIRED | REFUSED | DENIED
"""Client error codes about the caller, never about what was asked for."""

REGION_ORDER = ("--region", "the project's region:", "AWS_REGION", "AWS_DEFAULT_REGION",
                "the profile's region (~/.aws/config)", "the project's availability_zone_id")
"""Where the Region comes from, first found wins."""

DOCS = "docs/cli.md, \"Commands that call AWS\""


def is_account_problem(exc: BaseException) -> bool:
    """Whether ``exc`` is about the caller (credentials, Region, network, throttling, permissions), which
    :func:`translate` words, rather than about what was asked for."""
    if isinstance(exc, ClientError):
        return exc.response.get("Error", {}).get("Code", "") in ACCOUNT_CODES
    return isinstance(exc, BotoCoreError)


# --- the session ---------------------------------------------------------------------------------

@dataclass
class AwsSession:
    """A boto3 session in one Region, with where that Region came from and which profile signs."""

    boto: Any
    region: str
    region_from: str
    profile: str | None
    command: str | None = None
    """The command's key in :data:`fmcluster.aws.permissions.COMMAND_ACTIONS`: access denied lists its policy."""
    actions: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Operation name -> (IAM action, Region called), as clients call them: ``DescribeStacks`` ->
    (``cloudformation:DescribeStacks``, ``us-east-1``)."""
    last: tuple[str, str] | None = None
    """The last call made: (IAM action, Region)."""
    clients: dict[tuple[str, str], Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def client(self, service: str, region: str | None = None) -> Any:
        """One boto3 client per service and Region, with the bounded waits of :data:`CLIENT_CONFIG`."""
        key = (service, region or self.region)
        with self._lock:
            if key not in self.clients:
                made = self.boto.client(service, region_name=key[1], config=CLIENT_CONFIG)
                made.meta.events.register("before-call", self._note_action)
                self.clients[key] = made
            return self.clients[key]

    def _note_action(self, model: Any = None, request_signer: Any = None, **_: Any) -> None:
        if model is not None:
            region = getattr(request_signer, "region_name", None) or self.region
            self.actions[model.name] = self.last = (f"{model.service_model.signing_name}:{model.name}", region)

    def errors(self) -> AbstractContextManager[None]:
        """Turn whatever botocore raises inside into one :class:`AwsError` line, worded with this session."""
        return errors(self)


@contextmanager
def errors(session: AwsSession | None = None) -> Iterator[None]:
    """The one place botocore's exceptions become :class:`AwsError` (:func:`translate`), worded with ``session``, else
    the session this process made last: :meth:`AwsSession.errors`, and the command's outer guard
    (:func:`fmcluster.cli.awserrors.account_errors`), which prints the line."""
    try:
        yield
    except (BotoCoreError, ClientError) as exc:
        raise translate(exc, session) from None


_LOADERS: dict[str, Any] = {}
"""botocore's model loader per data path (``AWS_DATA_PATH``), shared by every session of this process."""
_LOADERS_LOCK = threading.Lock()


def shared_loader(path: str | None = None) -> Any:
    """This process's one botocore model loader for the data path ``path`` (``AWS_DATA_PATH``; None: botocore's own),
    made on first use: what :func:`botocore.loaders.create_loader` makes, once."""
    with _LOADERS_LOCK:
        loader = _LOADERS.get(path or "")
        if loader is None:
            loader = _LOADERS[path or ""] = create_loader(path)
    return loader


def core_session(profile: str | None = None) -> Any:
    """A botocore session whose service models come from this process's one loader per data path. botocore gives
    each new session a loader of its own, which parses a service's model files again (EC2's is ~6 MB of JSON,
    ~0.3 s); the models are read-only data, so every session of a process reads each file once."""
    core = botocore.session.Session(profile=profile) if profile else botocore.session.Session()
    core.register_component("data_loader", shared_loader(core.get_config_variable("data_path")))
    return core


_current: list[AwsSession] = []
"""The session this process made last: :func:`translate` words its errors with its Region and profile."""


def aws_session(project: Any = None, *, region: str | None = None, profile: str | None = None,
                command: str | None = None) -> AwsSession:
    """The session for a command: ``project`` (a :class:`fmcluster.config.Project`, or None) gives its
    ``region:`` and zone; ``region`` is the command's ``--region``; ``command`` names its IAM actions
    (:data:`~fmcluster.aws.permissions.COMMAND_ACTIONS`). Raises :class:`AwsError`."""
    try:
        core = core_session(profile)
        name = profile or os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE")
        if name and name not in core.available_profiles:
            raise ProfileNotFound(profile=name)
        chosen, source = resolve_region(core, region, getattr(project, "region", None),
                                        getattr(project, "availability_zone_id", None))
        boto = boto3.session.Session(botocore_session=core, region_name=chosen)
    except (BotoCoreError, ClientError) as exc:
        raise translate(exc) from None
    made = AwsSession(boto, chosen, source, name, command)
    _current[:] = [made]
    return made


def resolve_region(core: Any, flag: str | None, project_region: str | None, zone_id: str | None) -> tuple[str, str]:
    """(Region, where it came from) in :data:`REGION_ORDER`; refuses one the project's zone is not in."""
    profile_region = core.get_scoped_config().get("region")
    zone_region = AZ_ID_REGIONS.get(zone_region_prefix(zone_id)) if zone_id else None
    found = [(flag, "--region"), (project_region, "the project's region:"),
             (os.environ.get("AWS_REGION"), "AWS_REGION"), (os.environ.get("AWS_DEFAULT_REGION"), "AWS_DEFAULT_REGION"),
             (profile_region, f"profile {core.profile or 'default'}'s region"),
             (zone_region, f"availability_zone_id {zone_id}")]
    region, source = next(((r.strip(), s) for r, s in found if r and r.strip()), (None, ""))
    if region is None:
        # only the places this command has: a command that takes no project has no project's region or zone
        looked = [where for where in REGION_ORDER
                  if "project" not in where or project_region is not None or zone_id is not None]
        raise AwsError(f"no AWS Region: fmcluster looks at {', '.join(looked)}, and found none "
                       "(hint: pass --region REGION, or set AWS_REGION)", INPUT_EXIT)
    if zone_region and region != zone_region:
        raise AwsError(f"Region {region} (from {source}) does not contain the project's availability_zone_id "
                       f"{zone_id}, which is in {zone_region} (hint: {_unset(source)} or use --region {zone_region})",
                       INPUT_EXIT)
    return region, source


def _unset(source: str) -> str:
    if source.startswith("AWS_"):
        return f"unset {source}"
    if source.startswith("profile"):
        return "set AWS_REGION"
    return f"change {source}"


# --- one line per failure ------------------------------------------------------------------------

def translate(exc: BaseException, session: AwsSession | None = None) -> AwsError:
    """What went wrong, in one line with what to do, and its exit code."""
    session = session or (_current[0] if _current else None)
    region = f" in {session.region} (Region from {session.region_from})" if session else ""
    profile = session.profile if session else os.environ.get("AWS_PROFILE")
    login = f"aws sso login --profile {profile}" if profile else "aws sso login --profile NAME"
    if isinstance(exc, AwsError):
        return exc
    if isinstance(exc, ProfileNotFound):
        return AwsError(_profile_not_found(exc.kwargs.get("profile", "")), INPUT_EXIT)
    if isinstance(exc, (SSOError, TokenRetrievalError)):
        return AwsError(f"the AWS SSO sign-in of profile {profile or '(default)'} has no valid token (missing or "
                        f"expired) (hint: run `{login}`, then run this command again)")
    if isinstance(exc, NoCredentialsError):
        return AwsError("no AWS credentials found (looked in AWS_ACCESS_KEY_ID, AWS_PROFILE or the default profile "
                        "of ~/.aws/config and ~/.aws/credentials, and the instance's role) (hint: `aws configure`, "
                        "`aws sso login --profile NAME` then AWS_PROFILE=NAME, or set AWS_ACCESS_KEY_ID and "
                        "AWS_SECRET_ACCESS_KEY)")
    if isinstance(exc, PartialCredentialsError):
        return AwsError(f"incomplete AWS credentials: {exc} (hint: set both the access key ID and the secret key)")
    if isinstance(exc, CredentialRetrievalError):
        return AwsError(f"cannot get AWS credentials: {exc} (hint: check profile {profile or 'default'} in "
                        "~/.aws/config, or sign in again)")
    if isinstance(exc, NoRegionError):
        return AwsError(f"no AWS Region: fmcluster looks at {', '.join(REGION_ORDER)} (hint: pass --region REGION, "
                        "or set AWS_REGION)", INPUT_EXIT)
    if isinstance(exc, ConfigParseError):
        return AwsError(f"cannot read the AWS configuration: {exc} (hint: fix the file, or point AWS_CONFIG_FILE "
                        "at a good one)", INPUT_EXIT)
    if isinstance(exc, ProxyConnectionError):
        return AwsError(f"cannot reach the proxy {exc.kwargs.get('proxy_url', '')} (hint: check HTTPS_PROXY and "
                        "NO_PROXY, or unset them)")
    if isinstance(exc, (ConnectTimeoutError, ReadTimeoutError, EndpointConnectionError, ConnectionClosedError)):
        if session and session.last and session.last[1] != session.region:
            region = f" in {session.last[1]}"  # a call outside the project's Region (the Price List's us-east-1)
        return AwsError(_unreachable(exc, region))
    if isinstance(exc, ClientError):
        return _client_error(exc, session, region, login)
    return AwsError(f"the AWS call failed{region}: {exc}")


def _profile_not_found(name: str) -> str:
    try:
        known = sorted(botocore.session.Session(profile=None).available_profiles)
    except BotoCoreError:
        known = []
    files = (f"{os.environ.get('AWS_CONFIG_FILE', '~/.aws/config')} and "
             f"{os.environ.get('AWS_SHARED_CREDENTIALS_FILE', '~/.aws/credentials')}")
    have = f"the profiles there: {', '.join(known)}" if known else "there are no profiles there"
    source = " (from AWS_PROFILE)" if os.environ.get("AWS_PROFILE") == name else ""
    return (f"AWS profile {name!r}{source} is not in {files}; {have} (hint: set AWS_PROFILE to one of them, or "
            "create it with `aws configure --profile NAME` or `aws configure sso`)")


def _unreachable(exc: BotoCoreError, region: str) -> str:
    endpoint = exc.kwargs.get("endpoint_url", "the AWS endpoint")
    if isinstance(exc, ReadTimeoutError):
        what = f"{endpoint} did not answer within {READ_TIMEOUT_S} s, {ATTEMPTS} times"
    elif isinstance(exc, ConnectTimeoutError):
        what = f"cannot connect to {endpoint} within {CONNECT_TIMEOUT_S} s, {ATTEMPTS} times"
    elif isinstance(exc, ConnectionClosedError):
        what = f"{endpoint} closed the connection, {ATTEMPTS} times"
    else:
        what = f"cannot reach {endpoint} ({ATTEMPTS} attempts)"
    proxy = next((v for v in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy") if os.environ.get(v)), None)
    hint = (f"check the proxy in {proxy} and NO_PROXY" if proxy else "behind a proxy, set HTTPS_PROXY")
    override = " and AWS_ENDPOINT_URL" if os.environ.get("AWS_ENDPOINT_URL") else ""
    return f"{what}{region}; gave up (hint: check the network{override}; {hint})"


def _client_error(exc: ClientError, session: AwsSession | None, region: str, login: str) -> AwsError:
    error = exc.response.get("Error", {})
    code, message = error.get("Code", ""), " ".join(str(error.get("Message", "")).split())
    op = exc.operation_name
    action, where = (session.actions.get(op) if session else None) or (op, session.region if session else "")
    if session and where != session.region:  # a call outside the project's Region (the Price List's us-east-1)
        region = f" in {where}"
    if code in THROTTLED:
        return AwsError(f"AWS throttled {action}{region} ({code}) after {ATTEMPTS} attempts with botocore's standard "
                        "retry mode (hint: wait a minute and run the command again; other tools in the account "
                        "may be calling the same API)")
    if code in EXPIRED:
        return AwsError(f"the AWS credentials have expired ({code}) (hint: sign in again, e.g. `{login}`, or "
                        "renew the keys)")
    if code in REFUSED:
        opt_in = (f"; {where} is an opt-in Region: if the account has not enabled it, enable it (`aws account "
                  f"enable-region --region-name {where}`) and wait until it is ENABLED" if where and is_opt_in(where)
                  else "")
        return AwsError(f"AWS refused the credentials for {action}{region} ({code}: {message}){opt_in} (hint: check "
                        f"the access keys or sign in again, e.g. `{login}`)")
    if code in DENIED:
        needs = COMMAND_ACTIONS.get(session.command or "", ()) if session else ()
        policy = (f"`fmcluster {session.command}` needs {', '.join(needs)}" if session and needs
                  else "every action each command needs")
        return AwsError(f"access denied to {action}{region} ({code}) (hint: allow {action} in an IAM policy of these "
                        f"credentials; {policy}: see {DOCS})")
    return AwsError(f"AWS refused {action}{region}: {code}: {message}")
