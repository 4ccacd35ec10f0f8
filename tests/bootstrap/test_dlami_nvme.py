"""The DLAMI's dlami-nvme.service owns the instance store until it has finished: the scratch step waits for it (as
AWS's HyperPod lifecycle scripts do, up to 120 s; FACTS.md section 4, "DLAMI NVMe") before it touches a drive, then
bind-mounts what that service mounted. Building a RAID while it runs would take its drives from under it."""

from __future__ import annotations

from support.sandbox import FSX, Image, build_sandbox, context_for, make_project

DLAMI_UNITS = ("docker.service", "slurmd.service", "nvidia-persistenced.service", "nvidia-fabricmanager.service",
               "nvidia-dcgm-exporter.service", "dlami-nvme.service")


def _sandbox(tmp_path, states: list[str]):
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "none"), "gpu", "compute", fsx=FSX)
    sb = build_sandbox(tmp_path / "sb", ctx, Image(units=DLAMI_UNITS))
    (sb.path / "state/activestate-dlami-nvme.service").write_text("".join(f"{s}\n" for s in states))
    # The DLAMI mounts its LVM volume over the drives at /opt/dlami/nvme once its service is active.
    (sb.path / "stubs/lsblk").write_text(
        "#!/bin/bash\n" + r"""printf 'lsblk %s\n' "$*" >>"${SANDBOX}/calls.log"
if [[ "$(sed -n 1p "${SANDBOX}/state/activestate-dlami-nvme.service")" == active ]]; then echo /opt/dlami/nvme; fi
""")
    return sb


def test_the_raid_waits_for_dlami_nvme_and_takes_what_it_mounted(tmp_path):
    sb = _sandbox(tmp_path, ["activating", "activating", "activating", "active"])
    res = sb.run()
    assert res.rc == 0, res.out[-2000:]
    waits = [i for i, c in enumerate(res.calls) if c == "sleep 2"]
    shows = [i for i, c in enumerate(res.calls) if c.startswith("systemctl show -p ActiveState") and "dlami-nvme" in c]
    assert len(waits) == 3 and len(shows) == 4, res.calls
    assert not [c for c in res.calls if c.startswith(("mdadm --create", "mkfs.xfs"))]
    first_lsblk = next(i for i, c in enumerate(res.calls) if c.startswith("lsblk"))
    assert first_lsblk > max(waits)  # no drive is looked at before the service has finished
    assert "the instance store is already mounted at /opt/dlami/nvme; bind-mounting it at /scratch" in res.log
    assert any(c.startswith("mount --bind") and c.endswith("/scratch") for c in res.calls)


def test_a_dlami_nvme_that_never_finishes_stops_the_step_without_touching_the_drives(tmp_path):
    sb = _sandbox(tmp_path, ["activating"])
    res = sb.run()
    assert res.rc != 0
    assert "dlami-nvme.service has not finished after 120s (state activating)" in res.out
    assert not [c for c in res.calls if c.startswith(("mdadm", "mkfs.xfs", "lsblk", "mount --bind"))]
    assert len([c for c in res.calls if c == "sleep 2"]) == 60


def test_without_dlami_nvme_nothing_waits(tmp_path):
    ctx = context_for(make_project("p5.48xlarge", "ubuntu-22.04", "parallelcluster"), "gpu", "compute")
    sb = build_sandbox(tmp_path / "sb", ctx, Image())
    res = sb.run()
    assert res.rc == 0, res.out[-2000:]
    assert not [c for c in res.calls if "dlami-nvme" in c and c.startswith("systemctl show")]
    assert any(c.startswith("mdadm --create /dev/md/fmcluster-scratch") for c in res.calls)
