"""The deploy rehearsal (`make rehearse`, part of `make test`): the real CDK CLI against moto on loopback.

For the default project (ParallelCluster) with an accounting project beside it, the first example of each other
orchestrator and every PCS and HyperPod-on-EKS example, together in one moto server per account and Region (one
today: :func:`rehearsals`; ``moto_patched.py``: moto 5.2.5 with its gaps closed, each explained there):

    cdk synth -c project=FILE,... -c nag=false                the app, run by the CLI, into an assembly (once
                                                              per session, every rehearsed project)
    cdk bootstrap --app ASSEMBLY aws://ACCOUNT/REGION
    cdk deploy --app ASSEMBLY --all --require-approval never  termination protection on, as a user deploys
    fmcluster status FILE -o json                             each stack's state (default, accounting)
    fmcluster destroy FILE --yes -o json                      lifts it, deletes, lists what it kept
    fmcluster status FILE -o json                             each stack gone, or the network it kept

and checks: every stack reaches CREATE_COMPLETE; the bootstrap bundle asset is in the CDK staging
bucket under its hash, byte for byte; every export and every cross-stack reference resolves to the
producer's value (every Fn::ImportValue names a deployed export); for a project whose stacks all
execute, a day two with `fmcluster deploy` (``day_two``: growth and an in-place change deploy as
updates, a shrink is refused, the network cannot be deleted under the cluster; every other project's resources stay
as they were); `cdk destroy` of a protected stack is refused (what README once said to run); each `fmcluster destroy`
leaves the other projects' stacks; after them the retained resources remain and are what each listed, the others are
gone, and no stack is left but a network it said it kept (`fmcluster status` shows each project's
stacks CREATE_COMPLETE, the prepared ones REVIEW_IN_PROGRESS, after deploy; NOT_DEPLOYED but that network after
destroy: for the default and the accounting project); for the accounting project (its Aurora
database, subnet group, parameter group and security group retained in the network's VPC), that network is kept, and
`fmcluster destroy --delete-retained` then deletes the database and what it used, and the network, and leaves
nothing but what it said it left (the final snapshot, the key and secret pending deletion); no process
of the rehearsal (CLI, jsii, the app, moto) touched anything but loopback.

What it is not: moto's CloudFormation creates only the resource types it models and skips the rest
(listed in MOTO_SKIPS, each checked against moto's own model map); a stack that needs AWS itself is
not executed (NOT_OFFLINE) -- its assets are published and its change set created
(``--method=prepare-change-set``), no more. Neither says AWS would accept a property value: the
deployability tests do that.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support import EXAMPLE_FILES, PROJECT_FILES, ROOT, jsii_package_cache

from fmcluster import config
from fmcluster.contracts import STACKS
from fmcluster.plan import make_plan

HERE = Path(__file__).resolve().parent
CDK = ROOT / "node_modules" / ".bin" / "cdk"
DEFAULT_ACCOUNT = "123456789012"  # moto's
DEFAULT_REGION = "us-east-1"

MOTO_SKIPS = {
    "AWS::CDK::Metadata": "CDK's own usage record; no service behind it",
    "AWS::S3::BucketPolicy": "the buckets exist, their policies are not applied",
    "AWS::EC2::SecurityGroupEgress": "egress rules (ingress rules are modelled)",
    "AWS::EC2::PlacementGroup": "launch templates name a group that moto never made",
    "AWS::FSx::FileSystem": "no file system record: its outputs stay unresolved",
    "AWS::FSx::DataRepositoryAssociation": "no association",
    "AWS::APS::Workspace": "no Prometheus workspace: its outputs stay unresolved",
    "AWS::APS::RuleGroupsNamespace": "no alert rules",
    "AWS::Grafana::Workspace": "no Grafana workspace",
    "AWS::SNS::TopicPolicy": "the topic exists, its policy is not applied",
    "AWS::SageMaker::Cluster": "no HyperPod cluster",
}
"""Resource types moto 5.2.5's CloudFormation skips: the stack reaches CREATE_COMPLETE without them.
A rehearsal that meets a type moto skips and this list lacks fails, so the list stays the truth."""

NOT_OFFLINE = {
    "AWS::CloudFormation::Stack": "a nested stack: ParallelCluster's provider template lives in AWS's public "
                                  "bucket (REGION-aws-parallelcluster), which moto cannot serve offline",
    "Custom::": "a custom resource: its provider is a Lambda function (ParallelCluster's drives the "
                "ParallelCluster API in AWS); moto would run it in Docker",
    "AWS::PCS::": "AWS Parallel Computing Service: moto 5.2.5 has no PCS (FACTS.md section 5), so a stack it "
                  "completed would hold no cluster, node groups or queues and prove nothing",
}
"""A stack holding one of these is not executed: its assets are published and its change set created."""


EVERY_EXAMPLE_OF = ("pcs", "hyperpod-eks")
"""Orchestrators whose every example is rehearsed: moto has no PCS, so the published assets and a prepared change set
are the only proof offline that each PCS example's cluster stack deploys (one on demand, one on a capacity block).
Their examples share the default project's rehearsal (:func:`rehearsals`; :data:`CHANGE_SET_ONLY`): none of them
executes a cluster stack, and the suite stays within its time. HyperPod on EKS likewise: its
cluster stack installs the HyperPod Helm chart through CDK's kubectl provider (a custom resource) and moto has no
EKS add-ons or HyperPod, so each example's assets (the chart, the kubectl layer, the lifecycle bundles) are published
and its change set prepared (one with task governance and teams, one on a training plan)."""


DEFAULT_PROJECT = ROOT / "projects" / "default.yaml"


def accounting_database(path: Path) -> bool:
    """Whether the project keeps its Slurm accounting records in a database of its own (``NAME-accounting``)."""
    return make_plan(config.parse(path.read_text(), path).project).cluster.accounting_store == "database"


def accounting_beside_default() -> Path | None:
    """The accounting project rehearsed beside the default one: the first example (by file name) of the default's
    orchestrator whose accounting lives in ``NAME-accounting``. It shares the default's moto server and assembly (one
    `cdk synth -c project=default,ACCOUNTING`): its network (with the database subnets), storage, observability and
    accounting stacks execute; its cluster stack, like the default's, is prepared, not executed (NOT_OFFLINE)."""
    default_kind = config.parse(DEFAULT_PROJECT.read_text(), DEFAULT_PROJECT).project.orchestrator.type
    return next((p for p in EXAMPLE_FILES if config.parse(p.read_text(), p).project.orchestrator.type == default_kind
                 and accounting_database(p)), None)


