"""Which checksum-pinned versions.yaml keys a node needs at boot, and which optional ones it skips when unpinned."""

from __future__ import annotations

from typing import Any

BootstrapContext = Any  # fmcluster.bootstrap.context.BootstrapContext, which imports this module

STEP_OF_COMPONENT = {
    "efa_installer": "30-efa",
    "node_exporter": "90-exporters",
    "prometheus": "90-exporters",
    "gdrcopy": "40-gdrcopy",
    "enroot": "80-containers",
    "pyxis": "80-containers",
}
"""Which step downloads each checksum-pinned component."""


def _relevant(ctx: BootstrapContext, key: str) -> bool:
    component = key.split(".", 1)[0]
    if STEP_OF_COMPONENT.get(component) not in {s.name for s in ctx.steps()}:
        return False
    if ".sha256." in key and not key.endswith(ctx.arch):
        return False
    if component == "enroot":
        return key.startswith("enroot.deb" if ctx.os_family == "ubuntu" else "enroot.rpm")
    if component == "pyxis":
        return ctx.slurm
    if component in ("node_exporter", "prometheus"):
        return ctx.options.exporters
    return True


def needed_placeholders(ctx: BootstrapContext) -> list[str]:
    """versions.yaml keys not pinned that a node with ``ctx`` needs at boot (it would stop there)."""
    return [k for k in ctx.versions.placeholders() if _relevant(ctx, k)]


def optional_unpinned(ctx: BootstrapContext) -> list[str]:
    """Unpinned keys of optional components this node skips (with a warning) when its image lacks them."""
    needed = set(ctx.versions.placeholders())
    return [k for k in ctx.versions.unpinned() if k not in needed and _relevant(ctx, k)]
