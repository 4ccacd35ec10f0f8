"""GB200 UltraServers: IMEX membership comes from the UltraServer itself (EC2 DescribeInstanceTopology on
self-managed nodes, HyperPod's node API under HyperPod, ParallelCluster's per-job prolog under
ParallelCluster), the nodes config is the same sorted list on every member, and IMEX is never restarted
under a job. The AWS CLI is emulated from API responses checked against botocore's service models; the
script's own ``--query`` is applied to them with jmespath, as the real CLI does."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import botocore.session
import pytest
from botocore.validate import ParamValidator
from fmcluster.bootstrap.profiles import profiles_for
from support.sandbox import BEHAVIOURS, STUB_HEADER, Image, Sandbox, build_sandbox, calls_of, context_for, make_project

ITYPE = "p6e-gb200.36xlarge"
CR = "cr-0123456789abcdef0"
SELF_ID = "i-0123456789abcdef0"  # what the sandbox's instance metadata says
SELF_IP = "10.0.0.5"
ARN = "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdef012345"

# One capacity block (one reservation) holding two UltraServers: EC2 tells them apart by CapacityBlockId.
MINE = {SELF_ID: "10.0.0.5", "i-0aaaaaaaaaaaaaaa1": "10.0.0.100", "i-0aaaaaaaaaaaaaaa2": "10.0.0.17",
        "i-0aaaaaaaaaaaaaaa3": "10.0.0.9"}
OTHER = {"i-0bbbbbbbbbbbbbbb1": "10.0.1.4", "i-0bbbbbbbbbbbbbbb2": "10.0.1.40", "i-0bbbbbbbbbbbbbbb3": "10.0.0.6"}
SORTED = "10.0.0.5\n10.0.0.9\n10.0.0.17\n10.0.0.100\n"

SESSION = botocore.session.get_session()

EMULATOR = r'''
import json, os, sys
import jmespath

state = os.path.join(os.environ["SANDBOX"], "state", "api")
service, operation, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
opts, key = {}, None
for word in rest:
    if word.startswith("--"):
        key = word[2:]
        opts[key] = []
    elif key is not None:
        opts[key].append(word)

def load(name):
    with open(os.path.join(state, name), encoding="utf-8") as f:
        return json.load(f)

def filters():
    out = {}
    for spec in opts.get("filters", []):
        name, values = spec.split(",", 1)
        out[name.split("=", 1)[1]] = values.split("=", 1)[1].split(",")
    return out

if (service, operation) == ("ec2", "describe-instance-topology"):
    nulls = os.path.join(state, "topology-nulls")
    left = int(open(nulls).read()) if os.path.exists(nulls) else 0
    blank = left > 0
    if blank:
        with open(nulls, "w") as f:
            f.write(str(left - 1))
    rows = load("topology.json")
    if "instance-ids" in opts:
        rows = [r for r in rows if r["InstanceId"] in opts["instance-ids"]]
    for name, values in filters().items():
        field = {"instance-type": "InstanceType", "zone-id": "ZoneId"}[name]
        rows = [r for r in rows if r[field] in values]
    if blank:
        rows = [{k: v for k, v in r.items() if k != "CapacityBlockId"} for r in rows]
    response = {"Instances": rows}
elif (service, operation) == ("ec2", "describe-instances"):
    rows = load("instances.json")
    if "instance-ids" in opts:
        rows = [r for r in rows if r["InstanceId"] in opts["instance-ids"]]
    for name, values in filters().items():
        if name == "capacity-reservation-id":
            rows = [r for r in rows if r.get("CapacityReservationId") in values]
        elif name == "instance-state-name":
            rows = [r for r in rows if r["State"]["Name"] in values]
    response = {"Reservations": [{"Instances": rows[i:i + 2]} for i in range(0, len(rows), 2)]}
elif (service, operation) == ("sagemaker", "list-cluster-nodes"):
    assert opts["cluster-name"] == [load("cluster.json")["ClusterArn"]], opts
    response = {"ClusterNodeSummaries": load("nodes.json")}
elif (service, operation) == ("sagemaker", "describe-cluster-node"):
    assert opts["cluster-name"] == [load("cluster.json")["ClusterArn"]], opts
    details = load("details.json")
    if opts["node-id"][0] not in details:
        print("An error occurred (ResourceNotFound) when calling the DescribeClusterNode operation", file=sys.stderr)
        sys.exit(254)
    response = {"NodeDetails": details[opts["node-id"][0]]}
else:
    print(f"emulator: {service} {operation} is not emulated", file=sys.stderr)
    sys.exit(252)

value = jmespath.search(opts["query"][0], response) if "query" in opts else response

def text(v):
    if v is None:
        return "None"
    if isinstance(v, list):
        if all(not isinstance(x, (list, dict)) for x in v):
            return "\t".join(text(x) for x in v)
        return "\n".join(text(x) for x in v)
    return str(v)

print(text(value) if opts.get("output") == ["text"] else json.dumps(value))
'''

AWS_STUB = r'''
case "$1 $2" in
  "ec2 describe-instance-topology"|"ec2 describe-instances"|"sagemaker list-cluster-nodes"|"sagemaker describe-cluster-node")
    exec python3 "${SANDBOX}/aws_emulator.py" "$@" ;;
esac
'''

# A GPU with a process on it (a job) when state/gpu-busy exists; otherwise the image's nvidia-smi.
NVIDIA_SMI = r'''#!/bin/bash
if [[ " $* " == *--query-compute-apps=* ]]; then
  echo "nvidia-smi $*" >>"${SANDBOX}/calls.log"
  [[ -e "${SANDBOX}/state/gpu-busy" ]] && echo 4242
  exit 0
fi
exec "${SANDBOX}/dynbin/nvidia-smi" "$@"
'''


def _validate(operation: str, service: str, response: dict) -> None:
    """The fake response has the shape botocore's service model gives the operation's output."""
    shape = SESSION.get_service_model(service).operation_model(operation).output_shape
    report = ParamValidator().validate(response, shape)
    assert not report.has_errors(), report.generate_report()


def _topology(ultraservers: dict[str, dict[str, str]]) -> list[dict]:
    rows = [{"InstanceId": iid, "InstanceType": ITYPE, "AvailabilityZone": "us-east-1a", "ZoneId": "use1-az6",
             "CapacityBlockId": cb, "NetworkNodes": ["nn-1", "nn-2", f"nn-{cb}"]}
            for cb, members in ultraservers.items() for iid in members]
    rows.append({"InstanceId": "i-0ccccccccccccccc1", "InstanceType": "p5.48xlarge", "AvailabilityZone": "us-east-1a",
                 "ZoneId": "use1-az6", "NetworkNodes": ["nn-1", "nn-2", "nn-3"]})
    _validate("DescribeInstanceTopology", "ec2", {"Instances": rows})
    return rows


def _instances(*groups: dict[str, str]) -> list[dict]:
    rows = [{"InstanceId": iid, "PrivateIpAddress": ip, "CapacityReservationId": CR, "InstanceType": ITYPE,
             "State": {"Name": "running", "Code": 16}}
            for members in groups for iid, ip in members.items()]
    _validate("DescribeInstances", "ec2", {"Reservations": [{"Instances": rows}]})
    return rows


def _install_emulator(sb: Sandbox) -> Path:
    api = sb.path / "state/api"
    api.mkdir(parents=True, exist_ok=True)
    (sb.path / "aws_emulator.py").write_text(EMULATOR)
    (sb.path / "stubs/aws").write_text(STUB_HEADER + AWS_STUB + BEHAVIOURS["aws"] + "\n")
    (sb.path / "stubs/nvidia-smi").write_text(NVIDIA_SMI)
    (sb.path / "stubs/nvidia-smi").chmod(0o755)
    return api


def _self_managed_ec2(api: Path, mine: dict[str, str]) -> None:
    (api / "topology.json").write_text(json.dumps(_topology({"cb-0aaaaaaaaaaaaaaa0": mine, "cb-0bbbbbbbbbbbbbbb0": OTHER})))
    (api / "instances.json").write_text(json.dumps(_instances(mine, OTHER)))


def _aws_calls(res) -> list[list[str]]:
    return [shlex.split(c)[1:] for c in calls_of(res, "aws")]


def _check_against_botocore(calls: list[list[str]]) -> None:
    """Every call names an operation of botocore's model and only options that are its input members."""
    for service, command, *rest in calls:
        model = SESSION.get_service_model(service)
        ops = {botocore.xform_name(name, "-"): name for name in model.operation_names}
        assert command in ops, f"{service} {command} is not an operation of botocore's {service} model"
        members = {botocore.xform_name(m, "-") for m in model.operation_model(ops[command]).input_shape.members}
        for word in rest:
            if word.startswith("--") and word not in ("--region", "--query", "--output"):
                assert word[2:] in members, f"{service} {command} has no input {word} in botocore's model"


