"""The exporters step says what runs on the node it is rendered for: slurmctld on ParallelCluster's head node and
HyperPod's controller, not on PCS's login node (AWS runs PCS's controller)."""

from __future__ import annotations

import pytest
from fmcluster.bootstrap import render
from support.sandbox import context_for, make_project


@pytest.mark.parametrize("orchestrator, group, role, runs_slurmctld", [
    ("parallelcluster", "gpu", "head", True), ("hyperpod", "gpu", "head", True), ("pcs", None, "login", False)])
def test_the_slurm_metrics_comment_says_where_slurmctld_runs(orchestrator, group, role, runs_slurmctld) -> None:
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-24.04", orchestrator), group, role)
    assert ctx.slurm_metrics
    step = render.render_files(ctx)["steps/90-exporters.sh"]
    assert ("# This node runs slurmctld" in step) is runs_slurmctld
    assert ("slurmctld runs on the orchestrator's own controller" in step) is not runs_slurmctld
