"""The boot budget: each step's worst-case time, stated once, summed for a bundle on an image, against the scheduler's limit.

A node the scheduler waits for must finish its bootstrap in time: ParallelCluster's Slurm gives a powering-up
node ``ResumeTimeout`` seconds, then marks it down and replaces it (a static capacity-block node loops).
What a bundle costs depends on the image: on the flavour's own image most steps only verify and reuse; on
the bare OS every component is downloaded, built and installed. :func:`estimate` sums the worst case of what
this image lacks, from :data:`COSTS` (one figure per component, with its reason; figures that are estimates
say so) plus the fixed costs every boot can meet (:data:`FIXED`).
"""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.bootstrap.context import BootstrapContext, Flavour
from fmcluster.bootstrap.profiles import ImageProfile


@dataclass(frozen=True)
class Cost:
    seconds: int
    why: str
    estimate: bool = True
    """No source gives the figure: a deliberately pessimistic estimate."""


@dataclass(frozen=True)
class Limit:
    seconds: int | None
    name: str
    source: str
    unconfirmed: bool = False


LIMITS: dict[Flavour, Limit] = {
    "parallelcluster": Limit(
        1800, "Slurm ResumeTimeout (ParallelCluster DevSettings/Timeouts/ComputeNodeBootstrapTimeout)",
        "aws/aws-parallelcluster-cookbook@f75d84c38ecfac1891e5f3e8fe2d424cc3e7448d cookbooks/aws-parallelcluster-slurm/"
        "libraries/update.rb:55 (ComputeNodeBootstrapTimeout or 1800) and files/default/head_node_slurm/slurm/templates/"
        "slurm_parallelcluster.conf:10 (ResumeTimeout={{ compute_node_bootstrap_timeout }}); a later cookbook change "
        "(aws-parallelcluster-cookbook #3175) speaks of 2100 s: the smaller is used"),
    "hyperpod": Limit(
        None, "HyperPod lifecycle script limit", "unconfirmed: no public source states how long HyperPod waits for "
        "OnInitComplete before it fails the node", unconfirmed=True),
    "self-managed": Limit(None, "none", "self-managed nodes have no scheduler waiting on them"),
    "pcs": Limit(
        None, "PCS node registration/boot limit", "unconfirmed: the PCS user guide says when user data runs (shell "
        "parts after the instance registers, before slurmd starts: \"Working with Amazon EC2 user data\") but no "
        "public source found states how long PCS waits for slurmd (a ResumeTimeout is not among PCS's custom Slurm "
        "settings we found)", unconfirmed=True),
}

FIXED: dict[str, Cost] = {
    "package lock": Cost(0, "waiting for another apt/dnf (cloud-init, unattended-upgrades): bounded by the bundle's "
                            "pkg_lock_timeout_s (fmc_wait_pkg_lock stops the step there); filled in per bundle", estimate=False),
    "repository refresh": Cost(120, "apt-get update / dnf makecache once per boot, with up to 4 retries (backoff 2+4+8+16 s)"),
    "verify and reuse": Cost(10, "per step: version queries (nvidia-smi, dpkg-query, fi_info), markers, unit checks"),
    "health check": Cost(60, "nvidia-smi queries, fi_info, NVLink status, exporter probes (the deep DCGM diagnostic "
                             "is not counted: it is off by default)"),
}

COSTS: dict[str, Cost] = {
    # component -> the worst case of installing it when the image lacks it
    "driver": Cost(900, "NVIDIA driver packages (~500 MB) at a 10 MB/s floor with retries, DKMS build of the open "
                        "kernel modules, initramfs"),
    "fabric_manager": Cost(120, "Fabric Manager and NSCQ packages"),
    "imex": Cost(60, "nvidia-imex package"),
    "nvlsm": Cost(60, "nvlsm package"),
    "efa": Cost(600, "EFA installer tarball, GPG check, rdma-core/libfabric packages and the DKMS build of the efa module"),
    "gdrcopy": Cost(300, "GDRCopy built from source into packages, gdrdrv module"),
    "lustre": Cost(180, "Lustre client repository and the kernel module package"),
    "enroot": Cost(60, "two enroot packages"),
    "pyxis": Cost(120, "pyxis built against Slurm's headers"),
    "dcgm": Cost(180, "DCGM core and CUDA packages"),
    "dcgm_exporter": Cost(60, "the dcgm-exporter package"),
    "node_exporter": Cost(90, "node_exporter and Prometheus agent tarballs (sha256-checked)"),
}


def components(ctx: BootstrapContext) -> list[str]:
    """The components this bundle installs when the image lacks them."""
    names = {s.name for s in ctx.steps()}
    out: list[str] = []
    i = ctx.instance
    if "20-nvidia" in names and i is not None:
        out.append("driver")
        if i.needs_imex:
            out.append("imex")
        elif i.nvswitch:
            out.append("fabric_manager")
            if ctx.needs_nvlsm:
                out.append("nvlsm")
    out += [c for c, step in (("efa", "30-efa"), ("gdrcopy", "40-gdrcopy"), ("lustre", "70-lustre")) if step in names]
    if "80-containers" in names:
        out += ["enroot", "pyxis"] if ctx.slurm else ["enroot"]
    if "90-exporters" in names:
        out += ["node_exporter", "dcgm", "dcgm_exporter"] if ctx.gpu else ["node_exporter"]
    return out


@dataclass(frozen=True)
class Estimate:
    image: str
    seconds: int
    lines: list[tuple[str, int]]
    limit: Limit

    @property
    def fits(self) -> bool | None:
        return None if self.limit.seconds is None else self.seconds <= self.limit.seconds

    def text(self) -> str:
        verdict = ("no limit to compare" if self.limit.seconds is None
                   else f"{'within' if self.fits else 'OVER'} {self.limit.name} {self.limit.seconds} s")
        if self.limit.unconfirmed:
            verdict = f"{self.limit.name}: unconfirmed"
        return f"worst case {self.seconds} s on {self.image} ({verdict})"


def estimate(ctx: BootstrapContext, profile: ImageProfile | None = None,
             present: dict[str, bool] | None = None) -> Estimate:
    """The worst-case boot time of ``ctx``'s bundle on ``profile``'s image (as written, or as ``present`` says;
    None: the bare OS, where everything is installed)."""
    if profile is not None and present is None:
        present = dict(profile.variants(ctx.arch)[0][1])
    have = present or {}
    lines = [("package lock", ctx.options.pkg_lock_timeout_s)]
    lines += [(name, cost.seconds) for name, cost in FIXED.items() if name not in ("package lock", "verify and reuse")]
    lines.append(("verify and reuse", FIXED["verify and reuse"].seconds * len(ctx.steps())))
    if ctx.slurm_policy:  # bounded waits of the slurm-policy step (slurmdbd, then slurmctld), as the package lock's
        lines.append(("slurmdbd and slurmctld waits", ctx.options.slurmdbd_wait_s + ctx.options.slurmctld_wait_s))
    for comp in components(ctx):
        if comp == "node_exporter" or not have.get(comp, False):  # no image profile carries node_exporter
            lines.append((comp, COSTS[comp].seconds))
    return Estimate(profile.name if profile else "the bare OS", sum(s for _, s in lines), lines, LIMITS[ctx.flavour])
