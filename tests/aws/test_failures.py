"""Every command that calls AWS, under every way the account, the Region or the network can fail: one line,
a stable exit code, no traceback -- with real botocore underneath.

The failures come from what botocore itself reads and does: temporary ``AWS_CONFIG_FILE`` and
``AWS_SHARED_CREDENTIALS_FILE`` (a profile that is not there, an SSO profile with no token cache, no
credentials at all), ``AWS_ENDPOINT_URL`` pointing at a loopback port nobody listens on, and a loopback
server that answers every request with one AWS error in the service's own wire format (query XML, EC2
XML, JSON, REST-JSON), so botocore parses it and its standard retry mode retries it as it would AWS's.
The commands run through Typer's CliRunner in this process (fast); ``test_real_process_*`` run the real
``fmcluster`` entry point in a subprocess, behind the rehearsal's loopback-only network guard.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support import ROOT, clean_aws_home
from support.loopback import serve_in_thread
from typer.testing import CliRunner

from fmcluster.aws import session as aws
from fmcluster.aws.permissions import COMMAND_ACTIONS
from fmcluster.cli import app
from fmcluster.cli.plancost import LIVE_NOT_READ

runner = CliRunner()
PROJECT = str(ROOT / "projects" / "default.yaml")  # use1-az6, no region:
HYPERPOD = str(ROOT / "examples" / "p5en-hyperpod.yaml")  # use1-az6, no region:
PCLUSTER = str(ROOT / "examples" / "p5-parallelcluster.yaml")  # use1-az6, no region:
NETGUARD = ROOT / "tests" / "rehearsal" / "netguard"

CONFIG = """\
[profile dev]
region = eu-west-1
[profile sso]
sso_start_url = https://example.awsapps.com/start
sso_region = us-east-1
sso_account_id = 123456789012
sso_role_name = Admin
"""


@dataclass(frozen=True)
class Command:
    name: str
    args: list[str]
    action: str
    """The IAM action of the command's first request."""
    has_project: bool = True
    degrades: bool = False
    """The command does its work without AWS when AWS fails (``plan --prices``: the plan with the table's prices),
    exits 0 and says why in one ``warning:`` line instead of an ``error:`` line."""


COMMANDS = [
    Command("preflight", ["preflight", PROJECT], "sts:GetCallerIdentity"),
    Command("capacity search", ["capacity", "search", "--instance-type", "p5.48xlarge", "--count", "1", "--days", "1"],
            "ec2:DescribeCapacityBlockOfferings", has_project=False),
    Command("plan --prices", ["plan", PROJECT, "--prices"], "pricing:GetProducts", degrades=True),
    Command("dashboards push", ["dashboards", "push", PROJECT], "cloudformation:DescribeStacks"),
    Command("hyperpod status", ["hyperpod", "status", HYPERPOD], "cloudformation:DescribeStacks"),
    Command("deploy", ["deploy", PROJECT, "--all"], "cloudformation:GetTemplate"),
    Command("parallelcluster config --from-stacks", ["parallelcluster", "config", PCLUSTER, "--from-stacks", "--out", "{tmp}/c.yaml"],
            "cloudformation:DescribeStacks"),
    Command("status", ["status", PROJECT], "cloudformation:DescribeStacks"),
    Command("connect", ["connect", PROJECT, "--print"], "cloudformation:DescribeStacks"),
]
IDS = [c.name for c in COMMANDS]


