"""A project's bootstrap bundles, rendered once, before its stacks are built.

Self-managed nodes (``orchestrator.type: none``) get one bundle per compute group, run by
the launch template's user data. ParallelCluster nodes get one archive holding a bundle per
instance type, a dispatcher per node role that picks and checks its own, and the launcher, their
custom action, which runs the dispatcher their role's bootstrap pointer names.
HyperPod instance groups get one lifecycle bundle each, uploaded under the group's prefix.
Bundles go to a folder of the cloud assembly (``cdk.out/fmcluster-bundles/PROJECT/``), from
which CDK publishes them as assets.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fmcluster.bootstrap.context import BootstrapContext, FsxMount, context_for
from fmcluster.bootstrap.nodefacts import SlurmTeam
from fmcluster.bootstrap.render import (
    ENTRY_NAME,
    HEAD_NODE_BUNDLE,
    LAUNCHER_NAME,
    dispatcher_script,
    entry_script,
    launcher_script,
    render_bundle,
)

from fmcluster.contracts import COMPUTE_POINTER_ROLE, HEAD_POINTER_ROLE, MountContract
from fmcluster.generate import schedulers, slurmteams
from fmcluster.generate.hyperpod import instance_groups
from fmcluster.plan import ClusterPlan

BUNDLES_DIR = "fmcluster-bundles"
"""The folder of the cloud assembly that holds the rendered bundles."""


@dataclass(frozen=True)
class GroupBundle:
    """The bundle of one compute group's nodes."""

    group: str
    path: Path
    context: BootstrapContext
    sums_sha256: str
    boot_env: dict[str, str] = field(default_factory=dict)
    """Values known only at deploy time (CDK tokens) that the entry script exports: the FSx identity."""

    def entry_script(self, bundle_s3_uri: str) -> str:
        """The user data that downloads this bundle from ``bundle_s3_uri``, checks it and runs it."""
        ctx = self.context.model_copy(update={"bundle_s3_uri": bundle_s3_uri})
        return entry_script(ctx, self.sums_sha256, self.boot_env)


@dataclass(frozen=True)
class DispatchedBundles:
    """ParallelCluster: one bundle per instance type (and the head node's) in ``bundles``; per node role
    (``fmcluster.contracts.HEAD_POINTER_ROLE``, ``COMPUTE_POINTER_ROLE``) a dispatcher that knows only that role's
    bundles, and its sha256 (what the role's bootstrap pointer names); the launcher, every node's custom action."""

    bundles: Path
    dispatchers: dict[str, Path]
    digests: dict[str, str]
    launcher: Path


def qos_partitions(cluster: ClusterPlan) -> tuple[str, ...]:
    """The partitions the slurmctld node gives a QoS each: the compute groups' Slurm partitions as the orchestrator
    renders them (:func:`fmcluster.generate.schedulers.scheduler`'s ``slurm_targets``: ParallelCluster's queue,
    HyperPod's partition), each once, in the groups' order; empty unless accounting applies a QoS per partition
    (``ClusterPlan.slurm_policy``). Only the context of the node that runs slurmctld acts on them
    (``BootstrapContext.slurm_policy``)."""
    if not cluster.slurm_policy.qos_per_partition:
        return ()
    targets = schedulers.scheduler(cluster).slurm_targets(cluster)
    return tuple(dict.fromkeys(t.partition for t in targets.values()))


def slurm_teams(cluster: ClusterPlan) -> tuple[SlurmTeam, ...]:
    """The project's teams as Slurm accounting holds them (:func:`fmcluster.generate.slurmteams.slurm_teams`),
    against the orchestrator's partitions; empty where teams do not apply."""
    if not slurmteams.applies(cluster):
        return ()
    return slurmteams.slurm_teams(cluster, schedulers.scheduler(cluster).slurm_targets(cluster))


LOGIN_BUNDLE = "login"
"""The login nodes' bundle among a project's group bundles (where the orchestrator's login nodes run one)."""


def fsx_mount(fsx: MountContract | None, fsx_at_boot: bool) -> FsxMount | None:
    """The mount a bundle that mounts FSx itself gets from the storage contract: the identity in the bundle, or (a
    file system created in the same deployment) only its path and EFA setting, the identity coming at boot."""
    if fsx is None:
        return None
    if fsx_at_boot:
        return FsxMount(mount_path=fsx.mount_path, efa_enabled=fsx.efa_enabled)
    return FsxMount(file_system_id=fsx.file_system_id, dns_name=fsx.dns_name, mount_name=fsx.mount_name,
                    mount_path=fsx.mount_path, efa_enabled=fsx.efa_enabled)


