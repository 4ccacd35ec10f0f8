"""HyperPod in extended mode (LifeCycleConfig.OnInitComplete): every instance group's bundle boots on HyperPod's
image (its profile) after HyperPod has set up Slurm, Docker/enroot and the FSx mount, and cooperates with them:
it installs and starts no Slurm, mounts no FSx, installs no Docker; only the controller reconfigures Slurm (for
pyxis, with an explicit include) and a compute node restarts its own slurmd when pyxis changed."""

from __future__ import annotations

import re

import pytest
from fmcluster.bootstrap.bundles import render_lifecycle_bundles
from fmcluster.bootstrap.profiles import profiles_for
from support.sandbox import Image, build_sandbox, context_for, make_project

from fmcluster.plan import make_plan

ROLES = {"controller": "head", "login": "login", "gpu": "compute"}


def _project():
    return make_project("p5en.48xlarge", "ubuntu-22.04", "hyperpod")


def test_the_lifecycle_bundles_are_one_per_instance_group(tmp_path):
    bundles = render_lifecycle_bundles(make_plan(_project()).cluster, tmp_path / "lc")
    assert bundles.on_init_complete == "bootstrap.sh"
    for group in bundles.sums:
        assert (bundles.root / group / bundles.on_init_complete).is_file()


@pytest.mark.parametrize("containers", [False, True], ids=["profile-as-written", "with-enroot-and-pyxis"])
@pytest.mark.parametrize("role", ["head", "login", "compute"])
def test_a_bundle_cooperates_with_what_hyperpod_set_up(tmp_path, role, containers):
    ctx = context_for(_project(), "gpu", role, "hyperpod")
    [profile] = profiles_for("hyperpod", "ubuntu-22.04", "x86_64")
    hardware = ({"gpus": ctx.instance.gpus, "gpu_name": "NVIDIA H200", "efa_devices": ctx.instance.efa_devices}
                if ctx.instance else {"gpus": 0, "efa_devices": 0, "nvme_drives": 0})
    # with-enroot-and-pyxis: HyperPod's default software in extended mode includes enroot (FACTS.md section 5); the
    # profile, written from the customer managed mode's scripts, says the AMI has neither: boot both.
    present = {"enroot": True, "pyxis": True} if containers else {}
    image = Image.from_profile(profile, "x86_64", present=present, node_exporter=True, **hardware)
    sb = build_sandbox(tmp_path / role, ctx, image)
    # what HyperPod's Slurm setup leaves on the controller: slurmctld's unit and scontrol
    if role == "head":
        (sb.root / "etc/systemd/system").mkdir(parents=True, exist_ok=True)
        (sb.root / "etc/systemd/system/slurmctld.service").write_text("[Service]\nExecStart=/opt/slurm/sbin/slurmctld\n")
        scontrol = sb.root / "opt/slurm/bin/scontrol"
        scontrol.parent.mkdir(parents=True, exist_ok=True)
        scontrol.write_text('#!/bin/bash\necho "scontrol $*" >>"${SANDBOX}/calls.log"\n')
        scontrol.chmod(0o755)
    res = sb.run()
    assert res.rc == 0, res.out[-3000:]
    slurm_units = [c for c in res.calls if re.match(r"systemctl (start|enable|stop) (?!fmcluster-)\S*slurm", c)]
    assert slurm_units == []  # HyperPod started Slurm; the bundle starts none of it (only our metrics script)
    installs = [c for c in res.calls if c.startswith(("apt-get", "dnf")) and " install " in f" {c} "]
    assert not [c for c in installs if re.search(r"\bslurm|docker", c)], installs
    assert not [c for c in res.calls if c.startswith("mount") and "lustre" in c]  # HyperPod mounts FSx itself
    restarts = [c for c in res.calls if re.match(r"systemctl restart slurm", c)]
    if role == "head":
        # pyxis set up (the image had it, or a pinned build): the controller made Slurm reread plugstack.conf
        pyxis = (sb.root / "opt/slurm/etc/plugstack.conf.d/pyxis.conf").exists()
        assert ("scontrol reconfigure" in res.calls) == pyxis == containers
        assert restarts == []
    else:
        assert set(restarts) <= {"systemctl restart slurmd.service"}
