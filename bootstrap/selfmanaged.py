"""Self-managed nodes' bundles (``orchestrator.type: none``), which PCS's node groups run too: one per compute group,
run by the launch template's user data, and (PCS) the login nodes'. The bootstrap stage's own module for them
(:data:`fmcluster.bootstrap.bundles.RENDERERS`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fmcluster.bootstrap.bundling import fresh, fsx_mount
from fmcluster.bootstrap.context import BootstrapContext, FsxMount, context_for
from fmcluster.bootstrap.render import entry_script, render_bundle
from fmcluster.contracts import MountContract
from fmcluster.plan import ClusterPlan


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


LOGIN_BUNDLE = "login"
"""The login nodes' bundle among a project's group bundles (where the orchestrator's login nodes run one)."""


def group_contexts(cluster: ClusterPlan, mount: FsxMount | None, login: bool = False) -> dict[str, BootstrapContext]:
    """Self-managed and PCS nodes: one bundle per compute group mounting ``mount``, and with ``login`` the login
    nodes' (:data:`LOGIN_BUNDLE`: no GPU steps; the FSx mount, exporters and agent as on the GPU nodes)."""
    out = {group.name: context_for(cluster, group.name, "compute", fsx=mount) for group in cluster.groups}
    if login:
        out[LOGIN_BUNDLE] = context_for(cluster, None, "login", fsx=mount)
    return out


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
        path = fresh(out_dir / name)
        bundles[name] = GroupBundle(name, path, ctx, render_bundle(ctx, path).sums_sha256, boot_env)
    return bundles
