"""`fmcluster deploy` and ParallelCluster updates that apply only with the compute fleet stopped.

The deployed templates come from botocore's Stubber (GetTemplate); the cluster's fleet status lives in moto's
DynamoDB, in the table and item ParallelCluster uses (``parallelcluster-<cluster>``, ``COMPUTE_FLEET``); the head
node and its `squeue` come from Stubbers for EC2 and SSM. Time does not pass: each pause plays clustermgtd's part
and moves a requested status on (STOP_REQUESTED -> STOPPING -> STOPPED, START_REQUESTED -> RUNNING).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import boto3
import pytest
from botocore.stub import ANY, Stubber
from fmcluster.stacks.app import synthesize
from moto import mock_aws
from support import BASE
from typer.testing import CliRunner

from fmcluster.aws import fleet
from fmcluster.cli import REPLACEMENT_EXIT, app
from fmcluster.cli import deploy as cli
from fmcluster.contracts import STACKS

OLD = BASE + "region: us-east-1\nstorage:\n  checkpoint: {parameters: 70e9}\n"
PC = OLD + "orchestrator: {type: parallelcluster}\n"
SCALEDOWN = OLD + "orchestrator: {type: parallelcluster, parallelcluster: {slurm: {scaledown_idletime_minutes: 20}}}\n"
"""``SlurmSettings.ScaledownIdletime`` changes: COMPUTE_FLEET_STOP, and nothing else of the cluster changes."""
ACCOUNTING = OLD + "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n"
EVERY_STACK = sorted(f"demo-{role}" for role in STACKS)
REGION = "us-east-1"
HEAD = "i-0123456789abcdef0"
COMMAND_ID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
JOB = "4242|alice|train|pretrain-70b|3:02:11|2"


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("deployed")
    (folder / "demo.yaml").write_text(PC)
    return synthesize(folder / "demo.yaml", folder / "out")


_SYNTHESIZED: dict[tuple[str, str], tuple[dict, dict]] = {}


@pytest.fixture(autouse=True)
def one_synthesis_per_project_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """deploy's synthesis (``synthesize_assembly``, real), once per project text and context in this file: seven tests
    deploy the same SCALEDOWN file. A repeat gets the templates and protection the first synthesis made; cdk deploy
    is a stub in every test here (run_cdk), so nothing reads the assembly folder (tests/cli/test_deploy.py covers
    the folder cdk deploys)."""
    import fmcluster.stacks.assembly as assembly

    real = assembly.synthesize_assembly

    def shared(ref: str, outdir: Path, context: dict[str, object]) -> assembly.Assembly:
        key = (Path(ref).read_text(), json.dumps(context, sort_keys=True))
        if key not in _SYNTHESIZED:
            made = real(ref, outdir, context)
            _SYNTHESIZED[key] = (made.templates, made.protected)
        templates, protected = _SYNTHESIZED[key]
        return assembly.Assembly(directory=outdir, templates=copy.deepcopy(templates), protected=dict(protected))

    monkeypatch.setattr(assembly, "synthesize_assembly", shared)


def cluster_name(templates: dict[str, dict]) -> str:
    [name] = [r["Properties"]["ClusterName"] for r in templates["demo-cluster"]["Resources"].values()
              if r["Type"] == "Custom::PclusterCluster"]
    return name


class _Session:
    region = REGION

    def __init__(self, clients: dict) -> None:
        self.clients = clients

    def client(self, name: str):
        return self.clients[name]

    def errors(self):
        import contextlib

        return contextlib.nullcontext()


def _client(name: str):
    return boto3.client(name, region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, deployed):
    """CloudFormation (stubbed GetTemplate), DynamoDB (moto, the fleet RUNNING), EC2 and SSM (stubbed, unused
    unless a test adds responses)."""
    with mock_aws():
        ddb = _client("dynamodb")
        table = fleet.table(cluster_name(deployed))
        ddb.create_table(TableName=table, KeySchema=[{"AttributeName": "Id", "KeyType": "HASH"}],
                         AttributeDefinitions=[{"AttributeName": "Id", "AttributeType": "S"}],
                         BillingMode="PAY_PER_REQUEST")
        ddb.put_item(TableName=table, Item={"Id": {"S": "COMPUTE_FLEET"}, "Data": {"M": {
            "status": {"S": "RUNNING"}, "lastStatusUpdatedTime": {"S": "2026-11-01 10:00:00+00:00"}}}})
        cfn = _client("cloudformation")
        stub = Stubber(cfn)
        for name in EVERY_STACK:
            params = {"StackName": name, "TemplateStage": "Original"}
            if name in deployed:
                stub.add_response("get_template", {"TemplateBody": json.dumps(deployed[name])}, params)
            else:
                stub.add_client_error("get_template", "ValidationError", f"Stack with id {name} does not exist",
                                      expected_params=params)
        stub.activate()
        clients = {"cloudformation": cfn, "dynamodb": ddb, "ec2": _client("ec2"), "ssm": _client("ssm")}
        session = _Session(clients)
        monkeypatch.setattr(cli, "aws", lambda loaded: session)
        yield session


def fleet_status(session: _Session, deployed) -> str:
    return fleet.status(session.client("dynamodb"), cluster_name(deployed))


@pytest.fixture
def clustermgtd(monkeypatch: pytest.MonkeyPatch, aws, deployed) -> list[str]:
    """Each pause moves a requested status one step on, as the head node's clustermgtd does; the statuses seen."""
    seen: list[str] = []
    moves = {"STOP_REQUESTED": "STOPPING", "STOPPING": "STOPPED", "START_REQUESTED": "RUNNING"}

    def pause(_seconds: float) -> None:
        now = fleet_status(aws, deployed)
        seen.append(now)
        if now in moves:
            aws.client("dynamodb").update_item(
                TableName=fleet.table(cluster_name(deployed)), Key=fleet.FLEET_KEY,
                UpdateExpression="SET #d.#s = :s", ExpressionAttributeNames={"#d": "Data", "#s": "status"},
                ExpressionAttributeValues={":s": {"S": moves[now]}})

    monkeypatch.setattr(fleet, "_pause", pause)
    return seen


