"""The boot budget: everything inside the scheduler's limit, counted from the instance's launch, for a bundle on
an image.

A node the scheduler waits for must be ready in time: ParallelCluster's Slurm gives a powering-up node ``ResumeTimeout``
seconds from the moment it asked EC2 for it, then marks it down and replaces it (a static capacity-block node loops).
That time covers EC2's launch, ParallelCluster's own setup before it runs ``OnNodeConfigured`` (our bundle), the bundle,
and what ParallelCluster does after it (each flavour's ``boot_limit``, ``boot_before`` and ``boot_margin`` in
:mod:`fmcluster.flavours`: figures no source states are marked assumed).

What the bundle costs depends on the image: on the flavour's own image most steps only verify and reuse; what the image
lacks is downloaded and installed (:data:`COSTS`: each component's downloads, package-manager calls and local work).
Every network operation is retried (``fmc_retry`` in templates/bootstrap/partials/common.sh.j2: ``retry_attempts``
attempts, ``retry_base_delay_s`` doubling between them), each download attempt bounded by curl's ``--max-time``. Every
package-manager call first waits for another apt/dnf; all of a boot's waits share one allowance
(``pkg_lock_timeout_s``). :func:`estimate` gives two bundle figures:

* the slowest boot without a failed attempt: every download at its size over a slow link, every package call at its
  estimate, the whole lock allowance spent: this must fit, with the margin;
* every attempt failing but the last, each to its bound: longer than the limit, so the entry script's deadline
  (:func:`deadline_s`) stops the bundle with its step and reason before the scheduler gives up.
"""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.bootstrap.context import BootstrapContext
from fmcluster.bootstrap.profiles import ImageProfile
from fmcluster.flavours import Limit, Phase


SLOW_LINK_MBPS = 10
"""A slow but working link for the no-failure figure (MB/s): an estimate, not a measurement."""


@dataclass(frozen=True)
class Download:
    name: str
    megabytes: float
    key: bool = False
    """A signing key or signature: bounded by ``key_download_timeout_s``, not ``download_timeout_s``."""


@dataclass(frozen=True)
class Cost:
    """What installing a component costs when the image lacks it: its downloads (estimated sizes), its package-manager
    installs (each an estimate: apt and dnf have no overall timeout), the repository it adds, and local work."""

    why: str
    downloads: tuple[Download, ...] = ()
    installs: tuple[int, ...] = ()
    repo: str | None = None
    local: int = 0


KEY = Download("signing key", 0.01, key=True)

COSTS: dict[str, Cost] = {
    "driver": Cost("kernel headers, then the NVIDIA driver (~500 MB of packages); DKMS build of the open kernel "
                   "modules, initramfs", installs=(120, 180), repo="nvidia", local=600),
    "fabric_manager": Cost("Fabric Manager and NSCQ packages", installs=(90,), repo="nvidia"),
    "imex": Cost("the nvidia-imex package", installs=(60,), repo="nvidia"),
    "nvlsm": Cost("InfiniBand tools, then nvlsm; ib_umad loaded", installs=(60, 60), repo="nvidia", local=5),
    "efa": Cost("EFA installer tarball with its key and signature; the installer's own packages and the DKMS build "
                "of the efa module", downloads=(Download("EFA installer", 400), KEY, Download("signature", 0.01, True)),
                local=600),
    "gdrcopy": Cost("GDRCopy source, its build packages; built into packages, gdrdrv loaded",
                    downloads=(Download("GDRCopy source", 1),), installs=(120, 30), local=240),
    "lustre": Cost("the Lustre client repository and the kernel module package", installs=(120,), repo="lustre"),
    "enroot": Cost("two enroot packages", downloads=(Download("enroot", 10), Download("enroot+caps", 1)),
                   installs=(60,)),
    "pyxis": Cost("pyxis source, built against Slurm's headers", downloads=(Download("pyxis source", 1),), local=120),
    "dcgm": Cost("DCGM core and CUDA packages", installs=(180,), repo="nvidia"),
    "dcgm_exporter": Cost("the dcgm-exporter package paired with the node's DCGM", installs=(60,), repo="nvidia"),
    "node_exporter": Cost("node_exporter tarball (sha256-checked)", downloads=(Download("node_exporter", 12),)),
    "prometheus": Cost("Prometheus tarball for the agent (sha256-checked)", downloads=(Download("prometheus", 120),)),
}