@pytest.fixture(scope="module")
def gb200(tmp_path_factory):
    ctx = context_for(make_project(ITYPE, "ubuntu-24.04", "none"), "gpu", "compute")
    assert ctx.arch == "aarch64" and ctx.instance.needs_imex
    image = Image(gpus=ctx.instance.gpus, gpu_name="NVIDIA GB200", efa_devices=ctx.instance.efa_devices, nvme_drives=4)
    sb = build_sandbox(tmp_path_factory.mktemp("gb200"), ctx, image)
    api = _install_emulator(sb)
    _self_managed_ec2(api, MINE)
    (api / "topology-nulls").write_text("2")  # EC2 has not propagated the UltraServer yet: retried
    first = sb.run()
    return sb, first


def test_members_are_the_ultraserver_not_the_capacity_block(gb200):
    sb, res = gb200
    assert res.rc == 0, res.out
    # two UltraServers share the capacity reservation; only this node's UltraServer is its domain
    assert (sb.root / "etc/nvidia-imex/nodes_config.cfg").read_text() == SORTED
    calls = _aws_calls(res)
    assert ["ec2", "describe-instance-topology", "--region", "us-east-1", "--instance-ids", SELF_ID,
            "--query", "Instances[0].CapacityBlockId", "--output", "text"] in calls
    assert not [c for c in calls if "capacity-reservation-id" in " ".join(c)]
    _check_against_botocore(calls)
    assert (sb.root / "dev/nvidia-caps-imex-channels/channel0").exists()
    assert f"mknod -m 666 {sb.root}/dev/nvidia-caps-imex-channels/channel0 c 234 0" in res.calls
    assert "systemctl enable fmcluster-imex.service fmcluster-imex.timer" in res.calls
    assert "systemctl enable nvidia-imex.service" in res.calls
    # the image's nvidia-imex runs (the sandbox's systemctl says active) on an idle node: restarted once with the
    # members, without waiting (the unit is ordered before nvidia-imex.service)
    assert [c for c in res.calls if "nvidia-imex.service" in c and "is-active" not in c and "enable" not in c] == [
        "systemctl restart --no-block nvidia-imex.service"]
    unit = (sb.root / "etc/systemd/system/fmcluster-imex.service").read_text()
    assert "Before=nvidia-imex.service" in unit and "ExecStart=/usr/local/sbin/fmcluster-imex" in unit
    assert (sb.root / "var/lib/fmcluster/health").read_text() == "healthy\n"
    assert not [c for c in res.calls if "nvidia-fabricmanager" in c]  # IMEX takes its place on GB200


