"""Node bootstrap: render version-pinned, verified, idempotent scripts into a bundle.

See :mod:`fmcluster.bootstrap.render` for the context model and the renderer, and
``versions.yaml`` beside this file for every pinned version, URL, checksum and key.
"""

from fmcluster.bootstrap.render import (
    BootstrapContext,
    BootstrapError,
    FsxMount,
    Manifest,
    Options,
    Versions,
    context_for,
    entry_script,
    load_versions,
    render_bundle,
)

__all__ = [
    "BootstrapContext",
    "BootstrapError",
    "FsxMount",
    "Manifest",
    "Options",
    "Versions",
    "context_for",
    "entry_script",
    "load_versions",
    "render_bundle",
]