def closed_port() -> int:
    """A loopback port nothing listens on: connections to it are refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean AWS configuration: two profiles, no credentials, no Region, no SSO token cache."""
    clean_aws_home(tmp_path, monkeypatch, CONFIG)
    monkeypatch.setenv("FMCLUSTER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture(autouse=True)
def quick_synthesis(monkeypatch: pytest.MonkeyPatch) -> None:
    """`deploy` synthesizes before it reads the deployed templates; the synthesis is not what these tests are about
    (tests/cli/test_deploy.py and the rehearsal run it for real), so it is one empty stack here."""
    import fmcluster.stacks.assembly as assembly

    def one_empty_stack(ref: str, outdir: Path, context: dict[str, object]) -> assembly.Assembly:
        return assembly.Assembly(directory=outdir, templates={"default-network": {}},
                                 protected={"default-network": False})

    monkeypatch.setattr(assembly, "synthesize_assembly", one_empty_stack)


def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's own retries, without its waits (up to 1 + 2 s per command): for tests that check the count or the
    line, not the time (test_a_refused_endpoint_is_named and the never-answering endpoint's test keep the waits)."""
    from botocore.retries.standard import ExponentialBackoff

    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0)


def exit_for(command: Command, code: int) -> int:
    """The exit code ``command`` ends with on a failure that ends the others with ``code``."""
    return 0 if command.degrades else code


def run(command: Command, tmp: Path) -> tuple[int, str]:
    """Run the command; return its exit code and its one ``error:`` line (asserting there is exactly one). A command
    that degrades (``plan --prices``) must print its plan and say the same words in one line after
    :data:`LIVE_NOT_READ`; that line is returned as the ``error:`` line the others print."""
    result = runner.invoke(app, [a.replace("{tmp}", str(tmp)) for a in command.args])
    if command.degrades:
        assert result.exit_code == 0 and result.exception is None, result.output
        assert "cost (USD)" in result.stdout and "Traceback" not in result.output
        lead = f"warning: {LIVE_NOT_READ}: "
        said = [line for line in result.stderr.splitlines() if line.startswith(lead)]
        assert len(said) == 1 and not [line for line in result.stderr.splitlines() if line.startswith("error:")]
        return 0, "error: " + said[0][len(lead):]
    assert isinstance(result.exception, SystemExit), f"{command.name} raised {result.exception!r}: {result.output}"
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert not [line for line in result.stderr.splitlines() if line and not line.startswith(("error:", "warning:"))]
    return result.exit_code, errors[0]


# --- the profile, the sign-in, the credentials ---------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_an_unknown_profile_is_bad_input_and_lists_the_profiles(command: Command, home: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_PROFILE", "prod")
    code, line = run(command, home)
    assert code == exit_for(command, 2)
    assert line == (f"error: AWS profile 'prod' (from AWS_PROFILE) is not in {home}/config and {home}/credentials; "
                    "the profiles there: dev, sso (hint: set AWS_PROFILE to one of them, or create it with "
                    "`aws configure --profile NAME` or `aws configure sso`)")


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_an_sso_profile_without_a_token_says_to_sign_in(command: Command, home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_PROFILE", "sso")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    code, line = run(command, home)
    assert code == exit_for(command, 1)
    assert "the AWS SSO sign-in of profile sso has no valid token" in line
    assert "run `aws sso login --profile sso`" in line


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_no_credentials_says_where_it_looked(command: Command, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    code, line = run(command, home)
    assert code == exit_for(command, 1)
    assert line.startswith("error: no AWS credentials found") and "`aws configure`" in line


# --- the Region ----------------------------------------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_no_region_anywhere(command: Command, home: Path, monkeypatch: pytest.MonkeyPatch, no_backoff: None) -> None:
    """No Region set: a project's zone names it (and the command goes on to the refused endpoint);
    `capacity search` has no project and says where it looked."""
    keys(monkeypatch)
    port = closed_port()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    code, line = run(command, home)
    if command.has_project:
        assert code == exit_for(command, 1)
        assert f"cannot reach http://127.0.0.1:{port}" in line
        assert "in us-east-1 (Region from availability_zone_id use1-az6)" in line
    else:
        assert code == exit_for(command, 2)
        # a command that takes no project names no project's places
        assert line == ("error: no AWS Region: fmcluster looks at --region, AWS_REGION, "
                        "AWS_DEFAULT_REGION, the profile's region (~/.aws/config), "
                        "and found none (hint: pass --region REGION, or set AWS_REGION)")


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_aws_region_alone_is_the_region_used(command: Command, home: Path, monkeypatch: pytest.MonkeyPatch,
                                             no_backoff: None) -> None:
    keys(monkeypatch)
    region = "us-east-1" if command.has_project else "eu-west-2"  # a project's Region must hold its zone
    monkeypatch.setenv("AWS_REGION", region)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port()}")
    code, line = run(command, home)
    assert code == exit_for(command, 1) and f"in {region} (Region from AWS_REGION)" in line


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.has_project], ids=[c.name for c in COMMANDS if c.has_project])
def test_a_region_without_the_projects_zone_is_bad_input(command: Command, home: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    keys(monkeypatch)
    monkeypatch.setenv("AWS_PROFILE", "dev")  # eu-west-1 in the profile; the project's zone is in us-east-1
    code, line = run(command, home)
    assert code == exit_for(command, 2)
    assert line == ("error: Region eu-west-1 (from profile dev's region) does not contain the project's "
                    "availability_zone_id use1-az6, which is in us-east-1 (hint: set AWS_REGION or use --region "
                    "us-east-1)")


# --- the network ---------------------------------------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_a_refused_endpoint_is_named(command: Command, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys(monkeypatch)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    port = closed_port()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")  # unused for loopback; named in the hint
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    start = time.monotonic()
    code, line = run(command, home)
    assert time.monotonic() - start < 30
    assert code == exit_for(command, 1)
    assert line.startswith(f"error: cannot reach http://127.0.0.1:{port}/ ({aws.ATTEMPTS} attempts) in us-east-1")
    assert "check the proxy in HTTPS_PROXY and NO_PROXY" in line


# --- what AWS answers: throttling, access denied, expired or refused credentials -----------------

class Errors:
    """A loopback endpoint that answers every request with one AWS error, in the wire format of the protocol
    the request used, and counts the requests."""

    def __init__(self, code: str, status: int) -> None:
        self.code, self.status, self.requests = code, status, 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                outer.requests += 1
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                message = f"fake {outer.code}"
                if self.headers.get("X-Amz-Target") or self.path.startswith("/workspaces"):  # json, rest-json
                    data = json.dumps({"__type": outer.code, "message": message}).encode()
                    kind = "application/x-amz-json-1.1"
                elif "Version=2016-11-15" in body:  # EC2's own XML
                    data = (f"<Response><Errors><Error><Code>{outer.code}</Code><Message>{message}</Message></Error>"
                            "</Errors><RequestID>r-1</RequestID></Response>").encode()
                    kind = "text/xml"
                else:  # query protocol: STS, CloudFormation
                    data = (f"<ErrorResponse><Error><Type>Sender</Type><Code>{outer.code}</Code><Message>{message}"
                            "</Message></Error><RequestId>r-1</RequestId></ErrorResponse>").encode()
                    kind = "text/xml"
                self.send_response(outer.status)
                self.send_header("Content-Type", kind)
                self.send_header("x-amzn-ErrorType", outer.code)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        serve_in_thread(self.server)  # stopped at once: 30 servers in this file

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def answering(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Errors]]:
    servers: list[Errors] = []

    def start(code: str, status: int = 400, region: str = "us-east-1") -> Errors:
        server = Errors(code, status)
        servers.append(server)
        keys(monkeypatch)
        monkeypatch.setenv("AWS_REGION", region)
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.url)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_throttling_is_retried_then_said(command: Command, home: Path, answering, no_backoff: None) -> None:
    server = answering("Throttling")
    code, line = run(command, home)
    assert code == exit_for(command, 1)
    assert server.requests == aws.ATTEMPTS  # botocore's standard mode retried, then gave up
    assert line.startswith(f"error: AWS throttled {command.action} in us-east-1")
    assert f"after {aws.ATTEMPTS} attempts with botocore's standard retry mode" in line


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_access_denied_names_the_action(command: Command, home: Path, answering) -> None:
    answering("AccessDenied" if command.action.split(":")[0] in ("sts", "cloudformation") else
              "UnauthorizedOperation" if command.action.startswith("ec2") else "AccessDeniedException", 403)
    code, line = run(command, home)
    assert code == exit_for(command, 1)
    assert line.startswith(f"error: access denied to {command.action} in us-east-1")
    assert f"allow {command.action} in an IAM policy" in line and "Commands that call AWS" in line
    assert f"`fmcluster {command.name}` needs {', '.join(COMMAND_ACTIONS[command.name])}: see docs/cli.md" in line


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_expired_credentials_say_to_sign_in_again(command: Command, home: Path, answering) -> None:
    answering("ExpiredToken" if command.action.split(":")[0] in ("sts", "cloudformation") else
              "RequestExpired" if command.action.startswith("ec2") else "ExpiredTokenException", 400)
    code, line = run(command, home)
    assert code == exit_for(command, 1) and "the AWS credentials have expired" in line and "sign in again" in line