def test_a_replaced_node_is_applied_only_when_the_node_is_idle(gb200):
    sb, _ = gb200
    api = sb.path / "state/api"
    replaced = {k: v for k, v in MINE.items() if k != "i-0aaaaaaaaaaaaaaa2"} | {"i-0aaaaaaaaaaaaaaa9": "10.0.0.33"}
    _self_managed_ec2(api, replaced)
    want = "10.0.0.5\n10.0.0.9\n10.0.0.33\n10.0.0.100\n"
    conf = sb.root / "etc/nvidia-imex/nodes_config.cfg"
    try:
        sb.set_state("gpu-busy")  # a job runs: its IMEX exports must survive
        res = sb.run(script="../root/usr/local/sbin/fmcluster-imex")
        assert res.rc == 0, res.out
        assert conf.read_text() == SORTED
        assert not [c for c in res.calls if c.startswith("systemctl") and "nvidia-imex" in c and "is-active" not in c]
        assert "IMEX keeps its running domain until this node is idle" in res.out
        (sb.path / "state/gpu-busy").unlink()
        res = sb.run(script="../root/usr/local/sbin/fmcluster-imex")
        assert res.rc == 0, res.out
        assert conf.read_text() == want
        assert "systemctl restart --no-block nvidia-imex.service" in res.calls
        # unchanged membership: IMEX is left alone
        res = sb.run(script="../root/usr/local/sbin/fmcluster-imex")
        assert res.rc == 0 and "unchanged" in res.out
        assert not [c for c in res.calls if c.startswith("systemctl") and "nvidia-imex" in c and "is-active" not in c]
    finally:
        (sb.path / "state/gpu-busy").unlink(missing_ok=True)
        _self_managed_ec2(api, MINE)
        conf.write_text(SORTED)