@pytest.fixture
def run_cdk(monkeypatch: pytest.MonkeyPatch, aws, deployed) -> list[tuple[list[str], str]]:
    """The CDK CLI's command lines, captured instead of run, each with the fleet's status when cdk ran."""
    calls: list[tuple[list[str], str]] = []

    class Done:
        returncode = 0

    monkeypatch.setattr(cli.subprocess, "run",
                        lambda command, **kw: calls.append((command, fleet_status(aws, deployed))) or Done())
    return calls


def stacks_of(command: list[str]) -> list[str]:
    """The stacks a ``cdk deploy --exclusively A B ...`` line names, in its order."""
    assert command[1] == "deploy" and "--exclusively" in command, command
    return command[command.index("--exclusively") + 1:]


def test_a_stack_selection_is_read_as_cdk_reads_it() -> None:
    from fmcluster.cli.deployfleet import split_selection

    stacks = ["demo-network", "demo-storage", "demo-cluster"]
    assert split_selection(["--all", "--require-approval", "never"], stacks) == (
        ["--require-approval", "never"], stacks)
    assert split_selection(["demo-clu*", "demo-network"], stacks) == ([], ["demo-network", "demo-cluster"])
    assert split_selection(["--require-approval", "never"], stacks) == (["--require-approval", "never"], None)


def test_a_deploy_of_the_other_stacks_alone_leaves_the_fleet_running(aws, deployed, run_cdk, clustermgtd,
                                                                     tmp_path: Path) -> None:
    result = _deploy(tmp_path, SCALEDOWN, "demo-network", "demo-storage", "-c", "nag=false")
    assert result.exit_code == 0, result.output
    assert [during for _, during in run_cdk] == ["RUNNING"] and set(clustermgtd) <= {"RUNNING"}


def test_a_failed_deploy_of_the_other_stacks_never_stops_the_fleet(aws, deployed, clustermgtd, monkeypatch,
                                                                   tmp_path: Path) -> None:
    _head_node_and_jobs(aws, deployed, [])
    calls: list[list[str]] = []

    class Failed:
        returncode = 1

    monkeypatch.setattr(cli.subprocess, "run", lambda command, **kw: calls.append(command) or Failed())
    result = _deploy(tmp_path, SCALEDOWN, "--all", "-c", "nag=false", "--stop-fleet", "--yes")
    assert result.exit_code == 1, result.output
    assert [set(stacks_of(c)) for c in calls] == [{"demo-network", "demo-observability", "demo-storage"}]
    assert "STOP_REQUESTED" not in result.output and fleet_status(aws, deployed) == "RUNNING"


def _deploy(tmp_path: Path, text: str, *args: str, input: str | None = None):
    (tmp_path / "demo.yaml").write_text(text)
    return CliRunner().invoke(app, ["deploy", str(tmp_path / "demo.yaml"), *args], input=input)


