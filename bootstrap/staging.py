"""Monitoring artefacts staged at deploy (issue 45): node_exporter's and Prometheus's release tarballs, which every node
would otherwise download from GitHub at boot (a rate limit or an outage there would leave a fleet without metrics).

Each bundle's manifest lists what its exporters step may download (:func:`staged`, ``Manifest.staged``). The cluster
stack publishes each listed tarball as a CDK file asset whose source is a command, not a file
(``synthesizer.add_file_asset(source_hash=SHA256, executable=...)``): at ``cdk deploy`` the CDK CLI's asset publisher
checks whether the object is already in the deployment's asset bucket and, only when it is not, runs
``fmcluster bootstrap stage`` on the deploying workstation, which downloads the tarball, checks its pinned sha256
(nothing unverified is ever uploaded) and prints the file's path; the publisher uploads it. The object's key is the
sha256 itself, so a node finds it as ``s3://BUCKET/SHA256`` (BUCKET: the bucket its bundle came from, or
``FMC_ARTEFACTS_BUCKET`` where the bundle was copied elsewhere, HyperPod's lifecycle bucket), checks the sha256 again,
and falls back to the upstream URL when the object is missing. Synthesis never downloads anything: the template and
the asset manifest name only the digest and the command.

dcgm-exporter and DCGM come from NVIDIA's signed package repository (the node verifies the repository's key), as the
driver stack does; they are not staged.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from fmcluster.bootstrap.versions import BootstrapError

if TYPE_CHECKING:
    from fmcluster.bootstrap.context import BootstrapContext

STAGED_COMPONENTS = ("node_exporter", "prometheus")
"""The downloads of the exporters step (``templates/bootstrap/exporters.sh.j2``) that are staged."""
EXPORTERS_STEP = "90-exporters"
STAGE_COMMAND = ("fmcluster", "bootstrap", "stage")
"""The command the CDK CLI's asset publisher runs at deploy (``fmcluster bootstrap stage``: :func:`fetch`); found on
the PATH of whoever runs ``cdk deploy`` (``fmcluster deploy`` runs it with fmcluster's own)."""
CHUNK = 1 << 20
TIMEOUT_S = 60
"""Seconds without a byte before a download is given up (urllib's socket timeout)."""


def staged(ctx: BootstrapContext) -> list[dict[str, str]]:
    """What this node's exporters step may download that the deployment stages: name, upstream URL and pinned sha256
    (an unpinned one is never downloaded, so never staged)."""
    if not any(step.name == EXPORTERS_STEP for step in ctx.steps()):
        return []
    artifacts = ctx.artifacts()
    return [{"name": name, "url": artifacts[name].url, "sha256": artifacts[name].sha256}
            for name in STAGED_COMPONENTS if artifacts[name].sha256]


def from_manifests(folder: Path) -> list[dict[str, str]]:
    """Every artefact the bundles rendered under ``folder`` list (``manifest.json``'s ``staged``), once each, in
    digest order."""
    found: dict[str, dict[str, str]] = {}
    for manifest in sorted(folder.rglob("manifest.json")):
        for artefact in json.loads(manifest.read_text(encoding="utf-8")).get("staged", []):
            found.setdefault(artefact["sha256"], artefact)
    return [found[sha] for sha in sorted(found)]


def stage_command(artefact: dict[str, str]) -> list[str]:
    """The asset's command: stage ``artefact`` and print the path of the verified file."""
    return [*STAGE_COMMAND, "--name", artefact["name"], "--sha256", artefact["sha256"], artefact["url"]]


def cache_dir() -> Path:
    """Where staged downloads are kept between deploys: ``$XDG_CACHE_HOME/fmcluster/artefacts`` (``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fmcluster" / "artefacts"


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def fetch(name: str, url: str, sha256: str, cache: Path | None = None) -> Path:
    """The file at ``url`` whose sha256 is ``sha256``, from the cache or downloaded into it; refused (nothing kept)
    when the download's digest differs. Raises :class:`BootstrapError` with one line that names the artefact."""
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise BootstrapError(f"{name}: {sha256!r} is not a sha256 digest")
    if not url.startswith("https://"):
        raise BootstrapError(f"{name}: {url} is not an https URL")
    folder = (cache or cache_dir()) / sha256
    dest = folder / (url.rsplit("/", 1)[-1] or name)
    if dest.is_file() and _digest(dest) == sha256:
        return dest
    folder.mkdir(parents=True, exist_ok=True)
    fd, part = tempfile.mkstemp(dir=folder, prefix=".download.")
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:  # noqa: S310
            while chunk := response.read(CHUNK):
                h.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        Path(part).unlink(missing_ok=True)
        reason = getattr(exc, "reason", None) or exc
        raise BootstrapError(f"cannot download {name} from {url}: {reason}") from None
    got = h.hexdigest()
    if got != sha256:
        Path(part).unlink(missing_ok=True)
        raise BootstrapError(f"{name} from {url} has sha256 {got}, not the pinned {sha256}: nothing staged "
                             "(bootstrap/versions.yaml pins it)")
    os.replace(part, dest)
    dest.chmod(0o644)
    return dest
