"""The HyperPod Helm chart as fmcluster installs it, rendered offline with Helm from the CDK kubectl layer: one
render hash over repeated renders, every taint of the project tolerated by the pods that must run on its nodes, the
project's Region in every Region-mapped (ECR) image, the device plugins' affinity the project's instance types. The
stub chart in CI; the real one where the workstation's cache holds it (``fmcluster hyperpod-eks fetch-chart``)."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest
from support import ROOT
from support.helm import documents, helm_binary, render

from fmcluster import config
from fmcluster.generate import hyperpod_chart as chart
from fmcluster.generate.hyperpod_eks import HEALTH_TAINT, taints
from fmcluster.plan import make_plan

REGION = "eu-south-2"  # a Region whose EKS images live in their own account (not 602401143452)
EXAMPLE = ROOT / "examples" / "p5en-hyperpod-eks.yaml"
ECR = re.compile(r"^(\d{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com/")


def _charts() -> list[Path]:
    found = [chart.STUB_DIR]
    cached, real = chart.chart_dir()
    if real:
        found.append(cached)
    return found


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return helm_binary(tmp_path_factory.mktemp("helm"))


@pytest.fixture(scope="module")
def cluster():
    return make_plan(config.load(EXAMPLE).project).cluster


@pytest.fixture(scope="module", params=_charts(), ids=lambda p: "stub" if p == chart.STUB_DIR else "real")
def rendered(request, helm, cluster, tmp_path_factory) -> list[str]:
    values = chart.chart_values(cluster, REGION, chart.eks_image_account(REGION))
    work = tmp_path_factory.mktemp("render")
    return [render(helm, request.param, values, chart.RELEASE, chart.NAMESPACE, work) for _ in range(3)]


def _pods(text: str) -> list[tuple[str, dict]]:
    out = []
    for doc in documents(text):
        spec = doc.get("spec", {}).get("template", {}).get("spec")
        if spec is not None:
            out.append((f"{doc['kind']}/{doc['metadata']['name']}", spec))
    return out


def _tolerates(tolerations: list[dict], key: str, value: str | None, effect: str) -> bool:
    for t in tolerations or []:
        if t.get("effect") not in (None, effect):
            continue
        if t.get("operator") == "Exists" and t.get("key") in (None, key):
            return True
        if t.get("key") == key and t.get("value") == value:
            return True
    return False


def test_one_render_hash_over_repeated_renders(rendered) -> None:
    assert len({hashlib.sha256(text.encode()).hexdigest() for text in rendered}) == 1


def test_every_daemonset_tolerates_every_taint_the_project_sets(rendered, cluster) -> None:
    wanted = taints(cluster)
    assert {t.key for t in wanted} >= {"nvidia.com/gpu", HEALTH_TAINT}
    daemonsets = [(name, spec) for name, spec in _pods(rendered[0]) if name.startswith("DaemonSet/")]
    assert daemonsets
    missing = [f"{name}: {t.key}={t.value}:{t.effect}" for name, spec in daemonsets for t in wanted
               if not _tolerates(spec.get("tolerations"), t.key, t.value, t.effect)]
    assert not missing, "\n".join(missing)


def test_the_toleration_check_finds_a_missing_one() -> None:
    assert not _tolerates([{"key": "other", "operator": "Exists"}], "nvidia.com/gpu", "true", "NoSchedule")
    assert _tolerates([{"operator": "Exists", "effect": "NoSchedule"}], "nvidia.com/gpu", "true", "NoSchedule")


def test_every_regional_image_is_in_the_projects_region(rendered) -> None:
    images = [c["image"] for _, spec in _pods(rendered[0]) for c in spec.get("containers", [])]
    regional = [ECR.match(i) for i in images if ECR.match(i)]
    assert regional, images
    assert {m.group(2) for m in regional} == {REGION}
    efa = next(i for i in images if "aws-efa-k8s-device-plugin" in i)
    assert ECR.match(efa).group(1) == chart.EKS_IMAGE_ACCOUNTS[REGION]  # type: ignore[union-attr]


def test_device_plugins_select_the_projects_instance_types(rendered, cluster) -> None:
    for name, spec in _pods(rendered[0]):
        if "device-plugin" in name:
            terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            [expression] = terms["nodeSelectorTerms"][0]["matchExpressions"]
            assert expression["values"] == ["ml.p5en.48xlarge"], name


def test_a_stale_subchart_archive_is_left_out_of_the_tree_hash(tmp_path: Path) -> None:
    """The pin's hash is over the source tree without the stale archive: adding it back changes nothing, changing
    a source file changes the hash."""
    copy = tmp_path / "chart"
    shutil.copytree(chart.STUB_DIR, copy)
    before = chart.tree_sha256(copy)
    (copy / "charts").mkdir()
    (copy / chart.STALE_FILES[0]).write_bytes(b"stale")
    assert chart.tree_sha256(copy) == before
    (copy / "values.yaml").write_text((copy / "values.yaml").read_text() + "\n# changed\n")
    assert chart.tree_sha256(copy) != before


def test_synthesis_uses_the_stub_unless_the_cache_holds_the_pinned_tree(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(chart.CHART_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert chart.chart_dir() == (chart.STUB_DIR, False)
    shutil.copytree(chart.STUB_DIR, chart.cache_dir())  # a chart in the cache, but not the pinned tree
    assert chart.chart_dir() == (chart.STUB_DIR, False)