def _head_node_and_jobs(session: _Session, deployed, jobs: list[str]) -> list[Stubber]:
    ec2 = Stubber(session.client("ec2"))
    ec2.add_response("describe_instances", {"Reservations": [{"Instances": [{"InstanceId": HEAD}]}]}, {"Filters": [
        {"Name": "tag:parallelcluster:cluster-name", "Values": [cluster_name(deployed)]},
        {"Name": "tag:parallelcluster:node-type", "Values": ["HeadNode"]},
        {"Name": "instance-state-name", "Values": ["running"]}]})
    ssm = Stubber(session.client("ssm"))
    ssm.add_response("send_command", {"Command": {"CommandId": COMMAND_ID}}, {
        "InstanceIds": [HEAD], "DocumentName": "AWS-RunShellScript", "Parameters": {"commands": [fleet.SQUEUE]},
        "TimeoutSeconds": 30, "Comment": ANY})
    ssm.add_client_error("get_command_invocation", "InvocationDoesNotExist", "not yet",
                         expected_params={"CommandId": COMMAND_ID, "InstanceId": HEAD})
    ssm.add_response("get_command_invocation", {"Status": "Success", "StandardOutputContent": "\n".join(jobs) + "\n"},
                     {"CommandId": COMMAND_ID, "InstanceId": HEAD})
    for stub in (ec2, ssm):
        stub.activate()
    return [ec2, ssm]


def test_a_change_that_needs_the_fleet_stopped_is_refused_with_the_commands(aws, deployed, run_cdk,
                                                                              tmp_path: Path) -> None:
    result = _deploy(tmp_path, SCALEDOWN, "--all", "-c", "nag=false")
    assert result.exit_code == REPLACEMENT_EXIT, result.output
    text = " ".join(result.output.split())
    name = cluster_name(deployed)
    assert (f"{name}: Scheduling.SlurmSettings.ScaledownIdletime changes (update policy COMPUTE_FLEET_STOP: needs the "
            "compute fleet stopped)") in text
    assert f"{name} is RUNNING" in text
    assert f"fmcluster deploy {tmp_path / 'demo.yaml'} --stop-fleet --all -c nag=false" in text
    assert (f"pcluster update-compute-fleet --cluster-name {name} --status STOP_REQUESTED --region {REGION}") in text
    assert run_cdk == [] and fleet_status(aws, deployed) == "RUNNING"  # nothing deployed, the fleet untouched


def test_stop_fleet_names_the_jobs_stops_deploys_and_starts(aws, deployed, run_cdk, clustermgtd,
                                                              tmp_path: Path) -> None:
    stubs = _head_node_and_jobs(aws, deployed, [JOB])
    result = _deploy(tmp_path, SCALEDOWN, "--all", "-c", "nag=false", "--stop-fleet", "--yes")
    assert result.exit_code == 0, result.output
    assert "1 running job end when the fleet stops" in result.output and JOB in result.output
    # the other stacks first, the fleet running; then the cluster stack alone, the fleet stopped
    [(first, before), (command, during)] = run_cdk
    assert set(stacks_of(first)) == {"demo-network", "demo-observability", "demo-storage"} and before == "RUNNING"
    assert stacks_of(command) == ["demo-cluster"] and during == "STOPPED"
    for line in (first, command):
        assert "--stop-fleet" not in line and "--yes" not in line and "--all" not in line
        assert line[line.index("-c"):][:2] == ["-c", "nag=false"]  # the user's other options, to both
    assert fleet_status(aws, deployed) == "RUNNING"  # and started again after
    # the pause waiting for squeue (fleet still RUNNING), then the stop's steps, then the start's
    assert clustermgtd == ["RUNNING", "STOP_REQUESTED", "STOPPING", "START_REQUESTED"]
    for stub in stubs:
        stub.assert_no_pending_responses()
    assert result.output.index(JOB) < result.output.index("STOP_REQUESTED")  # jobs named before the stop


def test_stop_fleet_asks_first_and_a_no_leaves_the_fleet_running(aws, deployed, run_cdk, clustermgtd,
                                                                 tmp_path: Path) -> None:
    _head_node_and_jobs(aws, deployed, [JOB])
    result = _deploy(tmp_path, SCALEDOWN, "--all", "-c", "nag=false", "--stop-fleet", input="n\n")
    assert result.exit_code == REPLACEMENT_EXIT, result.output
    assert "Stop the compute fleet of" in result.output and JOB in result.output
    assert run_cdk == [] and fleet_status(aws, deployed) == "RUNNING"
    assert set(clustermgtd) == {"RUNNING"}  # only the pause waiting for squeue: nothing was requested