REPO_KEYS = {"nvidia": "cuda_source", "lustre": None}
"""The image fact that says a repository is already a source (then no key is fetched and no index refreshed)."""
REFRESH_S = 90
"""One apt-get update / dnf makecache: an estimate (no timeout bounds it)."""
VERIFY_S = 10
"""Per step: version queries (nvidia-smi, dpkg-query, fi_info), markers, unit checks."""
HEALTH_S = 60
"""The health check's queries (nvidia-smi, fi_info, NVLink, exporter probes)."""
DEEP_HEALTH_S = 120
"""``dcgmi diag -r 2`` when ``health.deep_dcgm_diagnostic`` is on: NVIDIA DCGM documentation, ``dcgmi diag``: level 2
"normally lasting approximately two minutes"."""

ALWAYS_DOWNLOADED = ("node_exporter", "prometheus")
"""No image profile carries our node_exporter or Prometheus agent."""


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
        out += ["node_exporter", "prometheus"] + (["dcgm", "dcgm_exporter"] if ctx.gpu else [])
    return out


def retried(ctx: BootstrapContext, attempt_s: int) -> int:
    """The worst case of one retried operation (``fmc_retry``): every attempt to its bound, and the waits between."""
    o = ctx.options
    waits = sum(o.retry_base_delay_s * 2 ** k for k in range(o.retry_attempts - 1))
    return o.retry_attempts * attempt_s + waits


def deadline_s(ctx: BootstrapContext) -> int | None:
    """Seconds after the kernel starts at which the entry script stops the steps (``FMC_DEADLINE``): the scheduler's
    limit less the time it counts before the kernel and the margin after the bundle. None where no limit applies."""
    traits = ctx.traits
    limit = ctx.boot_limit.seconds
    if limit is None or traits.boot_before_kernel is None or traits.boot_margin is None:
        return None
    return limit - traits.boot_before_kernel.seconds - traits.boot_margin.seconds


def rerun_s(ctx: BootstrapContext) -> int | None:
    """Seconds a re-run of the bundle on a node that already booted (ParallelCluster's OnNodeUpdated after a cluster
    update, or an operator's re-run) may take, counted from its own start: the share of the limit the bundle has at
    the first boot (the limit less everything before the bundle and the margin). The first boot's deadline is long
    past by then; ParallelCluster waits for an update with a new wait condition of the full head-node timeout
    (:attr:`fmcluster.flavours.Flavour.head_boot_limit`), and its own update recipes run before ours. None where no
    limit applies."""
    traits = ctx.traits
    limit = ctx.boot_limit.seconds
    if limit is None or traits.boot_margin is None:
        return None
    return limit - sum(p.seconds for p in traits.boot_before) - traits.boot_margin.seconds


@dataclass(frozen=True)
class Estimate:
    image: str
    before: tuple[Phase, ...]
    lines: list[tuple[str, int]]
    """The bundle's slowest boot without a failed attempt, line by line."""
    retried_seconds: int
    """The bundle with every operation failing until its last attempt, each attempt to its bound."""
    calls: int
    """Package-manager calls (they share the lock allowance)."""
    limit: Limit
    margin: Phase | None
    deadline: int | None
    rerun: int | None = None
    """Seconds a re-run (an update's OnNodeUpdated) has from its own start (:func:`rerun_s`)."""

    @property
    def bundle_seconds(self) -> int:
        return sum(s for _, s in self.lines)

    @property
    def seconds(self) -> int:
        """From launch to the bundle's end, the slowest boot without a failed attempt."""
        return sum(p.seconds for p in self.before) + self.bundle_seconds

    @property
    def spare(self) -> int | None:
        """What is left of the limit after this boot and the margin; None without a limit."""
        if self.limit.seconds is None:
            return None
        return self.limit.seconds - self.seconds - (self.margin.seconds if self.margin else 0)

    @property
    def fits(self) -> bool | None:
        return None if self.spare is None else self.spare >= 0

    def text(self) -> str:
        if self.limit.unconfirmed:
            verdict = f"{self.limit.name}: unconfirmed"
        elif self.limit.seconds is None:
            verdict = "no limit to compare"
        else:
            verdict = (f"{'within' if self.fits else 'OVER'} {self.limit.name} {self.limit.seconds} s, "
                       f"{self.spare} s to spare after a {self.margin.seconds if self.margin else 0} s margin")
        start = "from launch" if self.before else "from the bundle's start"
        return f"slowest boot without a failed attempt {self.seconds} s {start} on {self.image} ({verdict})"

    def report(self) -> list[str]:
        """The lines ``fmcluster bootstrap render`` prints."""
        out = [f"boot budget: {self.text()}"]
        for p in self.before:
            out.append(f"  {p.name}: {p.seconds} s{' (assumed: ' + p.why + ')' if p.assumed else ' (' + p.why + ')'}")
        out.append(f"  the bundle, slowest without a failed attempt: {self.bundle_seconds} s ("
                   + ", ".join(f"{n} {s}" for n, s in self.lines) + f"; {self.calls} package-manager calls)")
        if self.margin is not None:
            out.append(f"  {self.margin.name}: {self.margin.seconds} s (assumed: {self.margin.why})")
        tail = (f"; the entry script stops the steps {self.deadline} s after the kernel starts, naming the step"
                if self.deadline is not None else "")
        out.append(f"  with every retry failing to its bound the bundle could take {self.retried_seconds} s{tail}")
        if self.rerun is not None:
            out.append(f"  a re-run (an update's OnNodeUpdated, or by hand) has {self.rerun} s from its own start; the "
                       "first boot's deadline does not apply to it")
        return out