def test_refused_credentials_in_an_opt_in_region_say_how_to_enable_it(home: Path, answering) -> None:
    answering("AuthFailure", 401, region="af-south-1")
    code, line = run(COMMANDS[1], home)
    assert code == 1 and "AWS refused the credentials for ec2:DescribeCapacityBlockOfferings in af-south-1" in line
    assert "af-south-1 is an opt-in Region" in line and "aws account enable-region --region-name af-south-1" in line


def test_refused_credentials_in_a_default_region_do_not_blame_the_region(home: Path, answering) -> None:
    answering("AuthFailure", 401, region="us-east-1")
    code, line = run(COMMANDS[1], home)
    assert code == 1 and "AWS refused the credentials" in line and "opt-in" not in line


# --- the real process ----------------------------------------------------------------------------

def cli(args: list[str], env: dict[str, str], tmp: Path, timeout: float = 60,
        prelude: str = "") -> tuple[subprocess.CompletedProcess, float]:
    """Run ``fmcluster ARGS`` in its own Python, behind the loopback-only network guard (``prelude``: Python run in
    that process before the CLI starts)."""
    log = tmp / "net.log"
    full = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | env | {
        "PYTHONPATH": str(NETGUARD), "FMC_NET_LOG": str(log), "HOME": str(tmp), "AWS_CONFIG_FILE": str(tmp / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "credentials"), "AWS_EC2_METADATA_DISABLED": "true",
        "COLUMNS": "200"}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", f"{prelude}\nfrom fmcluster.cli import main; main()", *args], env=full,
                          capture_output=True, text=True, timeout=timeout, cwd=tmp)
    took = time.monotonic() - start
    assert not log.exists() or not log.read_text(), f"left loopback: {log.read_text()}"
    assert "Traceback" not in done.stderr + done.stdout
    return done, took