def test_the_fleet_is_started_again_when_cdk_fails(aws, deployed, clustermgtd, monkeypatch, tmp_path: Path) -> None:
    _head_node_and_jobs(aws, deployed, [])

    class Failed:
        returncode = 1

    monkeypatch.setattr(cli.subprocess, "run", lambda command, **kw: Failed())
    result = _deploy(tmp_path, SCALEDOWN, "--all", "-c", "nag=false", "--stop-fleet", "--yes")
    assert result.exit_code == 1, result.output
    assert "no job is running" in result.output
    assert fleet_status(aws, deployed) == "RUNNING"


def test_a_stopped_fleet_deploys_without_touching_it(aws, deployed, run_cdk, clustermgtd, tmp_path: Path) -> None:
    name = cluster_name(deployed)
    fleet.request(aws.client("dynamodb"), name, "RUNNING", "STOPPED")
    result = _deploy(tmp_path, SCALEDOWN, "--all", "-c", "nag=false")
    assert result.exit_code == 0, result.output
    assert [during for _, during in run_cdk] == ["STOPPED"] and fleet_status(aws, deployed) == "STOPPED"


def test_a_fleet_that_never_stops_is_not_deployed_over(aws, deployed, run_cdk, monkeypatch, tmp_path: Path) -> None:
    _head_node_and_jobs(aws, deployed, [])
    ticks = iter(range(0, 10_000, 100))
    monkeypatch.setattr(fleet, "_pause", lambda _s: None)  # clustermgtd never acts
    monkeypatch.setattr(fleet, "_clock", lambda: next(ticks))
    result = _deploy(tmp_path, SCALEDOWN, "--all", "-c", "nag=false", "--stop-fleet", "--yes")
    assert result.exit_code == 1, result.output
    assert f"is STOP_REQUESTED, not STOPPED, after {fleet.WAIT_S} s" in " ".join(result.output.split())
    assert [(c, during) for c, during in run_cdk if "demo-cluster" in stacks_of(c)] == []  # the cluster: never


def test_turning_accounting_on_needs_only_the_fleet_stopped(aws, deployed, run_cdk, tmp_path: Path) -> None:
    """SlurmSettings.Database needs the fleet stopped; the head node's bundle changes with accounting, which only
    changes its pointer and its OnNodeUpdated digest (SUPPORTED), never a key ParallelCluster refuses: without
    --stop-fleet the deploy is refused for the fleet alone."""
    result = _deploy(tmp_path, ACCOUNTING, "--all", "-c", "nag=false")
    assert result.exit_code == REPLACEMENT_EXIT, result.output
    text = " ".join(result.output.split())
    name = cluster_name(deployed)
    assert (f"{name}: Scheduling.SlurmSettings.Database added (update policy COMPUTE_FLEET_STOP: needs the compute "
            "fleet stopped)") in text
    assert "UNSUPPORTED" not in text and "CustomActions" not in text
    assert f"fmcluster deploy {tmp_path / 'demo.yaml'} --stop-fleet --all -c nag=false" in text
    assert run_cdk == [] and fleet_status(aws, deployed) == "RUNNING"


def test_turning_accounting_on_deploys_with_the_fleet_stopped(aws, deployed, run_cdk, clustermgtd,
                                                             tmp_path: Path) -> None:
    stubs = _head_node_and_jobs(aws, deployed, [])
    result = _deploy(tmp_path, ACCOUNTING, "--all", "-c", "nag=false", "--stop-fleet", "--yes")
    assert result.exit_code == 0, result.output
    # the accounting database (tens of minutes to create) with the fleet running; only the cluster with it stopped
    assert [(set(stacks_of(c)), during) for c, during in run_cdk] == [
        ({"demo-network", "demo-observability", "demo-storage", "demo-accounting"}, "RUNNING"),
        ({"demo-cluster"}, "STOPPED")]
    assert fleet_status(aws, deployed) == "RUNNING"  # and started again after
    for stub in stubs:
        stub.assert_no_pending_responses()


def test_an_update_parallelcluster_applies_running_deploys(aws, deployed, run_cdk, tmp_path: Path) -> None:
    result = _deploy(tmp_path, PC.replace("count: 2", "count: 4"), "--all", "-c", "nag=false")
    assert result.exit_code == 0, result.output
    assert [during for _, during in run_cdk] == ["RUNNING"]


def test_no_answer_is_a_no(aws, deployed, run_cdk, clustermgtd, tmp_path: Path) -> None:
    """Without a terminal (a pipeline, end of input) --stop-fleet without --yes stops nothing."""
    _head_node_and_jobs(aws, deployed, [JOB])
    result = _deploy(tmp_path, SCALEDOWN, "--all", "-c", "nag=false", "--stop-fleet", input="")
    assert result.exit_code == REPLACEMENT_EXIT, result.output
    assert "--yes stops it without asking" in result.output
    assert run_cdk == [] and fleet_status(aws, deployed) == "RUNNING"
