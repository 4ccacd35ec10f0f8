"""The boot budget: every bundle's worst case on its flavour's image fits the scheduler's limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from fmcluster.bootstrap import budget, context, profiles
from fmcluster.cli.bootstrap import app
from support import PROJECTS, ROOT
from support.sandbox import context_for, make_project
from typer.testing import CliRunner

from fmcluster.generate.hyperpod import instance_groups
from fmcluster.plan import make_plan


def _contexts():
    for name, project in sorted(PROJECTS.items()):
        for os_name in context.OPERATING_SYSTEMS:
            cluster = make_plan(project.model_copy(update={"os": os_name})).cluster
            flavour = context.ORCHESTRATOR_FLAVOUR[cluster.orchestrator]
            roles = ([(g.compute_group, g.role) for g in instance_groups(cluster)] if flavour == "hyperpod"
                     else [(g.name, "compute") for g in cluster.groups])
            for group, role in roles:
                yield f"{name}-{os_name}-{group}-{role}", context.context_for(cluster, group, role, flavour)


@pytest.mark.parametrize("key, ctx", list(_contexts()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_bundle_fits_its_scheduler_on_its_image(key, ctx):
    limit = budget.LIMITS[ctx.flavour]
    for profile in profiles.profiles_for(ctx.flavour, ctx.os, ctx.arch):
        for label, present in profile.variants(ctx.arch):
            est = budget.estimate(ctx, profile, present)
            if limit.seconds is not None:
                assert est.fits, f"{key} on {profile.name} ({label}): {est.lines}"


def test_what_the_image_lacks_is_what_the_budget_counts():
    ctx = context_for(make_project("p6-b200.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "compute")
    (pc,) = profiles.profiles_for("parallelcluster", "ubuntu-22.04", "x86_64")
    on_image = budget.estimate(ctx, pc)
    without_driver = budget.estimate(ctx, pc, dict(pc.variants("x86_64")[0][1], driver=False))
    assert without_driver.seconds - on_image.seconds == budget.COSTS["driver"].seconds
    bare = budget.estimate(ctx)
    assert {"driver", "fabric_manager", "nvlsm", "efa", "enroot", "pyxis", "dcgm"} <= {n for n, _ in bare.lines}
    assert ("package lock", ctx.options.pkg_lock_timeout_s) in bare.lines
    assert bare.seconds > budget.LIMITS["parallelcluster"].seconds  # the bare OS is why ParallelCluster needs its AMI


def test_the_limits_name_their_source_or_say_unconfirmed():
    assert budget.LIMITS["parallelcluster"].seconds == 1800
    assert "update.rb:55" in budget.LIMITS["parallelcluster"].source
    assert budget.LIMITS["hyperpod"].unconfirmed and budget.LIMITS["hyperpod"].seconds is None
    # no public source states how long PCS waits for a node's slurmd: no figure is invented
    assert budget.LIMITS["pcs"].unconfirmed and budget.LIMITS["pcs"].seconds is None
    assert set(budget.LIMITS) == set(context.FLAVOURS)
    for cost in [*budget.COSTS.values(), *budget.FIXED.values()]:
        assert cost.why


def test_render_prints_the_estimate(tmp_path: Path):
    result = CliRunner().invoke(app, ["render", str(ROOT / "examples/p5-parallelcluster.yaml"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert "boot budget: worst case" in result.output
    assert "on parallelcluster-" in result.output and "within Slurm ResumeTimeout" in result.output
    assert "on the bare OS" in result.output