def test_real_process_sso_profile_without_a_token(home: Path) -> None:
    done, _ = cli(["preflight", PROJECT], {"AWS_PROFILE": "sso"}, home)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith("error: the AWS SSO sign-in of profile sso has no valid token")


def test_real_process_unknown_profile(home: Path) -> None:
    done, _ = cli(["hyperpod", "status", HYPERPOD], {"AWS_PROFILE": "prod"}, home)
    assert done.returncode == 2 and done.stderr.splitlines()[-1].startswith("error: AWS profile 'prod'")


SCALED_READ_TIMEOUT_S = 1
"""The read timeout the never-answering endpoint's test runs the CLI with: its real process, with
:data:`fmcluster.aws.session.READ_TIMEOUT_S` and the read timeout of :data:`~fmcluster.aws.session.CLIENT_CONFIG` (what
every client is made with) set to this instead of 7 s, so the test waits 3 + up to 3 s of backoff, not 21 + 3."""


def test_every_client_waits_the_read_timeout_the_bound_is_made_of() -> None:
    """The bound's figures are what botocore is given: every client's config carries READ_TIMEOUT_S, CONNECT_TIMEOUT_S
    and ATTEMPTS in standard mode, and those figures with the backoff give up in under 30 s. With the scaled run below
    (the same process, the same config but for the read timeout) this proves the 30 s of the real figures."""
    config = aws.CLIENT_CONFIG
    assert (config.read_timeout, config.connect_timeout) == (aws.READ_TIMEOUT_S, aws.CONNECT_TIMEOUT_S)
    assert config.retries == {"mode": "standard", "total_max_attempts": aws.ATTEMPTS}
    assert aws.GIVE_UP_S == aws.ATTEMPTS * max(aws.CONNECT_TIMEOUT_S, aws.READ_TIMEOUT_S) + aws.MAX_BACKOFF_S < 30