def test_a_node_missing_from_its_own_domain_fails(gb200):
    sb, _ = gb200
    api = sb.path / "state/api"
    (api / "instances.json").write_text(json.dumps(_instances({k: v for k, v in MINE.items() if k != SELF_ID}, OTHER)))
    try:
        res = sb.run(script="../root/usr/local/sbin/fmcluster-imex")
    finally:
        _self_managed_ec2(api, MINE)
    assert res.rc != 0
    assert f"this node ({SELF_IP}) is not among the members of its UltraServer" in res.out


def test_an_instance_ec2_places_in_no_ultraserver_fails_after_retries(gb200):
    sb, _ = gb200
    api = sb.path / "state/api"
    (api / "topology-nulls").write_text("100")
    try:
        res = sb.run(script="../root/usr/local/sbin/fmcluster-imex")
    finally:
        (api / "topology-nulls").write_text("0")
    assert res.rc != 0
    assert f"EC2 reports no UltraServer (CapacityBlockId) for {SELF_ID}" in res.out
    assert len([c for c in calls_of(res, "aws ec2 describe-instance-topology")]) == 6


def test_the_timer_never_restarts_imex_on_its_own(gb200):
    sb, _ = gb200
    step = (sb.bundle / "steps/20-nvidia.sh").read_text()
    script = (sb.root / "usr/local/sbin/fmcluster-imex").read_text()
    # the one restart is the idle branch's; nothing restarts nvidia-imex unconditionally
    assert "systemctl restart nvidia-imex" not in step and "systemctl restart nvidia-imex" not in script
    assert script.index("if node_busy; then") < script.index("action=restart")


@pytest.mark.parametrize("break_it, reason", [
    ("imex-down", "imex: nvidia-imex is not running"),
    ("empty-config", "imex: /etc/nvidia-imex/nodes_config.cfg lists no members"),
    ("no-channel", "imex: IMEX channel 0 (/dev/nvidia-caps-imex-channels/channel0) does not exist"),
    ("fabric-training", "fabric: GPU fabric state is not Completed/Success: 4 GPUs In Progress/Success"),
])
def test_the_health_check_fails_without_imex(gb200, break_it, reason):
    sb, _ = gb200
    conf = sb.root / "etc/nvidia-imex/nodes_config.cfg"
    channel = sb.root / "dev/nvidia-caps-imex-channels/channel0"
    saved = conf.read_text()
    flags = {"imex-down": "inactive-nvidia-imex.service", "fabric-training": "fabric-bad"}
    if break_it in flags:
        sb.set_state(flags[break_it])
    elif break_it == "empty-config":
        conf.write_text("")
    else:
        channel.unlink()
    try:
        res = sb.run(script="steps/99-healthcheck.sh")
    finally:
        for flag in flags.values():
            (sb.path / "state" / flag).unlink(missing_ok=True)
        conf.write_text(saved)
        channel.touch()
    assert res.rc != 0
    assert reason in res.out, res.out
    assert reason in (sb.root / "var/lib/fmcluster/health").read_text()
    # self-managed: the instance is tagged unhealthy
    assert [c for c in calls_of(res, "aws") if c.startswith("aws ec2 create-tags") and "Value=unhealthy" in c]


# -- HyperPod: HyperPod's node API, no EC2 ---------------------------------------------------------------------

HP_MINE = {SELF_ID: SELF_IP, "i-0aaaaaaaaaaaaaaa1": "10.0.0.100", "i-0aaaaaaaaaaaaaaa2": "10.0.0.17"}
HP_OTHER = {"i-0bbbbbbbbbbbbbbb1": "10.0.1.4", "i-0bbbbbbbbbbbbbbb2": "10.0.0.6"}