def group_contexts(cluster: ClusterPlan, mount: FsxMount | None, login: bool = False) -> dict[str, BootstrapContext]:
    """Self-managed and PCS nodes: one bundle per compute group mounting ``mount``, and with ``login`` the login
    nodes' (:data:`LOGIN_BUNDLE`: no GPU steps; the FSx mount, exporters and agent as on the GPU nodes)."""
    out = {group.name: context_for(cluster, group.name, "compute", fsx=mount) for group in cluster.groups}
    if login:
        out[LOGIN_BUNDLE] = context_for(cluster, None, "login", fsx=mount)
    return out


def dispatched_contexts(cluster: ClusterPlan) -> dict[str, BootstrapContext]:
    """ParallelCluster: the head node's bundle (pyxis in the shared plugstack.conf, the per-job IMEX prolog where a
    queue has IMEX instances, the QoS per partition; its exporters) and one per instance type. ParallelCluster
    mounts FSx itself, so none mounts it."""
    out = {HEAD_NODE_BUNDLE: context_for(cluster, cluster.groups[0].name, "head", "parallelcluster", fsx=None,
                                         imex_prolog=any(g.needs_imex for g in cluster.groups),
                                         qos_partitions=qos_partitions(cluster), slurm_teams=slurm_teams(cluster))}
    for group in cluster.groups:
        if group.instance_type not in out:
            out[group.instance_type] = context_for(cluster, group.name, "compute", "parallelcluster", fsx=None)
    return out


def lifecycle_contexts(cluster: ClusterPlan) -> dict[str, BootstrapContext]:
    """HyperPod: one bundle per instance group (controller, login, each compute group). HyperPod mounts FSx itself
    (FsxLustreConfig), so none mounts it."""
    qos = qos_partitions(cluster)
    return {group.name: context_for(cluster, group.compute_group, group.role, "hyperpod", fsx=None, qos_partitions=qos)
            for group in instance_groups(cluster)}


CONTEXTS: dict[str, Callable[[ClusterPlan, FsxMount | None], dict[str, BootstrapContext]]] = {
    "none": lambda cluster, mount: group_contexts(cluster, mount),
    "parallelcluster": lambda cluster, mount: dispatched_contexts(cluster),
    "hyperpod": lambda cluster, mount: lifecycle_contexts(cluster),
    "pcs": lambda cluster, mount: group_contexts(cluster, mount, login=cluster.pcs.login is not None),
}
"""The bootstrap stage's table of what each orchestrator's nodes run: bundle name -> context, from the cluster and the
FSx mount (ignored where the orchestrator mounts FSx itself). The renderers below and ``fmcluster bootstrap render``
both take their contexts from here, so what is rendered for inspection is what deploys."""


def deployed_contexts(cluster: ClusterPlan, mount: FsxMount | None) -> dict[str, BootstrapContext]:
    """The contexts of every bundle the project's orchestrator deploys (:data:`CONTEXTS`), by bundle name."""
    return CONTEXTS[cluster.orchestrator](cluster, mount)


def render_group_bundles(cluster: ClusterPlan, fsx: MountContract | None, fsx_at_boot: bool,
                         out_dir: Path, remote_write_url: str | None = None,
                         login: bool = False) -> dict[str, GroupBundle]:
    """One bundle per compute group, mounting ``fsx`` (whose identity comes at boot when ``fsx_at_boot``);
    the nodes' metrics agent remote-writes to ``remote_write_url`` (the project's workspace), also known at boot.
    With ``login``, also the login nodes' bundle (:func:`group_contexts`)."""
    boot_env = {}
    if fsx is not None and fsx_at_boot:  # created in this deployment: CloudFormation fills the IDs into the user data
        boot_env = {"FMC_FSX_ID": fsx.file_system_id, "FMC_FSX_DNS": fsx.dns_name,
                    "FMC_FSX_MOUNT_NAME": fsx.mount_name}
    if remote_write_url is not None:
        boot_env["FMC_METRICS_REMOTE_WRITE_URL"] = remote_write_url
    bundles = {}
    for name, ctx in group_contexts(cluster, fsx_mount(fsx, fsx_at_boot), login).items():
        path = _fresh(out_dir / name)
        bundles[name] = GroupBundle(name, path, ctx, render_bundle(ctx, path).sums_sha256, boot_env)
    return bundles