def test_an_endpoint_that_never_answers_is_given_up_within_30_seconds(home: Path) -> None:
    """The bound, proved once: a loopback endpoint that accepts each connection and never answers. Every
    attempt waits out the read timeout; the command gives up, and says so, within the bound of its first request
    (the clock starts at the first connection, so a slow interpreter start on a loaded machine does not count).
    Run with the read timeout scaled down to :data:`SCALED_READ_TIMEOUT_S` (the attempts, the backoff and the
    30 s bound's headroom as they are): the waits are the read timeout's, ATTEMPTS times, and no more; with the real
    figures (test_every_client_waits_the_read_timeout_the_bound_is_made_of) that is under 30 s."""
    accepted: list[float] = []
    held: list[socket.socket] = []
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)

    def hold() -> None:
        while True:
            try:
                conn, _ = silent.accept()
            except OSError:
                return
            accepted.append(time.monotonic())
            held.append(conn)

    threading.Thread(target=hold, daemon=True).start()
    url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    scaled = (f"from botocore.config import Config; import fmcluster.aws.session as s; "
              f"s.READ_TIMEOUT_S = {SCALED_READ_TIMEOUT_S}; "
              f"s.CLIENT_CONFIG = s.CLIENT_CONFIG.merge(Config(read_timeout={SCALED_READ_TIMEOUT_S}))")
    try:
        done, took = cli(["capacity", "search", "--instance-type", "p5.48xlarge", "--count", "1", "--days", "1"],
                         {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret",
                          "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": url}, home, timeout=60, prelude=scaled)
        ended = time.monotonic()
    finally:
        silent.close()
        for conn in held:
            conn.close()
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: {url}/ did not answer within {SCALED_READ_TIMEOUT_S} s, {aws.ATTEMPTS} times")
    assert len(accepted) == aws.ATTEMPTS
    waited = ended - accepted[0]
    give_up = aws.ATTEMPTS * SCALED_READ_TIMEOUT_S + aws.MAX_BACKOFF_S  # GIVE_UP_S at the scaled read timeout
    headroom = 30 - aws.GIVE_UP_S  # what the real figures leave under 30 s, for the process to print and exit
    assert aws.ATTEMPTS * SCALED_READ_TIMEOUT_S <= waited < give_up + headroom, (waited, took)  # each attempt waited


def test_the_price_list_is_named_in_its_own_region(home: Path, answering) -> None:
    """A project in us-west-2: its prices are asked of the Price List in us-east-1, and the line says so."""
    answering("AccessDeniedException", 403, region="us-west-2")
    command = Command("plan --prices", ["plan", str(ROOT / "examples" / "p6-b200-mixed.yaml"), "--prices"],
                      "pricing:GetProducts", degrades=True)
    code, line = run(command, home)
    assert code == exit_for(command, 1)
    assert line.startswith("error: access denied to pricing:GetProducts in us-east-1 (AccessDenied")


