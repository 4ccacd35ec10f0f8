"""`acceptance report` reads the Kubernetes jobs' logs as `kubectl logs` saved them: several acceptance logs in one
file (an MPIJob launcher's runs one after another; a node-check pod's node and dcgm logs), and several pods' lines
interleaved under `kubectl logs --prefix` labels. The same logs judged from the Slurm layout (one per file) and from
the kubectl layout give the same report."""

from __future__ import annotations

from itertools import zip_longest
from pathlib import Path

import pytest
from support import load

from fmcluster import checks
from fmcluster.acceptance import build_report
from fmcluster.acceptance.logs import AcceptanceError, read_logs
from fmcluster.bootstrap import kubernetes_jobs

FIXTURE = Path(__file__).parent / "fixtures" / "p5-pair" / "logs"


def _lines(name: str) -> list[str]:
    return (FIXTURE / name).read_text(encoding="utf-8").splitlines()


def _kubectl_layout(folder: Path) -> Path:
    logs = folder / "logs"
    logs.mkdir(parents=True)
    # `kubectl logs job/fmc-nccl-train-launcher > logs/nccl-train.log`: the launcher's runs, one after the other
    (logs / "nccl-train.log").write_text("\n".join(_lines("nccl-train-pair-1.log") * 2) + "\n", encoding="utf-8")
    # `kubectl logs -l job-name=fmc-node-checks-train --prefix > logs/node-checks-train.log`: two pods, interleaved
    pod_a = [f"[pod/fmc-node-checks-train-0-x7k2p/node-checks] {line}"
             for line in _lines("node-train.log") + _lines("dcgm-ip-10-1-0-11.log")]
    pod_b = [f"[pod/fmc-node-checks-train-1-q9z4m/node-checks] {line}" for line in _lines("dcgm-ip-10-1-0-12.log")]
    mixed = [line for pair in zip_longest(pod_a, pod_b) for line in pair if line is not None]
    (logs / "node-checks-train.log").write_text("\n".join(mixed) + "\n", encoding="utf-8")
    return folder


def _judged(report) -> dict:
    out = report.to_json()
    for section in ("nccl", "dcgm", "nodes", "slow_nodes", "builds", "findings"):
        for entry in out[section]:
            if isinstance(entry, dict):
                entry.pop("file", None)
    out["findings"] = sorted(f["message"] for f in out["findings"])
    return out


def test_the_kubectl_layout_is_judged_like_the_slurm_layout(tmp_path: Path):
    slurm = build_report(FIXTURE.parent)
    kube = build_report(_kubectl_layout(tmp_path / "k8s"))
    assert len(kube.runs) == 2 * len(slurm.runs) and len(kube.dcgm) == len(slurm.dcgm) == 2
    expected = _judged(slurm)
    expected["nccl"] = expected["nccl"] * 2
    got = _judged(kube)
    assert got["dcgm"] == expected["dcgm"] and got["nodes"] == expected["nodes"]
    assert got["nccl"] == expected["nccl"]
    assert got["passed"] == expected["passed"]


def test_each_pod_keeps_its_own_lines(tmp_path: Path):
    logs = read_logs(_kubectl_layout(tmp_path / "k8s") / "logs" / "node-checks-train.log")
    assert [(log.kind, log.extra["pod"]) for log in logs] == [
        ("node", "fmc-node-checks-train-0-x7k2p"), ("dcgm", "fmc-node-checks-train-0-x7k2p"),
        ("dcgm", "fmc-node-checks-train-1-q9z4m")]
    assert all(log.ended for log in logs)
    assert not any(line.startswith("[pod/") for log in logs for line in log.lines)


def test_a_file_with_no_header_still_says_what_it_is_not(tmp_path: Path):
    path = tmp_path / "x.log"
    path.write_text("[pod/a/b] hello\n", encoding="utf-8")
    with pytest.raises(AcceptanceError, match="no FMC-ACCEPTANCE line"):
        read_logs(path)


def test_the_report_holds_a_kubernetes_render_to_its_manifest(tmp_path: Path):
    """Render a two-node hyperpod-eks project, save its jobs' logs as its README says (kubectl layout), report: the
    nodes' checks are all there, and a test the MPIJob runs but whose log is missing fails by the job's file."""
    loaded = load({"name": "k8s", "availability_zone_id": "use1-az6", "os": "al2023",
                   "orchestrator": {"type": "hyperpod-eks",
                                    "hyperpod_eks": {"admins": ["arn:aws:iam::111122223333:role/admin"]}},
                   "compute_groups": [{"name": "train", "instance_type": "p5.48xlarge", "count": 2}]})
    plan, _ = checks.validate(loaded)
    out = tmp_path / "acc"
    kubernetes_jobs.render_acceptance(plan.cluster, out, image="nccl-tests:1")
    _kubectl_layout(tmp_path / "logs-only")
    for log in (tmp_path / "logs-only" / "logs").iterdir():
        text = log.read_text(encoding="utf-8").replace("scope=pair", "scope=group")
        (out / "logs" / log.name).write_text(text, encoding="utf-8")
    report = build_report(out)
    messages = [f.message for f in report.findings if f.level == "fail"]
    assert not any("node checks from" in m or "dcgmi diag from" in m for m in messages), messages
    assert "group all_gather_perf: 0 of 1 run(s) left a log: submit train/nccl.yaml (again)" in messages
    assert not any("all_reduce_perf: 0 of" in m for m in messages)
