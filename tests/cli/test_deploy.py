"""`fmcluster deploy PROJECT [cdk options]`: validate, guard against the deployed templates, then the real CDK CLI.

Here with botocore's Stubber for GetTemplate and the CDK CLI's command line captured; the deploy rehearsal
(tests/rehearsal) runs it for real against moto's server on loopback."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber
from fmcluster.stacks.app import synthesize
from support import BASE
from typer.testing import CliRunner

from fmcluster.cli import REPLACEMENT_EXIT, app
from fmcluster.cli import deploy as cli
from fmcluster.contracts import STACKS

OLD = BASE + "region: us-east-1\nstorage:\n  checkpoint: {parameters: 70e9}\n"
SMALLER_MODEL = OLD.replace("70e9", "13e9")  # the planner's FSx shrinks: a new, empty file system
MORE_NODES = OLD.replace("count: 2", "count: 4")
ACCOUNTING = OLD + "orchestrator: {type: parallelcluster, accounting: {enabled: true}}\n"
QUALIFIER_KEY = "@aws-cdk/core:bootstrapQualifier"
EVERY_STACK = sorted(f"demo-{role}" for role in STACKS)
"""What the guard reads: every stack the project can have, deployed or not (a stack the project no longer builds
stays deployed)."""


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("deployed")
    (folder / "demo.yaml").write_text(OLD)
    return synthesize(folder / "demo.yaml", folder / "out")


@pytest.fixture
def run_cdk(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The CDK CLI's command lines, captured instead of run."""
    calls: list[list[str]] = []

    class Done:
        returncode = 0

    monkeypatch.setattr(cli.subprocess, "run", lambda command, **kw: calls.append(command) or Done())
    return calls


@pytest.fixture
def run_cdk_reading(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], dict, dict]]:
    """The CDK CLI's command lines, each with what its ``--app`` assembly held when cdk ran (templates by stack,
    the manifest's termination protection by stack)."""
    calls: list[tuple[list[str], dict, dict]] = []

    class Done:
        returncode = 0

    def run(command: list[str], **kw) -> Done:
        folder = Path(command[command.index("--app") + 1])
        manifest = json.loads((folder / "manifest.json").read_text())
        stacks = {a.get("displayName", n): a for n, a in manifest["artifacts"].items()
                  if a["type"] == "aws:cloudformation:stack"}
        templates = {n: json.loads((folder / a["properties"]["templateFile"]).read_text()) for n, a in stacks.items()}
        calls.append((command, templates, {n: a["properties"].get("terminationProtection", False)
                                           for n, a in stacks.items()}))
        return Done()

    monkeypatch.setattr(cli.subprocess, "run", run)
    return calls


class _Session:
    """The session's shape (``client``, ``errors``) around one stubbed client."""

    def __init__(self, client) -> None:
        self._client = client

    def client(self, name: str):
        assert name == "cloudformation"
        return self._client

    def errors(self):
        return contextlib.nullcontext()