def _hyperpod_api(api: Path, root: Path, mine: dict[str, str], pending: str | None = None) -> None:
    summaries, details = [], {}
    for us, members in (("us-aaaa", mine), ("us-bbbb", HP_OTHER)):
        for iid, ip in members.items():
            status = "Pending" if iid == pending else "Running"
            summaries.append({"InstanceGroupName": "gpu", "InstanceId": iid, "InstanceType": "ml.p6e-gb200.36xlarge",
                              "LaunchTime": "2026-11-30T20:00:00Z", "InstanceStatus": {"Status": status},
                              "UltraServerInfo": {"Id": us, "Type": "ml.u-p6e-gb200x72"}})
            details[iid] = {"InstanceGroupName": "gpu", "InstanceId": iid, "PrivatePrimaryIp": ip,
                            "InstanceStatus": {"Status": status}, "UltraServerInfo": {"Id": us}}
    _validate("ListClusterNodes", "sagemaker", {"ClusterNodeSummaries": summaries})
    for d in details.values():
        _validate("DescribeClusterNode", "sagemaker", {"NodeDetails": d})
    (api / "nodes.json").write_text(json.dumps(summaries))
    (api / "details.json").write_text(json.dumps(details))
    (api / "cluster.json").write_text(json.dumps({"ClusterArn": ARN}))
    # HyperPod's own file (keys as AWS's lifecycle scripts read them)
    config = {"ClusterConfig": {"ClusterArn": ARN, "ClusterName": "demo"},
              "InstanceGroups": [{"Name": "gpu", "InstanceType": "ml.p6e-gb200.36xlarge", "Instances": [
                  {"InstanceName": f"gpu-{n}", "InstanceId": iid, "CustomerIpAddress": ip, "AgentIpAddress": "172.16.0.9"}
                  for n, (iid, ip) in enumerate({**mine, **HP_OTHER}.items())]}]}
    (root / "opt/ml/config").mkdir(parents=True, exist_ok=True)
    (root / "opt/ml/config/resource_config.json").write_text(json.dumps(config))


@pytest.fixture(scope="module")
def hyperpod(tmp_path_factory):
    ctx = context_for(make_project(ITYPE, "ubuntu-22.04", "hyperpod"), "gpu", "compute", "hyperpod")
    [profile] = profiles_for("hyperpod", "ubuntu-22.04", "aarch64")  # HyperPod's AMI, as its profile describes it
    image = Image.from_profile(profile, "aarch64", gpus=ctx.instance.gpus,
                               gpu_name="NVIDIA GB200",
                               efa_devices=ctx.instance.efa_devices, nvme_drives=4,
                               node_exporter=True)  # a node_exporter the fake download's digest cannot match
    sb = build_sandbox(tmp_path_factory.mktemp("gb200-hyperpod"), ctx, image)
    api = _install_emulator(sb)
    _hyperpod_api(api, sb.root, HP_MINE)
    return sb, sb.run()


@pytest.fixture(scope="module")
def hyperpod_eks(tmp_path_factory):
    """HyperPod on EKS: the same node API and resource_config.json as under Slurm (flavour trait imex_members)."""
    ctx = context_for(make_project(ITYPE, "al2023", "hyperpod-eks"), "gpu", "compute", "hyperpod-eks")
    [profile] = profiles_for("hyperpod-eks", "al2023", "aarch64")  # HyperPod's EKS AMI, as its profile describes it
    image = Image.from_profile(profile, "aarch64", gpus=ctx.instance.gpus, gpu_name="NVIDIA GB200",
                               efa_devices=ctx.instance.efa_devices, nvme_drives=4, node_exporter=True)
    sb = build_sandbox(tmp_path_factory.mktemp("gb200-hyperpod-eks"), ctx, image)
    api = _install_emulator(sb)
    _hyperpod_api(api, sb.root, HP_MINE)
    return sb, sb.run()


@pytest.mark.parametrize("which", ["hyperpod", "hyperpod_eks"])
def test_hyperpod_members_come_from_hyperpods_node_api_without_ec2(which, request):
    sb, res = request.getfixturevalue(which)
    assert res.rc == 0, res.out
    assert (sb.root / "etc/nvidia-imex/nodes_config.cfg").read_text() == "10.0.0.5\n10.0.0.17\n10.0.0.100\n"
    calls = _aws_calls(res)
    assert not [c for c in calls if c[0] == "ec2"], calls  # the execution role has no EC2 read permission
    assert ["sagemaker", "list-cluster-nodes", "--region", "us-west-2", "--cluster-name", ARN, "--query",
            "ClusterNodeSummaries[].[InstanceId,UltraServerInfo.Id,InstanceStatus.Status]", "--output", "text"] in calls
    described = sorted(c[c.index("--node-id") + 1] for c in calls if c[1] == "describe-cluster-node")
    assert described == sorted(HP_MINE)
    _check_against_botocore(calls)
    assert "systemctl restart --no-block nvidia-imex.service" in res.calls