def estimate(ctx: BootstrapContext, profile: ImageProfile | None = None,
             present: dict[str, bool] | None = None) -> Estimate:
    """The boot budget of ``ctx``'s bundle on ``profile``'s image (as written, or as ``present`` says; None: the bare
    OS, where everything is installed)."""
    if profile is not None and present is None:
        present = dict(profile.variants(ctx.arch)[0][1])
    have = present or {}
    o = ctx.options
    missing = [c for c in components(ctx) if c in ALWAYS_DOWNLOADED or not have.get(c, False)]
    lines: list[tuple[str, int]] = []
    retry_total = 0
    repos = {COSTS[c].repo for c in missing if COSTS[c].repo} - {r for r, fact in REPO_KEYS.items()
                                                                 if fact and have.get(fact, False)}
    if ctx.os_family != "ubuntu":
        repos.discard("lustre")  # AL2023's Lustre client comes from Amazon Linux's own repository: nothing added
    installs = [s for c in missing for s in COSTS[c].installs]
    # Ubuntu refreshes once per repository added, else once before its first install; dnf only when a repository is
    # added (fmc_pkg_install, fmc_nvidia_repo, the Lustre step).
    refreshes = len(repos) if repos or ctx.os_family != "ubuntu" else (1 if installs else 0)
    calls = len(installs) + refreshes
    if calls:
        lines.append(("package lock", o.pkg_lock_timeout_s))
    for repo in sorted(repos):
        lines.append((f"{repo} repository key", _download_s(ctx, KEY)))
        retry_total += retried(ctx, o.key_download_timeout_s)
    if refreshes:
        lines.append(("package index refresh", refreshes * REFRESH_S))
        retry_total += refreshes * retried(ctx, REFRESH_S)
    for comp in missing:
        cost = COSTS[comp]
        seconds = sum(_download_s(ctx, d) for d in cost.downloads) + sum(cost.installs) + cost.local
        lines.append((comp, seconds))
        retry_total += cost.local + sum(retried(ctx, s) for s in cost.installs)
        retry_total += sum(retried(ctx, o.key_download_timeout_s if d.key else o.download_timeout_s)
                           for d in cost.downloads)
    lines.append(("verify and reuse", VERIFY_S * len(ctx.steps())))
    lines.append(("health check", HEALTH_S + (DEEP_HEALTH_S if ctx.gpu and o.deep_health_check else 0)))
    if ctx.slurm_policy:  # bounded waits of the slurm-policy step (slurmdbd, then slurmctld)
        lines.append(("slurmdbd and slurmctld waits", o.slurmdbd_wait_s + o.slurmctld_wait_s))
    elif ctx.slurm_teams_step:  # the slurm-teams step's bounded wait for slurmdbd (after the policy step's: none)
        lines.append(("slurmdbd and slurmctld waits", o.slurmdbd_wait_s))
    fixed = sum(s for n, s in lines if n in ("package lock", "verify and reuse", "health check",
                                             "slurmdbd and slurmctld waits"))
    return Estimate(image=profile.name if profile else "the bare OS", before=ctx.traits.boot_before,
                    lines=lines, retried_seconds=retry_total + fixed, calls=calls, limit=ctx.boot_limit,
                    margin=ctx.traits.boot_margin, deadline=deadline_s(ctx), rerun=rerun_s(ctx))


def _download_s(ctx: BootstrapContext, d: Download) -> int:
    """One download that does not fail: connecting, then its size over a slow link."""
    return ctx.options.connect_timeout_s + int(d.megabytes / SLOW_LINK_MBPS + 0.999)