def _stub(monkeypatch: pytest.MonkeyPatch, templates: dict[str, dict], names: list[str]) -> Stubber:
    client = boto3.client("cloudformation", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(client)
    for name in names:
        params = {"StackName": name, "TemplateStage": "Original"}
        if name in templates:
            stub.add_response("get_template", {"TemplateBody": json.dumps(templates[name])}, params)
        else:
            stub.add_client_error("get_template", "ValidationError", f"Stack with id {name} does not exist",
                                  expected_params=params)
    stub.activate()
    monkeypatch.setattr(cli, "aws", lambda loaded: _Session(client))
    return stub


def _deploy(tmp_path: Path, text: str, *args: str):
    (tmp_path / "demo.yaml").write_text(text)
    return CliRunner().invoke(app, ["deploy", str(tmp_path / "demo.yaml"), *args])


def test_a_smaller_model_is_refused_before_cdk_runs(deployed, run_cdk, monkeypatch, tmp_path: Path) -> None:
    stub = _stub(monkeypatch, deployed, EVERY_STACK)
    result = _deploy(tmp_path, SMALLER_MODEL, "--all", "--require-approval", "never")
    assert result.exit_code == REPLACEMENT_EXIT, result.output
    assert "demo-storage/FileSystem (AWS::FSx::FileSystem): StorageCapacity shrinks" in result.output
    assert run_cdk == []  # cdk never ran
    stub.assert_no_pending_responses()


def test_allow_replace_deploys_with_the_same_arguments(deployed, run_cdk, monkeypatch, tmp_path: Path) -> None:
    _stub(monkeypatch, deployed, EVERY_STACK)
    result = _deploy(tmp_path, SMALLER_MODEL, "--allow-replace", "--all", "--require-approval", "never", "-c", "x=y")
    assert result.exit_code == 0, result.output
    [command] = run_cdk
    assert command[1:3] == ["deploy", "--app"]  # the assembly the guard judged, not a second synthesis
    assert command[4:] == ["--all", "--require-approval", "never", "-c", "x=y"]
    assert Path(command[0]).name == "cdk"


def test_an_in_place_change_deploys(deployed, run_cdk, monkeypatch, tmp_path: Path) -> None:
    _stub(monkeypatch, deployed, EVERY_STACK)
    result = _deploy(tmp_path, MORE_NODES, "--all")
    assert result.exit_code == 0, result.output
    assert "no file system, association, bucket or workspace would be replaced" in result.output
    assert len(run_cdk) == 1


def test_a_first_deploy_compares_with_nothing(deployed, run_cdk, monkeypatch, tmp_path: Path) -> None:
    _stub(monkeypatch, {}, EVERY_STACK)
    result = _deploy(tmp_path, OLD, "--all")
    assert result.exit_code == 0 and "nothing to compare" in result.output and len(run_cdk) == 1


def test_a_bad_project_file_exits_2_without_aws(run_cdk, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cli, "aws", lambda loaded: pytest.fail("no AWS call for a bad file"))
    result = _deploy(tmp_path, BASE.replace("count: 2", "count: 0"), "--all")
    assert result.exit_code == 2 and "compute_groups[0].count" in result.output and run_cdk == []


def test_cdk_deploys_the_one_assembly_the_guard_judged_with_the_users_context(
        deployed, run_cdk_reading, monkeypatch, tmp_path: Path) -> None:
    """One synthesis: `-c` values reach the templates the guard judges and the assembly cdk deploys (`--app`), which
    is removed afterwards; cdk synthesizes nothing of its own."""
    _stub(monkeypatch, deployed, EVERY_STACK)
    judged: list[dict] = []
    real_compare = cli.guard.compare
    monkeypatch.setattr(cli.guard, "compare", lambda old, new, *a: judged.append(new) or real_compare(old, new, *a))
    result = _deploy(tmp_path, MORE_NODES, "--all", "-c", "protect=false", "--context",
                     f"{QUALIFIER_KEY}=fmtest1", "--require-approval", "never")
    assert result.exit_code == 0, result.output
    [(command, templates, protected)] = run_cdk_reading
    [new] = judged
    assert templates == new  # what cdk deploys is what the guard judged, byte for byte as JSON
    for template in templates.values():  # the qualifier names the bootstrap stack the templates check
        assert template["Parameters"]["BootstrapVersion"]["Default"] == "/cdk-bootstrap/fmtest1/version"
    assert protected["demo-storage"] is False  # -c protect=false: the manifest cdk deploy reads
    assert not Path(command[command.index("--app") + 1]).exists()  # a temporary folder, gone after cdk


def test_protection_is_on_unless_the_context_turns_it_off(deployed, run_cdk_reading, monkeypatch,
                                                          tmp_path: Path) -> None:
    _stub(monkeypatch, deployed, EVERY_STACK)
    out = tmp_path / "kept.out"
    result = _deploy(tmp_path, MORE_NODES, "--all", "-o", str(out), "-c", "nag=false")
    assert result.exit_code == 0, result.output
    [(command, templates, protected)] = run_cdk_reading
    assert command[command.index("--app") + 1] == str(out.resolve()) and "-o" not in command
    assert protected["demo-storage"] is True
    assert (out / "manifest.json").is_file()  # -o keeps the assembly where the user asked


@pytest.mark.parametrize("args", [["-c", "project=other"], ["--app", "cdk.out"], ["--context=project=x"]])
def test_what_fmcluster_gives_cdk_itself_is_refused(run_cdk, monkeypatch, tmp_path: Path, args: list[str]) -> None:
    monkeypatch.setattr(cli, "aws", lambda loaded: pytest.fail("no AWS call for a bad option"))
    result = _deploy(tmp_path, OLD, "--all", *args)
    assert result.exit_code == 2 and run_cdk == [], result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_the_guard_synthesizes_with_the_context_cdk_deploy_gets() -> None:
    """`-c`/`--context` values reach the app that cdk deploy runs, so the guard's synthesis takes them too."""
    from fmcluster.cli.deploy import cdk_context

    args = ["--all", "-c", "protect=false", "--context", "@aws-cdk/core:newStyleStackSynthesis=true",
            "--context=nag=false", "--require-approval", "never", "-c", "no-equals-sign"]
    assert cdk_context(args) == {"protect": "false", "@aws-cdk/core:newStyleStackSynthesis": "true", "nag": "false"}


def test_turning_accounting_off_is_refused_until_the_database_stack_is_deleted(run_cdk, monkeypatch,
                                                                               tmp_path: Path) -> None:
    """`cdk deploy` leaves NAME-accounting deployed, and its imports would make the network's update fail."""
    (tmp_path / "before").mkdir()
    (tmp_path / "before" / "demo.yaml").write_text(ACCOUNTING)
    before = synthesize(tmp_path / "before" / "demo.yaml", tmp_path / "before" / "out")
    assert "demo-accounting" in before
    stub = _stub(monkeypatch, before, EVERY_STACK)
    result = _deploy(tmp_path, OLD + "orchestrator: {type: parallelcluster}\n",
                     "--all")
    assert result.exit_code == REPLACEMENT_EXIT, result.output
    text = " ".join(result.output.split())
    assert "demo-accounting is deployed but the project no longer builds it" in text
    assert "demo-DatabaseSubnet1Id" in text and "Delete demo-accounting first" in text
    assert run_cdk == []
    stub.assert_no_pending_responses()


def test_the_arguments_are_split_between_the_synthesis_and_cdk_deploy(tmp_path: Path) -> None:
    context, flags, outdir, rest = cli.split_args(
        ["--all", "-c", "nag=false", "--output=out.d", "--no-version-reporting", "--require-approval", "never"])
    assert context == {"nag": "false"} and outdir == Path("out.d")
    assert flags == {"version-reporting": False}
    assert rest == ["--all", "-c", "nag=false", "--no-version-reporting", "--require-approval", "never"]
    from fmcluster.stacks.assembly import cli_context

    # what the CDK CLI would put in the app's context: no version reporting, path and asset metadata on
    assert cli_context(flags) == {"aws:cdk:enable-path-metadata": True, "aws:cdk:enable-asset-metadata": True,
                                  "aws:cdk:disable-version-reporting": True, "aws:cdk:bundling-stacks": ["**"]}


def test_an_output_folder_that_is_not_an_assembly_is_left_alone(run_cdk, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cli, "aws", lambda loaded: pytest.fail("no AWS call for a bad option"))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    result = _deploy(tmp_path, OLD, "--all", "-o", str(tmp_path / "notes"))
    assert result.exit_code == 2 and "holds no cloud assembly" in result.output, result.output
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine" and run_cdk == []


def test_jsii_and_cdk_get_the_pinned_node_even_when_only_the_virtual_environment_is_on_path(tmp_path) -> None:
    """jsii starts Node when aws_cdk is imported: with only .venv/bin on PATH the machine's Node 20 printed a page
    of end-of-life lines on every deploy. Importing fmcluster.stacks puts node_modules' Node 22 first."""
    import os
    import subprocess
    import sys

    from support import ROOT

    if not (ROOT / "node_modules" / ".bin" / "node").exists():
        raise AssertionError("node_modules/.bin/node missing: run `npm ci` (make setup)")
    code = ("import os, shutil; import fmcluster.stacks, aws_cdk; "
            "print(shutil.which('node')); print(os.environ['PATH'].split(os.pathsep)[0])")
    from support import jsii_package_cache

    # a HOME of its own, but the suite's jsii package cache (aws-cdk-lib unpacked; an empty one unpacks it again)
    env = {"PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path),
           "JSII_RUNTIME_PACKAGE_CACHE_ROOT": str(jsii_package_cache())}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "end-of-life" not in done.stderr and "end-of-life" not in done.stdout
    assert done.stdout.splitlines()[0] == str(ROOT / "node_modules" / ".bin" / "node")