def test_hyperpod_waits_for_slurm_jobs_before_applying_a_replacement(hyperpod):
    sb, _ = hyperpod
    api = sb.path / "state/api"
    scontrol = sb.root / "opt/slurm/bin/scontrol"
    scontrol.parent.mkdir(parents=True, exist_ok=True)
    scontrol.write_text('#!/bin/bash\necho "scontrol $*" >>"${SANDBOX}/calls.log"\n'
                        'echo "PID      JOBID    STEPID   LOCALID GLOBALID"\n'
                        '[[ -e "${SANDBOX}/state/slurm-busy" ]] && echo "4242     17       0        0       0"\nexit 0\n')
    scontrol.chmod(0o755)
    replaced = {k: v for k, v in HP_MINE.items() if k != "i-0aaaaaaaaaaaaaaa2"} | {"i-0aaaaaaaaaaaaaaa7": "10.0.0.70"}
    conf = sb.root / "etc/nvidia-imex/nodes_config.cfg"
    before = conf.read_text()
    try:
        _hyperpod_api(api, sb.root, replaced, pending="i-0aaaaaaaaaaaaaaa7")
        sb.set_state("slurm-busy")
        res = sb.run(script="../root/usr/local/sbin/fmcluster-imex")
        assert res.rc == 0, res.out
        assert "scontrol listpids" in res.calls and "Slurm job steps run on this node" in res.out
        assert conf.read_text() == before
        assert "systemctl restart --no-block nvidia-imex.service" not in res.calls
        (sb.path / "state/slurm-busy").unlink()
        res = sb.run(script="../root/usr/local/sbin/fmcluster-imex")
        assert res.rc == 0, res.out
        assert conf.read_text() == "10.0.0.5\n10.0.0.70\n10.0.0.100\n"  # a Pending replacement counts
        assert "systemctl restart --no-block nvidia-imex.service" in res.calls
    finally:
        (sb.path / "state/slurm-busy").unlink(missing_ok=True)
        _hyperpod_api(api, sb.root, HP_MINE)
        conf.write_text(before)


# -- ParallelCluster: its per-job prolog owns membership ---------------------------------------------------------

def test_parallelcluster_bundles_leave_membership_to_the_per_job_prolog(tmp_path):
    ctx = context_for(make_project(ITYPE, "ubuntu-24.04", "parallelcluster"), "gpu", "compute")
    image = Image(gpus=ctx.instance.gpus, gpu_name="NVIDIA GB200", efa_devices=ctx.instance.efa_devices, nvme_drives=4)
    sb = build_sandbox(tmp_path / "sb", ctx, image)
    (sb.root / "etc/nvidia-imex").mkdir(parents=True)
    # ParallelCluster's placeholder (cookbook templates/nvidia-imex/nvidia-imex-nodes.erb), rewritten per job
    (sb.root / "etc/nvidia-imex/nodes_config.cfg").write_text("172.31.51.93\n172.31.48.43\n")
    res = sb.run()
    assert res.rc == 0, res.out
    assert "files/fmcluster-imex" not in sb.manifest.files
    assert not (sb.root / "etc/systemd/system/fmcluster-imex.timer").exists()
    assert not [c for c in res.calls if re.search(r"systemctl .*(start|restart|stop) nvidia-imex", c)]
    assert not calls_of(res, "aws ec2 describe-instances") and not calls_of(res, "aws ec2 describe-instance-topology")
    assert "IMEX membership is set per job by the Slurm prolog the head node installs" in res.out


# -- ParallelCluster's per-job prolog, installed by the head node ------------------------------------------------

PROLOG = "opt/slurm/etc/scripts/prolog.d/91_fmcluster_imex_prolog.sh"


