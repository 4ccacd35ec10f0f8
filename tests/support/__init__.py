"""What the tests share: paths, the offline guard, the synthesized-app record, projects from text or
dicts, ParallelCluster configurations with placeholder IDs (fixtures live in conftest).

Beside it: :mod:`support.sandbox` (a fake node that runs rendered bootstrap bundles) and
:mod:`support.promql` (metric names out of PromQL expressions)."""

from __future__ import annotations

import copy
import gzip
import json
import os
import socket
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fmcluster import config
from fmcluster.contracts import MountContract, StorageContract
from fmcluster.generate import parallelcluster as generate
from fmcluster.generate import placeholders
from fmcluster.plan import make_plan

ROOT = Path(__file__).resolve().parents[2]
PROJECT_FILES = sorted((ROOT / "projects").glob("*.yaml"))
EXAMPLE_FILES = sorted((ROOT / "examples").glob("*.yaml"))
ALL_FILES = PROJECT_FILES + EXAMPLE_FILES
PROJECTS = {(loaded := config.parse(p.read_text(), p)).project.name: loaded.project for p in ALL_FILES}
"""Every project and example, by name."""
SELF_MANAGED = sorted(name for name, p in PROJECTS.items() if p.orchestrator.type == "none")
"""Projects whose nodes come from fmcluster's own launch templates (ParallelCluster makes its own)."""

# Fake credentials and a region: nothing may find real ones, and boto3 never needs to look.
for key, value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}.items():
    os.environ[key] = value

# jsii must run on the project's Node 22, not the machine's end-of-life Node 20.
_node_bin = ROOT / "node_modules" / ".bin"
if _node_bin.is_dir():
    os.environ["PATH"] = f"{_node_bin}{os.pathsep}{os.environ['PATH']}"


class NetworkBlocked(RuntimeError):
    """A test tried to reach something other than this machine."""


BLOCKED: list[str] = []
"""Every blocked attempt, so a test that swallows the exception still fails (see ``_fail_on_network``)."""


_real_connect = socket.socket.connect
_real_create_connection = socket.create_connection
_real_getaddrinfo = socket.getaddrinfo


def _is_local(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX paths
        return True
    host = str(address[0]) if isinstance(address, tuple) else ""
    return host in ("localhost", "::1") or host.startswith("127.")


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _is_local(address):
        BLOCKED.append(f"connect {address!r}")
        raise NetworkBlocked(f"test tried to connect to {address!r}; tests must not touch AWS or the internet")
    return _real_connect(self, address)


def _guarded_create_connection(address: tuple, *args: object, **kwargs: object) -> socket.socket:
    if not _is_local(address):
        BLOCKED.append(f"connect {address!r}")
        raise NetworkBlocked(f"test tried to connect to {address!r}; tests must not touch AWS or the internet")
    return _real_create_connection(address, *args, **kwargs)  # type: ignore[arg-type]


def _guarded_getaddrinfo(host: object, *args: object, **kwargs: object) -> list:
    if host is not None and not _is_local((host,)):
        BLOCKED.append(f"resolve {host!r}")
        raise NetworkBlocked(f"test tried to resolve {host!r}; tests must not touch AWS or the internet")
    return _real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]


@dataclass
class Synthesized:
    """Every project and example, synthesized once: templates by stack name, plus cdk-nag's report."""

    outdir: Path
    templates: dict[str, dict]
    validation_report: dict
    error: str | None

    def template(self, stack: str) -> dict:
        return self.templates[stack]

    def assertions(self, stack: str):
        """The stack's template for ``aws_cdk.assertions``."""
        from aws_cdk.assertions import (
            Template,  # jsii starts only after PATH holds the project's Node 22
        )

        return Template.from_json(self.templates[stack])

    def launch_templates(self, project: str) -> dict[str, dict]:
        """A project's launch-template data by launch-template name."""
        resources = self.templates[f"{project}-cluster"]["Resources"]
        return {r["Properties"]["LaunchTemplateName"]: r["Properties"]["LaunchTemplateData"]
                for r in resources.values() if r["Type"] == "AWS::EC2::LaunchTemplate"}

    def staged_assets(self, stack: str) -> dict[str, list[str]]:
        """The stack's assets whose source is a command (the staged monitoring artefacts, fmcluster.stacks.staging):
        the asset manifest's key (their sha256) -> the command."""
        import json

        manifest = json.loads((self.outdir / f"{stack}.assets.json").read_text())
        return {key: entry["source"]["executable"] for key, entry in manifest["files"].items()
                if "executable" in entry["source"]}




BASE = """\
name: demo
availability_zone_id: use1-az6
compute_groups:
  - name: train
    instance_type: p5.48xlarge
    count: 2
"""


# A PCS project with managed accounting on (the guard and the plan say what PCS keeps, and that it stays on).
PCS_ACCOUNTING = """
name: demo
availability_zone_id: use1-az6
os: ubuntu-24.04
compute_groups:
  - name: gpu
    instance_type: p5.48xlarge
    count: 2
orchestrator:
  type: pcs
  pcs: {ami_id: ami-0123456789abcdef0}
  accounting: {enabled: true}
storage:
  fsx: {storage_capacity_gib: 1200, throughput_per_tib: 500}
"""


def project_text(extra: str = "", base: str = BASE) -> str:
    return base + textwrap.dedent(extra)


def plan_of(text: str):
    """The plan of a project file's text."""
    return make_plan(config.parse(text).project)


# --- ParallelCluster projects ------------------------------------------------------------------

