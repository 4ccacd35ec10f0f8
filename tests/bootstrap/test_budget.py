"""The boot budget: counted from the instance's launch, with the retry helper's real worst case, one package-lock
allowance for all package-manager calls, and a deadline that stops the bundle before the scheduler gives up."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fmcluster.bootstrap import budget, bundles, context, profiles
from fmcluster.cli.bootstrap import app
from support import PROJECTS, ROOT
from support.sandbox import Image, build_sandbox, context_for, make_project
from typer.testing import CliRunner

from fmcluster import config
from fmcluster.flavours import FLAVOURS
from fmcluster.generate.hyperpod import instance_groups
from fmcluster.plan import make_plan

COMMON = ROOT / "templates/bootstrap/partials/common.sh.j2"


def _contexts():
    for name, project in sorted(PROJECTS.items()):
        for os_name in context.OPERATING_SYSTEMS:
            cluster = make_plan(project.model_copy(update={"os": os_name})).cluster
            flavour = context.ORCHESTRATOR_FLAVOUR[cluster.orchestrator]
            if os_name not in (FLAVOURS[flavour].operating_systems or (os_name,)):
                continue  # no image of that flavour for that OS (validate refuses the project)
            roles = ([(g.compute_group, g.role) for g in instance_groups(cluster)] if flavour == "hyperpod"
                     else [(g.name, "compute") for g in cluster.groups])
            for group, role in roles:
                yield f"{name}-{os_name}-{group}-{role}", context.context_for(cluster, group, role, flavour)


@pytest.mark.parametrize("key, ctx", list(_contexts()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_bundle_fits_its_scheduler_on_its_image(key, ctx):
    limit = ctx.traits.boot_limit
    for profile in profiles.profiles_for(ctx.flavour, ctx.os, ctx.arch):
        for label, present in profile.variants(ctx.arch):
            est = budget.estimate(ctx, profile, present)
            if limit.seconds is not None:
                assert est.fits, f"{key} on {profile.name} ({label}): {est.report()}"


def test_the_default_project_on_its_image_is_counted_from_launch_and_fits_with_a_margin():
    cluster = make_plan(config.load("default").project).cluster
    for name, ctx in bundles.deployed_contexts(cluster, None).items():
        (image,) = profiles.profiles_for(ctx.flavour, ctx.os, ctx.arch)
        est = budget.estimate(ctx, image)
        before = sum(p.seconds for p in est.before)
        launch = FLAVOURS["parallelcluster"].boot_before_kernel.seconds
        assert before == launch + 420  # launch and ParallelCluster's setup
        assert all(p.assumed and p.why for p in est.before)  # no source gives them: said so
        assert est.seconds == before + est.bundle_seconds
        # the head node against its own wait condition (HeadNodeBootstrapTimeout), compute nodes against ResumeTimeout
        assert est.limit.seconds == (2100 if ctx.role == "head" else 1800), name
        assert est.spare == est.limit.seconds - est.seconds - FLAVOURS["parallelcluster"].boot_margin.seconds
        assert est.fits and est.spare >= 0, est.report()
        text = "\n".join(est.report())
        assert "from launch" in text and "(assumed:" in text and f"{est.spare} s to spare" in text


def test_what_the_image_lacks_is_what_the_budget_counts():
    ctx = context_for(make_project("p6-b200.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "compute")
    (pc,) = profiles.profiles_for("parallelcluster", "ubuntu-22.04", "x86_64")
    on_image = budget.estimate(ctx, pc)
    # the 3.16 image lists no NVIDIA source: the exporter's install fetches the key and refreshes the index
    names = dict(on_image.lines)
    assert "nvidia repository key" in names and names["package index refresh"] == budget.REFRESH_S
    with_source = budget.estimate(ctx, pc, dict(pc.variants("x86_64")[0][1], cuda_source=True))
    assert "nvidia repository key" not in dict(with_source.lines)
    without_driver = budget.estimate(ctx, pc, dict(pc.variants("x86_64")[0][1], driver=False))
    driver = budget.COSTS["driver"]
    assert dict(without_driver.lines)["driver"] == sum(driver.installs) + driver.local
    bare = budget.estimate(ctx)
    assert {"driver", "fabric_manager", "nvlsm", "efa", "enroot", "pyxis", "dcgm"} <= {n for n, _ in bare.lines}
    # the bare OS is why ParallelCluster needs its AMI
    assert bare.seconds > FLAVOURS["parallelcluster"].boot_limit.seconds


def test_retries_count_every_attempt_and_the_waits_between():
    ctx = context_for(make_project(), "gpu", "compute")
    o = ctx.options
    assert (o.retry_attempts, o.retry_base_delay_s) == (5, 2)
    assert budget.retried(ctx, 100) == 5 * 100 + (2 + 4 + 8 + 16)
    # the figures come from the retry helper the nodes run: attempts, first delay, doubling
    common = COMMON.read_text()
    assert 'FMC_RETRY_ATTEMPTS="${FMC_RETRY_ATTEMPTS:-{{ ctx.options.retry_attempts }}}"' in common
    assert "delay=$((delay * 2))" in common
    bare = budget.estimate(ctx)
    downloads = sum(1 for c in budget.components(ctx) for d in budget.COSTS[c].downloads)
    assert bare.retried_seconds >= downloads * budget.retried(ctx, o.key_download_timeout_s)
    assert bare.retried_seconds > bare.bundle_seconds


def test_package_calls_share_one_lock_allowance_and_each_call_is_counted():
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "compute")
    bare = budget.estimate(ctx)
    installs = sum(len(budget.COSTS[c].installs) for c in budget.components(ctx))
    assert bare.calls >= installs + 1  # every install and the index refreshes
    assert dict(bare.lines)["package lock"] == ctx.options.pkg_lock_timeout_s


def test_the_lock_allowance_is_shared_by_every_call_of_a_boot(tmp_path):
    """Earlier calls of this boot waited 20 s of a 30 s allowance: the next waits 10 s more, not 30 again (each call
    used to wait up to pkg_lock_timeout_s, and apt itself once more per attempt: DPkg::Lock::Timeout)."""
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "compute",
                      pkg_lock_timeout_s=30)
    sb = build_sandbox(tmp_path / "sb", ctx, Image(dcgm_exporter=False))
    res = sb.run()
    assert res.rc == 0, res.out[-2000:]
    apt = [c for c in res.calls if c.startswith("apt-get ")]
    assert apt and all("DPkg::Lock::Timeout=0" in c for c in apt)  # apt does not wait again: fmc_wait_pkg_lock did
    sb.env["FMC_RUN"] = "boot-1"
    (sb.root / "var/cache/fmcluster/.pkg-lock-waited.boot-1").write_text("20\n")
    (sb.path / "state/lock-held").write_text("100\n")
    (sb.root / "var/lib/fmcluster/markers/10-preflight").unlink(missing_ok=True)
    res = sb.run(script="steps/10-preflight.sh")
    assert res.rc != 0
    assert len([c for c in res.calls if c == "sleep 5"]) == 2, res.calls
    assert "still locked after 30s of waiting this boot" in res.out


def test_the_entry_script_stops_the_steps_at_the_deadline_counted_from_boot(tmp_path):
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "compute")
    deadline = budget.deadline_s(ctx)
    pc = FLAVOURS["parallelcluster"]
    assert deadline == 1800 - pc.boot_before_kernel.seconds - pc.boot_margin.seconds
    sb = build_sandbox(tmp_path / "sb", ctx, Image(dcgm_exporter=False))
    entry = (sb.bundle / "bootstrap.sh").read_text()
    assert f"+ {deadline}))" in entry and "/proc/uptime" in entry
    (sb.root / "proc").mkdir(exist_ok=True)
    (sb.root / "proc/uptime").write_text(f"{deadline - 6}.52 1000.00\n")  # booted long ago: 6 s left
    sb.fail_download(ctx.nvidia_repo_key.file, 10)  # NVIDIA's key never comes: its download is retried
    res = sb.run()
    assert re.search(r"giving up after [1-4] attempts: fmc_curl .*the boot's deadline is \d+s away; the scheduler "
                     r"would stop waiting", res.out), res.out[-1500:]
    assert f"[90-exporters] FAILED: could not download {ctx.nvidia_repo_url}/{ctx.nvidia_repo_key.file}" in res.out
    # DCGM and its exporter are monitoring: the node joins without them (tests/bootstrap/test_monitoring_degrades.py)
    assert res.rc == 0 and "monitoring degraded: dcgm-exporter is not installed" in res.out
    key_attempts = [c for c in res.calls if c.startswith("curl ") and ctx.nvidia_repo_key.file in c]
    assert len(key_attempts) < ctx.options.retry_attempts  # it would have tried 5 times without the deadline
    assert all(int(re.search(r"--max-time (\d+)", c).group(1)) <= 6 for c in key_attempts)


def test_self_managed_nodes_have_no_deadline():
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "none"), "gpu", "compute")
    assert budget.deadline_s(ctx) is None


def test_the_limits_name_their_source_or_say_unconfirmed():
    assert FLAVOURS["parallelcluster"].boot_limit.seconds == 1800
    assert "update.rb:55" in FLAVOURS["parallelcluster"].boot_limit.source
    assert FLAVOURS["hyperpod"].boot_limit.unconfirmed and FLAVOURS["hyperpod"].boot_limit.seconds is None
    # no public source states how long PCS waits for a node's slurmd: no figure is invented
    assert FLAVOURS["pcs"].boot_limit.unconfirmed and FLAVOURS["pcs"].boot_limit.seconds is None
    assert all(f.boot_limit.source for f in FLAVOURS.values())  # every flavour says where its limit comes from
    for cost in budget.COSTS.values():
        assert cost.why
    assert "aws/aws-parallelcluster#6761" in FLAVOURS["parallelcluster"].boot_before[1].why


def test_render_shows_the_budget_only_for_the_images_the_flavour_boots(tmp_path: Path):
    result = CliRunner().invoke(app, ["render", str(ROOT / "examples/p5-parallelcluster.yaml"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert "boot budget: slowest boot without a failed attempt" in result.output
    assert "on parallelcluster-" in result.output and "within Slurm ResumeTimeout" in result.output
    assert "from launch" in result.output and "EC2 launch: 120 s (assumed" in result.output
    assert "on the bare OS" not in result.output  # a ParallelCluster node never boots the bare OS
    assert "a re-run (an update's OnNodeUpdated, or by hand) has " in result.output


def test_the_deep_dcgm_diagnostic_is_a_project_key_off_by_default_whose_time_the_budget_counts():
    text = "name: demo\navailability_zone_id: use1-az6\ncompute_groups:\n  - {name: gpu, instance_type: p5.48xlarge, count: 2}\n"
    plain = context.context_for(make_plan(config.parse(text).project).cluster, "gpu", "compute")
    deep = context.context_for(make_plan(config.parse(text + "health:\n  deep_dcgm_diagnostic: true\n").project).cluster,
                               "gpu", "compute")
    assert not plain.options.deep_health_check and deep.options.deep_health_check
    from fmcluster.bootstrap import render
    assert "dcgmi diag -r 2" in render.render_files(deep)["steps/99-healthcheck.sh"]
    assert "dcgmi diag -r 2" not in render.render_files(plain)["steps/99-healthcheck.sh"]
    assert dict(budget.estimate(deep).lines)["health check"] == budget.HEALTH_S + budget.DEEP_HEALTH_S
    assert dict(budget.estimate(plain).lines)["health check"] == budget.HEALTH_S
    from fmcluster.errors import ConfigError
    with pytest.raises(ConfigError, match="deep_dcgm"):
        config.parse(text + "health:\n  deep_dcgm_diagnostics: true\n")
