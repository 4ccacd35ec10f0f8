"""The plan's lines for HyperPod on EKS say what the cluster is (issue 41 item 9): the image HyperPod boots, not the
project's `os`; no placement group, which HyperPod takes none of; teams enforced by task governance's quotas, listed
once; the control plane's fee at the rate of its Kubernetes version's support today."""

from __future__ import annotations

import io
from datetime import date

import pytest
from rich.console import Console
from support import ROOT

from fmcluster import checks, config, eks_versions
from fmcluster.cli.planview import print_plan


def _text(name: str) -> str:
    plan, _ = checks.validate(config.load(ROOT / "examples" / f"{name}.yaml"))
    buffer = io.StringIO()
    print_plan(plan, Console(file=buffer, width=200, color_system=None), wide=True)
    return " ".join(buffer.getvalue().split())


def test_the_teams_example_says_what_hyperpod_eks_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eks_versions, "today", lambda: date(2026, 12, 2))
    text = _text("p5-hyperpod-eks-teams")
    assert "OS ubuntu" not in text and "OS HyperPod's EKS AMI (Amazon Linux)" in text
    assert " new " not in text.split("EFA and addresses", 1)[1].split("network", 1)[0]
    assert "takes no placement group" in text
    assert "not enforced here" not in text and "HyperPod task governance (Kueue)" in text
    assert "EKS control plane (Kubernetes 1.35, standard support)" in text


def test_the_hyperpod_slurm_plan_shows_no_placement_group_either() -> None:
    text = _text("p5en-hyperpod")
    assert "takes no placement group" in text