PC_BASE: dict[str, Any] = {
    "name": "pc",
    "availability_zone_id": "use1-az6",
    "compute_groups": [{"name": "train", "instance_type": "p5.48xlarge", "count": 4}],
    "orchestrator": {"type": "parallelcluster"},
}


def project_dict(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(PC_BASE)
    data.update(changes)
    return data


def load(data: dict[str, Any] | str, file: str = "pc.yaml") -> config.LoadedProject:
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    return config.parse(text, Path(file))


def generated(data: Any, *, fsx: bool = True, metrics: bool = False,
              region: str | None = "us-east-1") -> dict[str, Any]:
    """The ParallelCluster configuration of a project, with placeholder contracts (the accounting database's when
    the project's accounting keeps its records in one)."""
    loaded = data if isinstance(data, config.LoadedProject) else load(data)
    plan = make_plan(loaded.project)
    accounting = placeholders.accounting(plan.project) if plan.cluster.accounting_store == "database" else None
    storage = placeholders.storage(plan.storage)
    if fsx and storage.fsx is None:
        storage = StorageContract(storage.bucket_name, storage.bucket_arn,
                                  MountContract("fs-00000000000000000", "fs.example", "placeholder", "/fsx", False), None)
    if not fsx:
        storage = StorageContract(storage.bucket_name, storage.bucket_arn, None, None)
    return generate.cluster_config(
        plan.cluster, network=placeholders.NETWORK, storage=storage,
        bootstrap=placeholders.bootstrap(plan.project), node_policy_arns=[placeholders.node_policy_arn(plan.project)],
        region=region, accounting=accounting,
    )


def moto_instance_types() -> dict[str, dict[str, Any]]:
    """moto 5.2.5's bundled DescribeInstanceTypes records (a snapshot of real AWS answers)."""
    import moto

    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    with gzip.open(path) as fh:
        return json.load(fh)


def assert_nag_clean(report: dict[str, Any], error: object) -> None:
    """cdk-nag's AwsSolutions report of one synthesis: no violation, every acknowledgement with a reason, and the
    synthesis raised nothing (``error``). A bare ``Stack`` also gets CloudFormation Validate's report: not ours."""
    reports = [r for r in report.get("pluginReports", []) if r["pluginName"] == "AwsSolutions"]
    assert reports, error
    violations = [f"{v['ruleName']}: {[c['constructPath'] for c in v['violatingConstructs']]}"
                  for v in reports[0]["violations"]]
    assert not violations and reports[0]["conclusion"] == "success", "\n".join(violations)
    assert error is None
    for suppressed in reports[0]["suppressedViolations"]:
        assert len(suppressed.get("reason", "")) > 30, suppressed["ruleName"]


def synth_with_nag(app: Any, outdir: Path) -> tuple[str | None, dict[str, Any]]:
    """Synthesize ``app`` (writing to ``outdir``) with cdk-nag's AwsSolutions checks, as the real app does: the error
    a failed synthesis raised (None when it passed) and the validation report (empty when none was written)."""
    from fmcluster.stacks.app import add_nag  # CDK loads only in the tests that synthesize

    add_nag(app, verbose=True)
    try:
        app.synth()
        error = None
    except RuntimeError as exc:
        error = str(exc)
    report = outdir / "validation-report.json"
    return error, (json.loads(report.read_text()) if report.exists() else {})


AWS_ENVIRONMENT = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
                   "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY",
                   "http_proxy", "NO_PROXY", "no_proxy")
"""What a developer's shell may carry that would change how a command finds its account, Region or endpoint."""


def clean_aws_home(home: Path, monkeypatch: Any, config: str) -> Path:
    """``home`` as a user's AWS configuration holding only ``config`` (no credentials, no SSO token cache, no
    instance metadata), with nothing of the caller's AWS environment left; returns ``home``."""
    for name in AWS_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    (home / "config").write_text(config)
    (home / "credentials").write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return home


def jsii_package_cache() -> Path:
    """The caller's jsii package cache: where jsii's runtime keeps each library (aws-cdk-lib: about 200 MB) extracted,
    as it finds it (``JSII_RUNTIME_PACKAGE_CACHE_ROOT``, else ``defaultCacheRoot`` in the runtime: on Linux
    ``~/.cache/aws/jsii/package-cache``, on macOS ``~/Library/Caches/com.amazonaws.jsii/package-cache``). A test
    process with a HOME of its own (the rehearsal's CLI, the pinned-Node check) is given it, or every app it runs first
    extracts aws-cdk-lib again: about 12 s of CPU each, a cost a user pays once. What the app builds is the same; the
    suite's in-process synthesis fills the same cache."""
    given = os.environ.get("JSII_RUNTIME_PACKAGE_CACHE_ROOT")
    if given:
        return Path(given)
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "com.amazonaws.jsii" / "package-cache"
    return Path.home() / ".cache" / "aws" / "jsii" / "package-cache"


def team_account(cluster) -> str | None:
    """The ``--account`` acceptance and the first job need on a project whose teams Slurm enforces (its first
    team); None elsewhere."""
    from fmcluster.generate import slurmteams
    return cluster.teams[0].name if slurmteams.applies(cluster) else None


def group_nodes(project, cluster, group) -> tuple[int, str | None]:
    """The nodes a group's jobs use and the account they run as, from the project file: on a project whose teams
    Slurm enforces, the first team's (the fixture's --account) guaranteed + borrow nodes of the group."""
    if team_account(cluster) is None:
        return group.count, None
    share = project.teams[0].instances[group.name]
    return min(group.count, share.guaranteed + share.borrow), project.teams[0].name