@pytest.fixture
def prolog_node(tmp_path):
    """A GB200 compute node of ParallelCluster (nvidia-imex enabled by the cookbook) with the prolog the head
    node's bundle installed in the shared /opt/slurm."""
    from fmcluster.bootstrap.bundles import HEAD_NODE_BUNDLE, render_dispatched_bundles

    from fmcluster.plan import make_plan

    project = make_project(ITYPE, "ubuntu-24.04", "parallelcluster")
    assets = render_dispatched_bundles(make_plan(project).cluster, tmp_path / "assets")
    head = assets.bundles / HEAD_NODE_BUNDLE
    assert (head / "steps/85-imex-prolog.sh").is_file()
    ctx = context_for(project, "gpu", "head", "parallelcluster", exporters=False, imex_prolog=True)
    sb = build_sandbox(tmp_path / "sb", ctx, Image(gpus=0, efa_devices=0, nvme_drives=0))
    res = sb.run()
    assert res.rc == 0, res.out[-2000:]
    prolog = sb.root / PROLOG
    assert prolog.read_bytes() == (head / "files/91_fmcluster_imex_prolog.sh").read_bytes()
    assert prolog.stat().st_mode & 0o111
    scontrol = sb.root / "opt/slurm/bin/scontrol"
    scontrol.parent.mkdir(parents=True, exist_ok=True)
    scontrol.write_text('#!/bin/bash\necho "scontrol $*" >>"${SANDBOX}/calls.log"\n'
                        'for ip in 10.0.0.17 10.0.0.5 10.0.0.100; do\n'
                        '  echo "NodeName=q1-st-cr1-${ip##*.} Arch=aarch64 NodeAddr=${ip} NodeHostName=ip State=ALLOCATED"\ndone\n')
    scontrol.chmod(0o755)
    (sb.path / "state/enabled-nvidia-imex.service").touch()  # what the cookbook's action :configure leaves
    (sb.root / "etc/nvidia-imex").mkdir(parents=True, exist_ok=True)
    (sb.root / "etc/nvidia-imex/nodes_config.cfg").write_text("172.31.51.93\n172.31.48.43\n")  # its placeholder
    return sb


def _prolog(sb, **env) -> list[str]:
    before = len((sb.path / "calls.log").read_text().splitlines())
    res = subprocess.run(["bash", str(sb.root / PROLOG)], env=sb.env | {"SLURM_JOB_ID": "7",
                         "SLURM_JOB_NODELIST": "q1-st-cr1-[5,17,100]"} | env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return (sb.path / "calls.log").read_text().splitlines()[before:]


def test_the_prolog_sets_the_jobs_members_for_an_exclusive_job_only(prolog_node):
    sb = prolog_node
    conf = sb.root / "etc/nvidia-imex/nodes_config.cfg"
    calls = _prolog(sb, SLURM_JOB_OVERSUBSCRIBE="OK")  # a shared job: IMEX is left alone
    assert conf.read_text() == "172.31.51.93\n172.31.48.43\n" and "systemctl restart nvidia-imex.service" not in calls
    calls = _prolog(sb, SLURM_JOB_OVERSUBSCRIBE="NO")
    assert "scontrol -ao show node q1-st-cr1-[5,17,100]" in calls
    assert conf.read_text() == "10.0.0.5\n10.0.0.17\n10.0.0.100\n"
    assert "systemctl restart nvidia-imex.service" in calls
    # the next exclusive job on the same nodes keeps the running domain
    calls = _prolog(sb, SLURM_JOB_OVERSUBSCRIBE="NO")
    assert "systemctl restart nvidia-imex.service" not in calls
    assert "IMEX already runs with these 3 members" in (sb.root / "var/log/fmcluster/imex-prolog.log").read_text()


def test_the_prolog_does_nothing_where_imex_is_not_enabled(prolog_node):
    sb = prolog_node
    # installed but not enabled: the cookbook installs IMEX with the driver, enables it on UltraServer nodes only
    (sb.path / "state/enabled-nvidia-imex.service").unlink()
    assert list(sb.root.glob("**/systemd/system/nvidia-imex.service"))
    calls = _prolog(sb, SLURM_JOB_OVERSUBSCRIBE="NO")
    assert not [c for c in calls if c.startswith("scontrol") or "restart" in c]


def test_no_prolog_without_an_ultraserver_queue(tmp_path):
    from fmcluster.bootstrap.bundles import HEAD_NODE_BUNDLE, render_dispatched_bundles

    from fmcluster.plan import make_plan

    assets = render_dispatched_bundles(make_plan(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster")).cluster,
                                       tmp_path / "assets")
    assert not (assets.bundles / HEAD_NODE_BUNDLE / "steps/85-imex-prolog.sh").exists()
    assert not (assets.bundles / HEAD_NODE_BUNDLE / "files/91_fmcluster_imex_prolog.sh").exists()