def rehearsed_files() -> list[Path]:
    """The default project and, per other orchestrator type, the first example (by file name) that uses it; every
    example of the orchestrators in :data:`EVERY_EXAMPLE_OF`."""
    return [p for group in rehearsals() for p in group]


CHANGE_SET_ONLY = ("parallelcluster", "hyperpod", "pcs", "hyperpod-eks")
"""Orchestrators whose cluster stack needs AWS itself (:data:`NOT_OFFLINE`: ParallelCluster's nested provider stack,
HyperPod's lifecycle scripts uploaded by CDK's bucket-deployment Lambda, PCS, which moto lacks, HyperPod on EKS's Helm
chart through CDK's kubectl provider): their cluster stacks are prepared, not executed. Every other project's stacks
all execute, and it gets a day two (:func:`day_two`)."""


def environment(path: Path) -> tuple[str, str]:
    """The account and Region a project deploys to (moto's account and us-east-1 where it names none)."""
    project = config.parse(path.read_text(), path).project
    return project.account or DEFAULT_ACCOUNT, project.region or DEFAULT_REGION


def rehearsals() -> list[tuple[Path, ...]]:
    """The rehearsals to run. The default project rehearses its orchestrator (ParallelCluster): a first example of the
    same kind would repeat it (the same stacks, the cluster stack prepared, not executed) and cost the suite a
    rehearsal's time; the one that adds something, an accounting project, is rehearsed beside it
    (:func:`accounting_beside_default`). Per other orchestrator, its first example (every example of
    :data:`EVERY_EXAMPLE_OF`).

    All of them in one rehearsal per account and Region (one moto server, one `cdk bootstrap`, one `cdk deploy` of
    the stacks that execute and one of the prepared ones): every stack, export and resource name carries its
    project's name, so no project reads or changes another's, and the rehearsal checks it where one could: a day two
    (:func:`day_two`) of a project whose stacks all execute must leave every other project's resources as they were
    (their physical IDs), and each `fmcluster destroy` deletes its own project's stacks only (the others' are still
    there for theirs). A rehearsal of its own cost the executing project (p4d-on-demand) a moto start, a bootstrap, a
    `cdk deploy` and a refused `cdk destroy`: about 12 s of CPU, for nothing the shared one does not prove."""
    default_kind = config.parse(DEFAULT_PROJECT.read_text(), DEFAULT_PROJECT).project.orchestrator.type
    chosen: dict[str, list[Path]] = {}
    for path in EXAMPLE_FILES:
        kind = config.parse(path.read_text(), path).project.orchestrator.type
        if kind == default_kind and kind not in EVERY_EXAMPLE_OF:
            continue
        if kind not in chosen or kind in EVERY_EXAMPLE_OF:
            chosen.setdefault(kind, []).append(path)
    beside = accounting_beside_default()
    files = [DEFAULT_PROJECT, *([beside] if beside else []), *(p for kind in sorted(chosen) for p in chosen[kind])]
    by_environment: dict[tuple[str, str], list[Path]] = {}
    for path in files:
        by_environment.setdefault(environment(path), []).append(path)
    return [tuple(group) for group in by_environment.values()]