def render_dispatched_bundles(cluster: ClusterPlan, out_dir: Path, metrics: bool = False) -> DispatchedBundles:
    """One bundle per instance type (ParallelCluster mounts FSx itself, so the bundles do not), the head node's
    (pyxis in the shared plugstack.conf; its exporters, the Slurm exporter among them), a dispatcher per node role
    (``metrics``: the project's metrics workspace is on, so the dispatchers need its URL), and the launcher."""
    root = _fresh(out_dir)
    sums = {name: render_bundle(ctx, root / "bundles" / name).sums_sha256
            for name, ctx in dispatched_contexts(cluster).items()}
    (root / "dispatch").mkdir(parents=True)
    by_role = {HEAD_POINTER_ROLE: {HEAD_NODE_BUNDLE: sums[HEAD_NODE_BUNDLE]},
               COMPUTE_POINTER_ROLE: {k: v for k, v in sums.items() if k != HEAD_NODE_BUNDLE}}
    dispatchers, digests = {}, {}
    for role, role_sums in by_role.items():
        text = dispatcher_script(cluster.project, role_sums, metrics=metrics).encode()
        dispatchers[role] = root / "dispatch" / f"{role}.sh"
        dispatchers[role].write_bytes(text)
        digests[role] = hashlib.sha256(text).hexdigest()
    launcher = root / "launch" / LAUNCHER_NAME
    launcher.parent.mkdir(parents=True)
    launcher.write_text(launcher_script())
    return DispatchedBundles(bundles=root / "bundles", dispatchers=dispatchers, digests=digests, launcher=launcher)


def _fresh(folder: Path) -> Path:
    """An empty folder: nothing of an earlier synthesis survives into the assets."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


@dataclass(frozen=True)
class LifecycleBundles:
    """HyperPod: one bundle per instance group in ``root/<instance group>/``, each run by its own entry script
    (``on_init_complete``: HyperPod's extended mode runs it after HyperPod has set up Slurm and its default software),
    which finds the bundle beside itself once HyperPod has copied the group's S3 prefix."""

    root: Path
    sums: dict[str, str]
    """Instance group -> sha256 of its bundle's SHA256SUMS."""
    on_init_complete: str = ENTRY_NAME


def render_lifecycle_bundles(cluster: ClusterPlan, out_dir: Path) -> LifecycleBundles:
    """The HyperPod flavour for every instance group (:func:`lifecycle_contexts`); its image carries the driver and
    EFA, which the steps find and keep."""
    root = _fresh(out_dir)
    sums = {name: render_bundle(ctx, root / name).sums_sha256 for name, ctx in lifecycle_contexts(cluster).items()}
    return LifecycleBundles(root=root, sums=sums)


Renderer = Callable[[ClusterPlan, Path, "MountContract | None", bool, "str | None"], object]

RENDERERS: dict[str, Renderer] = {
    "none": lambda cluster, out, fsx, at_boot, url: render_group_bundles(cluster, fsx, at_boot, out, url),
    "parallelcluster": lambda cluster, out, fsx, at_boot, url: render_dispatched_bundles(cluster, out, url is not None),
    "hyperpod": lambda cluster, out, fsx, at_boot, url: render_lifecycle_bundles(cluster, out),
    # PCS runs each group's bundle from the node group's launch template, as self-managed nodes do, and one on its
    # login nodes
    "pcs": lambda cluster, out, fsx, at_boot, url: render_group_bundles(cluster, fsx, at_boot, out, url,
                                                                        login=cluster.pcs.login is not None),
}
"""The bootstrap stage's table of orchestrators (:mod:`fmcluster.orchestrators`): how each renders its nodes'
bundles, from the cluster, the folder, the FSx mount contract (its identity known only at boot when ``at_boot``)
and the metrics workspace's remote-write URL (ParallelCluster's: only whether there is one). Where the orchestrator
mounts FSx or configures the agents itself, its renderer ignores them."""


def render_bundles(cluster: ClusterPlan, out_dir: Path, fsx: MountContract | None, fsx_at_boot: bool,
                   remote_write_url: str | None) -> object:
    """The project's orchestrator's bundles (:data:`RENDERERS`), as the cluster stack takes them."""
    return RENDERERS[cluster.orchestrator](cluster, out_dir, fsx, fsx_at_boot, remote_write_url)