def test_the_price_list_endpoint_is_named_in_its_own_region(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                           no_backoff: None) -> None:
    keys(monkeypatch)
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port()}")
    command = Command("plan --prices", ["plan", str(ROOT / "examples" / "p6-b200-mixed.yaml"), "--prices"],
                      "pricing:GetProducts", degrades=True)
    code, line = run(command, home)
    assert code == exit_for(command, 1) and "(3 attempts) in us-east-1; gave up" in line


# --- moto's server, which enforces IAM: an unknown key, and a user with no policy ----------------

@pytest.fixture(scope="module")
def moto_iam(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """moto's server on loopback with IAM enforced after its first two calls (``INITIAL_NO_AUTH_ACTION_COUNT``),
    which make a user without any policy and its access key: (endpoint, key ID, secret)."""
    import boto3  # the fixture's own setup calls to moto

    port = closed_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | {"INITIAL_NO_AUTH_ACTION_COUNT": "2"}
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], env=env,
                                  stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        iam = boto3.client("iam", region_name="us-east-1", endpoint_url=url, aws_access_key_id="setup",
                           aws_secret_access_key="setup")
        iam.create_user(UserName="nobody")
        key = iam.create_access_key(UserName="nobody")["AccessKey"]
        yield url, key["AccessKeyId"], key["SecretAccessKey"]
    finally:
        server.kill()  # nothing of moto's in-memory state is worth its exit (SIGTERM: ~2 s of interpreter teardown)
        server.wait(timeout=10)


MOTO_DENIES = [c for c in COMMANDS if c.action.split(":")[0] in ("ec2", "cloudformation")]
"""The commands whose first call moto's IAM answers in the service's own format (its JSON services' 403 is not)."""


@pytest.mark.parametrize("command", MOTO_DENIES, ids=[c.name for c in MOTO_DENIES])
def test_moto_denies_a_user_without_policies(command: Command, home: Path, monkeypatch: pytest.MonkeyPatch,
                                             moto_iam: tuple[str, str, str]) -> None:
    url, key, secret = moto_iam
    for name, value in {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
                        "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    code, line = run(command, home)
    assert code == 1 and line.startswith(f"error: access denied to {command.action} in us-east-1 (Region from AWS_REGION) "
                                   "(AccessDenied)")


def test_moto_preflight_without_policies_warns_per_check(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                         moto_iam: tuple[str, str, str]) -> None:
    """GetCallerIdentity needs no permission, so preflight knows who asks; each check it may not run is a warning."""
    url, key, secret = moto_iam
    for name, value in {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
                        "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    result = runner.invoke(app, ["preflight", PROJECT, "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["results"][0]["check"] == "credentials" and data["results"][0]["status"] == "pass"
    assert data["results"][0]["message"].startswith("arn:aws:iam::123456789012:user/nobody")
    checks = data["results"][1:]
    assert checks and all(r["status"] == "warn" and r["message"].startswith("could not check: ") for r in checks)
    # moto answers its JSON services' denials in XML (code "403"); EC2's in EC2's own format
    assert {r["check"] for r in checks if r["message"].startswith("could not check: AccessDenied: User: "
                                                                  "arn:aws:iam::123456789012:user/nobody")} == {"zone", "offered"}


def test_moto_refuses_an_unknown_key(home: Path, monkeypatch: pytest.MonkeyPatch,
                                     moto_iam: tuple[str, str, str]) -> None:
    url, _, _ = moto_iam
    for name, value in {"AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": "AKIAUNKNOWNKEY000000",
                        "AWS_SECRET_ACCESS_KEY": "nope", "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    code, line = run(COMMANDS[0], home)
    assert code == 1
    assert line.startswith("error: AWS refused the credentials for sts:GetCallerIdentity in us-east-1 "
                           "(Region from AWS_REGION) (InvalidClientTokenId: The security token included in the "
                           "request is invalid.)")