@dataclass
class Rehearsal:
    """One project's rehearsal: its moto server, its assembly, what the CLI said."""

    file: Path
    work: Path
    account: str
    region: str
    port: int = 0
    together: tuple[Path, ...] = ()
    """Projects synthesized and deployed beside ``file`` in the same moto (:data:`EVERY_EXAMPLE_OF`)."""
    moto: subprocess.Popen | None = None
    node_cache: Path | None = None
    """Node's compile cache (``NODE_COMPILE_CACHE``) for this worker's CDK CLI starts: V8's compiled code of the CLI's
    bundle, kept on disk, so each start compiles less (about 0.4 s of CPU of 2). What the CLI does is the same."""
    outputs: list[str] = field(default_factory=list)
    clients: dict = field(default_factory=dict)

    @property
    def assembly(self) -> Path:
        return self.work / "cdk.out"

    @property
    def net_log(self) -> Path:
        return self.work / "network.log"

    @property
    def moto_log(self) -> Path:
        return self.work / "moto.log"

    def env(self) -> dict[str, str]:
        """Only what the CLI needs: dummy credentials, the moto endpoint, no telemetry, notices or version
        checks, and the network guards (no proxy, profile or real credential leaks in from the caller); the
        caller's jsii package cache (:func:`jsii_package_cache`)."""
        home = self.work / "home"
        home.mkdir(exist_ok=True)
        return {
            "PATH": os.pathsep.join([str(ROOT / "node_modules" / ".bin"), str(Path(sys.executable).parent),
                                     "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": str(home), "CDK_HOME": str(home / ".cdk"), "LANG": "C.UTF-8",
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": self.region, "AWS_DEFAULT_REGION": self.region,
            "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.port}",
            # The CLI writes TemplateURL from this endpoint; moto reads bucket and key out of a
            # path-style URL only when its host is "localhost" (moto.cloudformation.utils.get_stack_from_s3_url).
            "AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION": f"http://localhost:{self.port}",
            "MOTO_ACCOUNT_ID": self.account,
            "CDK_DISABLE_CLI_TELEMETRY": "true", "CDK_DISABLE_VERSION_CHECK": "true",
            "CI": "true", "NO_COLOR": "1", "FORCE_COLOR": "0",
            "NODE_OPTIONS": f"--require {HERE / 'netguard' / 'guard.js'}",
            "PYTHONPATH": str(HERE / "netguard"), "FMC_NET_LOG": str(self.net_log),
            "JSII_RUNTIME_PACKAGE_CACHE_ROOT": str(jsii_package_cache()),
        } | ({"NODE_COMPILE_CACHE": str(self.node_cache)} if self.node_cache else {})

    def start_moto(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        log = self.moto_log.open("w")
        self.moto = subprocess.Popen([sys.executable, str(HERE / "moto_patched.py"), "-H", "127.0.0.1",
                                      "-p", str(self.port)], env=self.env(), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/moto-api/", timeout=2)
                return
            except OSError:
                if self.moto.poll() is not None:
                    break
                time.sleep(0.2)
        pytest.fail(f"moto did not start:\n{self.moto_log.read_text()[-3000:]}", pytrace=False)

    def stop_moto(self) -> None:
        if self.moto is not None and self.moto.poll() is None:
            self.moto.terminate()
            self.moto.wait(timeout=30)

    def cdk(self, *args: str, expect: int | None = 0) -> str:
        return self.run([str(CDK), *args, "--no-notices"], expect)

    def fmcluster(self, *args: str, expect: int | None = 0) -> str:
        """The fmcluster CLI of this checkout, as a user runs it (``fmcluster deploy`` then runs the CDK CLI)."""
        return self.run([str(Path(sys.executable).parent / "fmcluster"), *args], expect)

    def run(self, command: list[str], expect: int | None, stdout_only: bool = False) -> str:
        started, cpu = time.monotonic(), _children_cpu()
        proc = subprocess.run(command, cwd=ROOT, env=self.env(), capture_output=True, text=True, timeout=600,
                              check=False)
        out = proc.stdout + proc.stderr
        shown = " ".join([Path(command[0]).name, *command[1:]])
        self.outputs.append(f"$ {shown}  # {time.monotonic() - started:.1f}s ({_children_cpu() - cpu:.1f} s CPU, "
                            f"moto {self.moto_cpu():.1f} s CPU so far), exit {proc.returncode}\n{out}")
        if expect is not None and proc.returncode != expect:
            pytest.fail(f"`{shown}` exited {proc.returncode}, not {expect}:\n{out[-4000:]}\n--- moto:\n"
                        f"{self.moto_log.read_text()[-3000:]}", pytrace=False)
        return proc.stdout if stdout_only else out

    def moto_cpu(self) -> float:
        """The CPU seconds the moto server has used so far (for the log: where a rehearsal's time goes)."""
        if self.moto is None:
            return 0.0
        try:
            fields = Path(f"/proc/{self.moto.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def destroy(self, project: Path, *confirm: str) -> dict:
        """``fmcluster destroy PROJECT --yes -o json`` as a user runs it (or with ``confirm``: ``--delete-retained
        --confirm NAME``): what it deleted and what it says it kept."""
        return json.loads(self.run([str(Path(sys.executable).parent / "fmcluster"), "destroy", str(project),
                                    *(confirm or ("--yes",)), "-o", "json", "--wait-minutes", "5"], 0,
                                   stdout_only=True))

    def status(self, project: Path) -> dict[str, str]:
        """``fmcluster status PROJECT -o json`` as a user runs it: stack name -> the state it shows (exit 1 is a
        project not healthy: the cluster stack here holds a change set only)."""
        shown = json.loads(self.run([str(Path(sys.executable).parent / "fmcluster"), "status", str(project), "-o",
                                     "json"], None, stdout_only=True))
        assert shown["ok"], shown
        return {s["name"]: s["status"] for s in shown["stacks"]}

    def boto(self, service: str):
        """A client of moto's ``service`` (made once: the checks look up hundreds of resources)."""
        import boto3  # the rehearsal's own reads of moto's state

        if service not in self.clients:
            self.clients[service] = boto3.client(service, region_name=self.region,
                                                 endpoint_url=f"http://127.0.0.1:{self.port}",
                                                 aws_access_key_id="testing", aws_secret_access_key="testing")
        return self.clients[service]

    def stacks(self) -> dict[str, dict]:
        """Stack name -> template of the rehearsed projects' stacks, in the assembly's dependency order (the
        assembly holds every rehearsed project's: :func:`rehearsal_assembly`)."""
        manifest = json.loads((self.assembly / "manifest.json").read_text())
        ours = {f"{config.parse(p.read_text(), p).project.name}-{kind}" for p in (self.file, *self.together)
                for kind in STACKS}
        found = {art.get("displayName", name): json.loads((self.assembly / art["properties"]["templateFile"])
                                                          .read_text())
                 for name, art in manifest["artifacts"].items() if art["type"] == "aws:cloudformation:stack"}
        return {name: template for name, template in found.items() if name in ours}


@pytest.fixture(scope="session")
def rehearsal_assembly(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """One `cdk synth` (the CLI, cdk.json, app.py, as a user runs it) of every rehearsed project, per test session:
    the rehearsals deploy from it with ``--app`` instead of a synthesis each (~20 s of CPU apiece). With
    pytest-xdist the first worker synthesizes and the others wait (a file lock), as for ``synthesized``. The CLI's
    own context (path metadata, version reporting) is in it, as in the assembly a user's second `cdk deploy` is
    compared with: the day two's `fmcluster deploy` synthesizes the same way."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent
    work, outcome = shared / "rehearsal-synth", shared / "rehearsal-synth.json"
    with FileLock(str(shared / "rehearsal-synth.lock")):
        if not outcome.exists():
            work.mkdir(exist_ok=True)
            r = Rehearsal(DEFAULT_PROJECT, work, DEFAULT_ACCOUNT, DEFAULT_REGION,
                          node_cache=tmp_path_factory.getbasetemp() / "node-compile-cache")
            r.moto_log.write_text("(no moto: the synthesis calls no AWS)")
            refs = ",".join(str(p) for p in rehearsed_files())
            # nag=false: cdk-nag only reports (the nag tests gate it) and costs half the synth
            # a failing synth fails here (exit and output shown); no outcome is written, so each worker tries it
            r.cdk("synth", "--quiet", "-o", str(r.assembly), "-c", f"project={refs}", "-c", "nag=false")
            error = f"it tried to leave loopback:\n{r.net_log.read_text()}" if r.net_log.exists() else None
            outcome.write_text(json.dumps({"error": error, "log": r.outputs}))
    error = json.loads(outcome.read_text())["error"]
    if error:
        pytest.fail(f"`cdk synth` of the rehearsed projects failed:\n{error}", pytrace=False)
    return work / "cdk.out"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def link_assembly(assembly: Path, where: Path) -> None:
    """The session's assembly (:func:`rehearsal_assembly`), linked file by file into ``where``: the CLI's own writes
    (cdk-assets' ``.cache`` of zipped bundles) stay in the rehearsal's folder."""
    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:  # another file system
            shutil.copy2(src, dst)

    shutil.copytree(assembly, where, copy_function=link)


def offline_blockers(template: dict) -> list[str]:
    return sorted({f"{lid} ({r['Type']})" for lid, r in template.get("Resources", {}).items()
                   if any(r["Type"].startswith(t) for t in NOT_OFFLINE)})


def skipped_types(moto_log: str) -> set[str]:
    return set(re.findall(r"No Moto CloudFormation support for (\S+)", moto_log))


def all_stacks(cfn) -> list[dict]:
    """Every stack of the Region (moto, like CloudFormation, answers DescribeStacks a page at a time)."""
    return [s for page in cfn.get_paginator("describe_stacks").paginate() for s in page["Stacks"]]


def outputs_of(cfn, stack: str) -> dict[str, str]:
    described = cfn.describe_stacks(StackName=stack)["Stacks"][0]
    return {o["OutputKey"]: o.get("OutputValue") for o in described.get("Outputs", [])}


def references(node: object, kind: str) -> list:
    """Every argument of intrinsic ``kind`` (``Ref``, ``Fn::GetAtt``, ``Fn::GetStackOutput``) in ``node``."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == kind:
                found.append(value)
            found.extend(references(value, kind))
    elif isinstance(node, list):
        for value in node:
            found.extend(references(value, kind))
    return found


def from_skipped(value: object, template: dict, skipped: set[str]) -> bool:
    """Whether an output value reads a resource whose type moto skipped (so moto cannot know it)."""
    resources = template.get("Resources", {})
    ids = [r for r in references(value, "Ref") if isinstance(r, str)]
    ids += [a[0] if isinstance(a, list) else a.split(".")[0] for a in references(value, "Fn::GetAtt")]
    return any(resources.get(i, {}).get("Type") in skipped for i in ids)


# --- what exists in moto, by type: used for retained (must remain) and deleted (must be gone) --------

def _exists(client_call) -> bool:
    from botocore.exceptions import ClientError

    try:
        return bool(client_call())
    except ClientError:
        return False


EXISTS = {
    "AWS::S3::Bucket": lambda r, pid: _exists(lambda: r.boto("s3").head_bucket(Bucket=pid) or True),
    "AWS::Logs::LogGroup": lambda r, pid: any(g["logGroupName"] == pid for g in
                                              r.boto("logs").describe_log_groups(logGroupNamePrefix=pid)["logGroups"]),
    "AWS::KMS::Key": lambda r, pid: _exists(
        lambda: r.boto("kms").describe_key(KeyId=pid)["KeyMetadata"]["KeyState"] == "Enabled"),
    "AWS::EC2::VPC": lambda r, pid: _exists(lambda: r.boto("ec2").describe_vpcs(VpcIds=[pid])["Vpcs"]),
    "AWS::EC2::Subnet": lambda r, pid: _exists(lambda: r.boto("ec2").describe_subnets(SubnetIds=[pid])["Subnets"]),
    "AWS::EC2::RouteTable": lambda r, pid: _exists(
        lambda: r.boto("ec2").describe_route_tables(RouteTableIds=[pid])["RouteTables"]),
    "AWS::EC2::InternetGateway": lambda r, pid: _exists(
        lambda: r.boto("ec2").describe_internet_gateways(InternetGatewayIds=[pid])["InternetGateways"]),
    "AWS::EC2::NatGateway": lambda r, pid: _exists(
        lambda: r.boto("ec2").describe_nat_gateways(NatGatewayIds=[pid])["NatGateways"][0]["State"] != "deleted"),
    "AWS::EC2::VPCEndpoint": lambda r, pid: _exists(
        lambda: r.boto("ec2").describe_vpc_endpoints(VpcEndpointIds=[pid])["VpcEndpoints"][0]["State"] != "deleted"),
    "AWS::EC2::SecurityGroup": lambda r, pid: _exists(
        lambda: r.boto("ec2").describe_security_groups(GroupIds=[pid])["SecurityGroups"]),
    "AWS::EC2::LaunchTemplate": lambda r, pid: _exists(
        lambda: r.boto("ec2").describe_launch_templates(LaunchTemplateIds=[pid])["LaunchTemplates"]),
    "AWS::IAM::Role": lambda r, pid: _exists(lambda: r.boto("iam").get_role(RoleName=pid)),
    "AWS::RDS::DBCluster": lambda r, pid: _exists(
        lambda: r.boto("rds").describe_db_clusters(DBClusterIdentifier=pid)["DBClusters"]),
    "AWS::RDS::DBInstance": lambda r, pid: _exists(
        lambda: r.boto("rds").describe_db_instances(DBInstanceIdentifier=pid)["DBInstances"]),
    "AWS::RDS::DBSubnetGroup": lambda r, pid: _exists(
        lambda: r.boto("rds").describe_db_subnet_groups(DBSubnetGroupName=pid)["DBSubnetGroups"]),
    "AWS::RDS::DBClusterParameterGroup": lambda r, pid: _exists(
        lambda: r.boto("rds").describe_db_cluster_parameter_groups(DBClusterParameterGroupName=pid)[
            "DBClusterParameterGroups"]),
    "AWS::SecretsManager::Secret": lambda r, pid: _exists(
        lambda: not r.boto("secretsmanager").describe_secret(SecretId=pid).get("DeletedDate")),
}


# --- the rehearsal -------------------------------------------------------------------------------

@pytest.mark.rehearsal
def test_moto_skips_are_what_moto_skips() -> None:
    """Every type MOTO_SKIPS names is one moto's CloudFormation has no model for (so the list cannot
    claim a gap that moto does not have)."""
    from moto.cloudformation.parsing import get_model_map

    modelled = set(get_model_map())
    assert not modelled & set(MOTO_SKIPS), f"moto models these now; drop them from MOTO_SKIPS: {modelled & set(MOTO_SKIPS)}"


@pytest.mark.rehearsal
def test_rehearsed_projects_cover_every_orchestrator() -> None:
    kinds = {config.parse(p.read_text(), p).project.orchestrator.type for p in rehearsed_files()}
    all_kinds = {config.parse(p.read_text(), p).project.orchestrator.type for p in EXAMPLE_FILES + PROJECT_FILES}
    assert kinds == all_kinds


@pytest.mark.rehearsal
@pytest.mark.parametrize("files", rehearsals(), ids=lambda group: "+".join(p.stem for p in group))
def test_rehearsal(files: tuple[Path, ...], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
                   rehearsal_assembly: Path) -> None:
    assert CDK.exists(), "node_modules/.bin/cdk is missing: run `make setup` (npm ci)"
    file, *together = files
    assert {environment(p) for p in files} == {environment(file)}, "one rehearsal per account and Region"
    r = Rehearsal(file, tmp_path, *environment(file), together=tuple(together),
                  node_cache=tmp_path_factory.getbasetemp() / "node-compile-cache")
    link_assembly(rehearsal_assembly, r.assembly)
    r.start_moto()
    try:
        rehearse(r)
    finally:
        r.stop_moto()
        (tmp_path / "cli.log").write_text("\n".join(r.outputs))


def stacks_of(file: Path, stacks: dict[str, dict]) -> list[str]:
    """The names in ``stacks`` of the project ``file``'s stacks."""
    name = config.parse(file.read_text(), file).project.name
    return [n for n in stacks if n in {f"{name}-{role}" for role in STACKS}]


def rehearse(r: Rehearsal) -> None:
    # protection on, as a user deploys: `fmcluster destroy` lifts it (the synthesis has no -c protect=false)
    stacks = r.stacks()
    files = (r.file, *r.together)
    assert all(stacks_of(p, stacks) for p in files), f"a project without stacks in the session's assembly: {files}"
    blocked = {name: offline_blockers(t) for name, t in stacks.items() if offline_blockers(t)}
    # ParallelCluster's provider template lives in AWS's public bucket; HyperPod's lifecycle scripts are
    # uploaded by CDK's bucket-deployment Lambda, which moto cannot run offline; moto has no PCS. Other stacks
    # must deploy.
    executing = [p for p in files if config.parse(p.read_text(), p).project.orchestrator.type not in CHANGE_SET_ONLY]
    for path in executing:
        held = {n: blocked[n] for n in stacks_of(path, stacks) if n in blocked}
        assert not held, f"only a cluster stack of {CHANGE_SET_ONLY} may need AWS itself: {held}"
    executed = [name for name in stacks if name not in blocked]
    app = ("--app", str(r.assembly))

    r.cdk("bootstrap", *app, f"aws://{r.account}/{r.region}")
    cfn = r.boto("cloudformation")
    staging = outputs_of(cfn, "CDKToolkit")["BucketName"]
    staged = prestage_artefacts(r, staging, list(stacks))

    if blocked:
        r.cdk("deploy", *app, *executed, "--require-approval", "never")
        r.cdk("deploy", *app, *blocked, "--exclusively", "--method=prepare-change-set", "--require-approval", "never")
    else:  # the assembly holds every project's stacks: these, not --all
        r.cdk("deploy", *app, *executed, "--require-approval", "never")

    # the publisher found every staged artefact in place and never ran its command (which would download it)
    assert staged, "no staged monitoring artefact in the rehearsed assembly"
    assert "fmcluster bootstrap stage" not in "\n".join(r.outputs), "a staged artefact's command ran: it was not there"

    # every executed stack reached CREATE_COMPLETE; every other one has a change set ready to run
    status = {s["StackName"]: s["StackStatus"] for s in all_stacks(cfn)}
    assert {name: status.get(name) for name in executed} == dict.fromkeys(executed, "CREATE_COMPLETE")
    for name in blocked:
        change_sets = [c for c in cfn.list_change_sets(StackName=name)["Summaries"]
                       if c["StackName"] == name]  # moto lists the Region's change sets
        assert [c["Status"] for c in change_sets] == ["CREATE_COMPLETE"], (name, change_sets)

    moto_log = r.moto_log.read_text()
    skipped = skipped_types(moto_log)
    assert skipped <= set(MOTO_SKIPS), f"moto skipped types MOTO_SKIPS does not name: {skipped - set(MOTO_SKIPS)}"
    assert "Traceback" not in moto_log, moto_log[moto_log.index("Traceback") - 2000:][:6000]

    check_bundle_assets(r, staging, [name for name in stacks if name.endswith("-cluster")])
    check_references(r, stacks, executed, skipped)
    for name in executed:
        if name.endswith("-accounting"):
            check_unretained_groups_refused(r, name, stacks[name])
    # fmcluster status of the default and the accounting project (issue 30); each call is a CLI start, ~2 s
    with_status = [p for p in files if p in (DEFAULT_PROJECT, accounting_beside_default())]
    shown_stacks = {n for p in with_status for n in stacks_of(p, stacks)}
    if with_status:
        shown = {n: state for p in with_status for n, state in r.status(p).items()}
        assert shown == {n: "REVIEW_IN_PROGRESS" if n in blocked else "CREATE_COMPLETE" for n in shown_stacks}, shown

    deployed = {name: {s["LogicalResourceId"]: s for s in cfn.list_stack_resources(StackName=name)["StackResourceSummaries"]
                       if s["LogicalResourceId"]}  # moto lists each skipped resource once, with no ID
                for name in executed}
    for path in executing:  # every stack of the project executes: the second deploy, as a user makes it
        day_two(r, path, {n: stacks[n] for n in stacks_of(path, stacks)}, deployed)
    protected = [s["StackName"] for s in all_stacks(cfn) if s.get("EnableTerminationProtection")]
    assert protected, "no stack deployed with termination protection"
    out = r.cdk("destroy", *app, protected[0], "--exclusively", "--force", expect=None)  # what README said to do
    assert "cannot be deleted while TerminationProtection is enabled" in out, out[-2000:]
    reports = []
    for i, path in enumerate(files):
        reports.append(r.destroy(path))
        others = {n for later in files[i + 1:] for n in stacks_of(later, stacks)}
        gone = others - {s["StackName"] for s in all_stacks(cfn)}
        assert not gone, f"`fmcluster destroy {path.name}` deleted another project's stacks: {sorted(gone)}"
    assert {n for rep in reports for n in rep["termination_protection_lifted"]} >= set(protected)
    check_destroyed(r, stacks, deployed, reports)
    kept_networks = {rep["network_kept"].split(" ", 1)[0] for rep in reports if rep["network_kept"]}
    if with_status:
        shown = {n: state for p in with_status for n, state in r.status(p).items()}
        assert shown == {n: "CREATE_COMPLETE" if n in kept_networks else "NOT_DEPLOYED" for n in shown_stacks}, shown
    for file, report in zip(files, reports):
        if accounting_database(file):
            check_accounting_teardown(r, file, stacks, deployed, report)

    moto_log = r.moto_log.read_text()  # the day two and the teardown too: no request moto failed on (a 500)
    assert "Traceback" not in moto_log, moto_log[moto_log.index("Traceback") - 2000:][:6000]
    assert not r.net_log.exists(), f"the rehearsal tried to leave loopback:\n{r.net_log.read_text()}"
    print(f"\n{r.file.name}: executed {executed}; change set only {sorted(blocked)} ({blocked}); "
          f"moto skipped {sorted(skipped)}")


def day_two(r: Rehearsal, file: Path, stacks: dict[str, dict], deployed: dict[str, dict]) -> None:
    """After the first deploy, `fmcluster deploy` of ``file`` (its ``stacks``) as a user runs it (validate, guard
    against the deployed templates read back with GetTemplate, then the real `cdk deploy`):

    1. the model described (storage.checkpoint) instead of a pinned size, so the planner grows FSx, and in the same
       deploy an in-place change (a count, and the group's root volume, which the launch template carries): both
       deployed as updates (one `fmcluster deploy`: a synthesis and a deploy fewer than one each) -- the storage
       and cluster stacks UPDATE_COMPLETE, every resource keeps its physical ID (this project's and every other
       project's in the rehearsal: ``deployed``), the launch template gets a new version;
    2. a smaller model, whose planner-sized FSx would shrink, and a new VPC range, which would replace the network
       the file system and the cluster use: both refused (exit 3), nothing deployed;
    3. the strong references: deleting the network stack under the cluster that imports its values is refused.
    """
    cfn = r.boto("cloudformation")
    project = config.parse(file.read_text(), file).project
    text = file.read_text()
    day2 = r.work / f"day2-{project.name}"
    day2.mkdir()
    args = ("--all", "--require-approval", "never", "-o", str(r.work / f"cdk.out.day2-{project.name}"),
            "-c", "nag=false")

    unpinned = re.sub(r"\n    storage_capacity_gib: \d+", "", text)
    assert unpinned != text
    model = "  checkpoint: {{parameters: {}, target_write_seconds: 600}}\n"
    group = project.compute_groups[0]
    more = (unpinned + model.format("70e9")).replace(
        f"    count: {group.count}\n", f"    count: {group.count + 2}\n    root_volume_gib: 321\n", 1)
    assert "root_volume_gib: 321" in more
    (day2 / file.name).write_text(more)
    grown = r.fmcluster("deploy", str(day2 / file.name), *args)
    assert "no file system, association, bucket or workspace would be replaced" in grown
    storage = next(name for name in stacks if name.endswith("-storage"))
    cluster = next(name for name in stacks if name.endswith("-cluster"))
    status = {s["StackName"]: s["StackStatus"] for s in all_stacks(cfn)}
    assert (status[storage], status[cluster]) == ("UPDATE_COMPLETE", "UPDATE_COMPLETE"), status
    for name, before in deployed.items():  # updates: not one resource was replaced
        after = {s["LogicalResourceId"]: s["PhysicalResourceId"]
                 for s in cfn.list_stack_resources(StackName=name)["StackResourceSummaries"] if s["LogicalResourceId"]}
        assert after == {lid: s["PhysicalResourceId"] for lid, s in before.items()}, name
    ec2 = r.boto("ec2")
    template = next(s["PhysicalResourceId"] for s in deployed[cluster].values()
                    if s["ResourceType"] == "AWS::EC2::LaunchTemplate")
    versions = ec2.describe_launch_template_versions(LaunchTemplateId=template)["LaunchTemplateVersions"]
    sizes = sorted((v["VersionNumber"], v["LaunchTemplateData"]["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"])
                   for v in versions)
    assert len(sizes) == 2 and sizes[-1][1] == 321, sizes

    (day2 / file.name).write_text(more.replace(model.format("70e9"), model.format("13e9")))
    refused = r.fmcluster("deploy", str(day2 / file.name), *args, expect=3)
    assert "StorageCapacity shrinks" in refused and "refused" in refused, refused
    held = cfn.get_template(StackName=storage)["TemplateBody"]
    held = json.loads(held) if isinstance(held, str) else held
    [fs] = [x for x in held["Resources"].values() if x["Type"] == "AWS::FSx::FileSystem"]
    assert fs["Properties"]["StorageCapacity"] > stacks[storage]["Resources"]["FileSystem"]["Properties"][
        "StorageCapacity"]  # still the grown file system: cdk never ran

    # a new network under the deployed stacks: the VPC, subnet and groups the file system and cluster use are replaced
    cidr = project.network.vpc_cidr
    moved = more.replace(f"vpc_cidr: {cidr}", "vpc_cidr: 10.250.0.0/16")
    assert cidr and moved != more
    (day2 / file.name).write_text(moved)
    refused = r.fmcluster("deploy", str(day2 / file.name), *args, expect=3)
    assert "/FileSystem (AWS::FSx::FileSystem): " in refused and "which is replaced" in refused, refused
    assert f'CidrBlock changes from "{cidr}" to "10.250.0.0/16"' in refused, refused

    network = next(name for name in stacks if name.endswith("-network"))
    out = r.cdk("destroy", "--app", str(r.assembly), network, "--exclusively", "--force", expect=None)
    assert f"in use by {cluster}" in out, out[-3000:]
    assert {s["StackName"] for s in all_stacks(cfn)} >= set(stacks)


def prestage_artefacts(r: Rehearsal, staging: str, stacks: list[str]) -> list[str]:
    """The monitoring artefacts the cluster stacks stage (fmcluster.stacks.staging), put in the asset bucket as an
    earlier deploy left them: their source is ``fmcluster bootstrap stage``, which downloads from GitHub and cannot run
    offline; with the object in place the CDK CLI's publisher skips the command, as on every deploy after the first.
    (The command itself: tests/bootstrap/test_staging.py, against a loopback server.) The keys are the sha256s."""
    s3 = r.boto("s3")
    keys = []
    for stack in stacks:
        manifest = json.loads((r.assembly / f"{stack}.assets.json").read_text())
        for asset_hash, asset in manifest["files"].items():
            command = asset["source"].get("executable")
            if command is None:
                continue
            assert command[:3] == ["fmcluster", "bootstrap", "stage"] and asset_hash in command, command
            for dest in asset["destinations"].values():
                assert dest["objectKey"] == asset_hash, dest  # what the nodes look for: s3://BUCKET/SHA256
                s3.put_object(Bucket=staging, Key=asset_hash, Body=f"staged {asset_hash}\n".encode())
                keys.append(asset_hash)
    return sorted(set(keys))


def check_bundle_assets(r: Rehearsal, staging: str, cluster_stacks: list[str]) -> None:
    """The node bootstrap bundle of each cluster stack is in the staging bucket under its hash, as built."""
    s3 = r.boto("s3")
    bundles = 0
    for stack in cluster_stacks:
        manifest = json.loads((r.assembly / f"{stack}.assets.json").read_text())
        for asset_hash, asset in manifest["files"].items():
            source = asset["source"]
            if "executable" in source or source["path"].endswith(".template.json"):
                continue  # a staged artefact (prestage_artefacts), a template
            bundles += 1
            for dest in asset["destinations"].values():
                bucket = dest["bucketName"].replace("${AWS::AccountId}", r.account).replace("${AWS::Region}", r.region)
                assert bucket == staging
                assert dest["objectKey"].startswith(asset_hash), dest
                body = s3.get_object(Bucket=bucket, Key=dest["objectKey"])["Body"].read()
                local = r.assembly / source["path"]
                if source.get("packaging") == "zip":
                    with zipfile.ZipFile(io.BytesIO(body)) as zf:
                        uploaded = {n: zf.read(n) for n in zf.namelist() if not n.endswith("/")}
                    built = {str(p.relative_to(local)): p.read_bytes() for p in local.rglob("*") if p.is_file()}
                    assert uploaded == built, f"{stack}: the uploaded bundle differs from {local}"
                else:
                    assert hashlib.sha256(body).digest() == hashlib.sha256(local.read_bytes()).digest()
    assert bundles, f"no bootstrap bundle asset in {cluster_stacks}"


def check_references(r: Rehearsal, stacks: dict[str, dict], executed: list[str], skipped: set[str]) -> None:
    """Exports are listed with the producer's output value, and every Fn::GetStackOutput in an executed
    stack names a deployed output. Values that read a resource moto skipped are named, not hidden."""
    cfn = r.boto("cloudformation")
    exports = {e["Name"]: e.get("Value") for page in cfn.get_paginator("list_exports").paginate()
               for e in page["Exports"]}  # 100 a page: the shared rehearsal has more
    unresolvable = []
    for name in executed:
        template, outputs = stacks[name], outputs_of(cfn, name)
        for key, spec in template.get("Outputs", {}).items():
            if from_skipped(spec["Value"], template, skipped):
                unresolvable.append(f"{name}.{key}")
                continue
            assert outputs.get(key), f"{name} output {key} did not resolve"
            if "Export" in spec:
                assert exports.get(spec["Export"]["Name"]) == outputs[key], f"export {spec['Export']['Name']}"
        for ref in references(template, "Fn::GetStackOutput"):
            producer = ref["StackName"]
            assert producer in executed, f"{name} reads {producer}, which was not deployed"
            assert ref["OutputName"] in stacks[producer]["Outputs"]
            if f"{producer}.{ref['OutputName']}" not in unresolvable:
                assert outputs_of(cfn, producer).get(ref["OutputName"]), f"{name} -> {producer}.{ref['OutputName']}"
        for imported in references(template, "Fn::ImportValue"):  # the cluster's strong references
            assert imported in exports, f"{name} imports {imported}, which no deployed stack exports"
    # A consumer really received the producer's values: the launch templates' subnet and groups exist.
    ec2 = r.boto("ec2")
    templates = ec2.describe_launch_templates(MaxResults=200)["LaunchTemplates"]  # moto: 15 unless asked, no token
    assert len(templates) < 200, "more launch templates than one page: page through them"
    for lt in templates:
        data = ec2.describe_launch_template_versions(LaunchTemplateId=lt["LaunchTemplateId"])["LaunchTemplateVersions"][0]
        for nic in data["LaunchTemplateData"].get("NetworkInterfaces", []):
            assert ec2.describe_subnets(SubnetIds=[nic["SubnetId"]])["Subnets"], nic
            assert len(ec2.describe_security_groups(GroupIds=nic["Groups"])["SecurityGroups"]) == len(nic["Groups"])
    if unresolvable:
        print(f"\n{r.file.name}: outputs moto cannot compute (they read a skipped resource): {unresolvable}")


def check_destroyed(r: Rehearsal, stacks: dict[str, dict], deployed: dict[str, dict], reports: list[dict]) -> None:
    """After `fmcluster destroy` no stack is left but a network it said it kept; retained resources remain and are
    what it listed, the others are gone."""
    cfn = r.boto("cloudformation")
    kept_networks = {rep["network_kept"].split(" ", 1)[0] for rep in reports if rep["network_kept"]}
    left = [s["StackName"] for s in all_stacks(cfn) if s["StackName"] in stacks]
    assert set(left) == kept_networks, f"stacks left after destroy: {left}; it said it kept {kept_networks}"
    listed = {k["id"] for rep in reports for k in rep["kept"]}
    retained, removed = [], []
    for name, resources in deployed.items():
        if name in kept_networks:
            continue
        template = stacks[name]["Resources"]
        for lid, summary in resources.items():
            rtype = template[lid]["Type"]
            if rtype not in EXISTS:
                continue
            keep = template[lid].get("DeletionPolicy") == "Retain"
            exists = EXISTS[rtype](r, summary["PhysicalResourceId"])
            (retained if keep else removed).append((f"{name}/{lid}", rtype, exists))
    assert retained, "no retained resource was checked"
    assert [x for x in retained if not x[2]] == [], "retained resources deleted"
    assert [x for x in removed if x[2]] == [], "resources left behind"
    # nothing left but what destroy listed: each retained resource still there is in its list, and the reverse
    there = {deployed[n.split("/")[0]][n.split("/")[1]]["PhysicalResourceId"] for n, _, exists in retained if exists}
    assert there <= listed, f"kept but not listed by destroy: {sorted(there - listed)}"
    assert all(k["delete"] and k["cost"] for rep in reports for k in rep["kept"]), reports
    unchecked = sorted({t["Type"] for s in stacks.values() for t in s["Resources"].values()
                        if t.get("DeletionPolicy") == "Retain" and t["Type"] not in EXISTS})
    assert set(unchecked) <= set(MOTO_SKIPS), f"retained types moto keeps that EXISTS cannot look up: {unchecked}"
    print(f"\n{r.file.name}: retained and still there: {[x[0] for x in retained]}; "
          f"retained, not checkable in moto: {unchecked}")


def check_unretained_groups_refused(r: Rehearsal, accounting: str, template: dict) -> None:
    """The accounting stack as it was before the destroy fix (its DB subnet group, cluster parameter group and security
    group not retained), deployed beside the real one: its delete under the retained database ends DELETE_FAILED
    naming the three, with the errors RDS and EC2 give (moto patches 12 and 13), as in AWS. Without the refusals this
    would delete cleanly and the rehearsal could not tell the fixed stack from the broken one. Cleaned up after: once
    the database is deleted, the delete is tried again and completes."""
    old = json.loads(json.dumps(template))
    old.pop("Outputs", None)  # its exports would clash with the real stack's
    unretained = {}
    for lid, spec in old["Resources"].items():
        if spec["Type"] in ("AWS::RDS::DBSubnetGroup", "AWS::RDS::DBClusterParameterGroup", "AWS::EC2::SecurityGroup") \
                and spec.pop("DeletionPolicy", None) == "Retain":
            spec.pop("UpdateReplacePolicy", None)
            unretained[lid] = spec["Type"]
    assert len(unretained) == 3, f"{accounting} no longer retains what the database uses: {unretained}"
    cfn, name = r.boto("cloudformation"), f"{accounting}-unretained"
    stack_id = cfn.create_stack(StackName=name, TemplateBody=json.dumps(old))["StackId"]
    resources = {s["LogicalResourceId"]: s["PhysicalResourceId"]
                 for s in cfn.list_stack_resources(StackName=name)["StackResourceSummaries"]}
    cfn.delete_stack(StackName=stack_id)
    assert cfn.describe_stacks(StackName=stack_id)["Stacks"][0]["StackStatus"] == "DELETE_FAILED"
    failed = {e["LogicalResourceId"]: e["ResourceStatusReason"] for e in cfn.describe_stack_events(StackName=stack_id)[
        "StackEvents"] if e["ResourceStatus"] == "DELETE_FAILED" and e["LogicalResourceId"] != name}
    codes = {"AWS::RDS::DBSubnetGroup": "InvalidDBSubnetGroupStateFault",
             "AWS::RDS::DBClusterParameterGroup": "InvalidDBParameterGroupState",
             "AWS::EC2::SecurityGroup": "DependencyViolation"}
    assert {lid: codes[t] in failed.get(lid, "") for lid, t in unretained.items()} == dict.fromkeys(unretained, True), \
        failed
    rds = r.boto("rds")
    of_type = {t: resources[lid] for lid, spec in old["Resources"].items() if lid in resources for t in [spec["Type"]]}
    rds.delete_db_instance(DBInstanceIdentifier=of_type["AWS::RDS::DBInstance"], SkipFinalSnapshot=True)
    rds.modify_db_cluster(DBClusterIdentifier=of_type["AWS::RDS::DBCluster"], DeletionProtection=False)
    rds.delete_db_cluster(DBClusterIdentifier=of_type["AWS::RDS::DBCluster"], SkipFinalSnapshot=True)
    r.boto("secretsmanager").delete_secret(SecretId=of_type["AWS::SecretsManager::Secret"],
                                           ForceDeleteWithoutRecovery=True)
    cfn.delete_stack(StackName=stack_id)  # the groups are free now: the retry deletes them
    assert cfn.describe_stacks(StackName=stack_id)["Stacks"][0]["StackStatus"] == "DELETE_COMPLETE", [
        (e["LogicalResourceId"], e.get("ResourceStatusReason")) for e in cfn.describe_stack_events(StackName=stack_id)[
            "StackEvents"] if e["ResourceStatus"] == "DELETE_FAILED"]
    assert not [lid for lid, pid in resources.items() if lid in old["Resources"]
                and old["Resources"][lid]["Type"] in EXISTS and EXISTS[old["Resources"][lid]["Type"]](r, pid)]


DATABASE_IN_VPC = ("AWS::RDS::DBCluster", "AWS::RDS::DBInstance", "AWS::RDS::DBSubnetGroup", "AWS::EC2::SecurityGroup")
"""What the accounting stack retains that lives in the network's VPC (its interfaces, its security group)."""


def check_accounting_teardown(r: Rehearsal, file: Path, stacks: dict[str, dict], deployed: dict[str, dict],
                              report: dict) -> None:
    """The accounting project's first destroy kept ``NAME-network`` because the retained database lives in it (moto
    refuses a VPC that still holds its security group, as EC2 does); ``destroy --delete-retained`` then deletes the
    database and what it used (in the order RDS and EC2 accept), the other kept data, and the network, and leaves
    nothing but what it says it left."""
    name = config.parse(file.read_text(), file).project.name
    ours = [n for n in stacks if n.startswith(f"{name}-")]
    network, accounting = f"{name}-network", f"{name}-accounting"
    template = stacks[accounting]["Resources"]
    in_vpc = {deployed[accounting][lid]["PhysicalResourceId"] for lid, spec in template.items()
              if spec["Type"] in DATABASE_IN_VPC and spec.get("DeletionPolicy") == "Retain"}
    assert len(in_vpc) == len(DATABASE_IN_VPC), f"{accounting} retains {in_vpc}"
    kept = {k["id"]: k for k in report["kept"]}
    assert (report["network_kept"] or "").startswith(f"{network} is kept"), report["network_kept"]
    assert all(pid in report["network_kept"] and kept[pid]["in_network"] for pid in in_vpc), (in_vpc, report)

    again = r.destroy(file, "--delete-retained", "--confirm", name)
    assert again["deleted"] == [network], again["deleted"]
    cfn = r.boto("cloudformation")
    assert not [s["StackName"] for s in all_stacks(cfn) if s["StackName"] in ours]
    assert {k.split(" ", 1)[1] for k in again["deleted_retained"]} >= set(kept), "kept resources not deleted"
    there = [f"{n}/{lid} ({summary['ResourceType']})" for n in ours if n in deployed
             for lid, summary in deployed[n].items()
             if summary["ResourceType"] in EXISTS and EXISTS[summary["ResourceType"]](r, summary["PhysicalResourceId"])]
    assert not there, f"left after destroy --delete-retained: {there}"
    # what it says it left: the cluster's final snapshot, the key and the secret in their deletion windows
    [cluster] = [deployed[accounting][lid]["PhysicalResourceId"] for lid, spec in template.items()
                 if spec["Type"] == "AWS::RDS::DBCluster"]
    assert any(f"final snapshot {cluster}-final" in line for line in again["left"]), again["left"]
    assert r.boto("rds").describe_db_cluster_snapshots(DBClusterSnapshotIdentifier=f"{cluster}-final")[
        "DBClusterSnapshots"]
    pending = [k for k in again["kept"] if k["type"] not in ("AWS::KMS::Key", "AWS::SecretsManager::Secret")
               or "pending deletion" not in k["detail"] and "recovery window" not in k["detail"]]
    assert not pending, f"still kept, not pending deletion: {pending}"
    print(f"\n{name}: network kept under {sorted(in_vpc)}; --delete-retained deleted {len(again['deleted_retained'])} "
          f"kept resources and {network}; left {again['left']}")
