"""What a node pulls for ``srun --container-image=IMAGE``: enroot 3.4.1's own parsing lines, run by bash
(``enroot-3.4.1-parse.sh`` beside this file: pyxis 0.19.0's prefix rule, then enroot's ``docker::import`` pattern and
``docker::_download``'s Docker Hub default)."""

from __future__ import annotations

import subprocess
from pathlib import Path

PARSER = Path(__file__).with_name("enroot-3.4.1-parse.sh")


def enroot_pull(image: str) -> dict[str, str]:
    """``{"registry", "image", "tag"}`` enroot 3.4.1 asks for, ``{"squashfs": PATH}`` for a file, or
    ``{"error": ...}`` where enroot refuses the reference."""
    proc = subprocess.run(["bash", str(PARSER), image], capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()}
    return dict(token.split("=", 1) for token in proc.stdout.split())


def docker_meaning(reference: str) -> dict[str, str]:
    """What Docker pulls for a ``REGISTRY/PATH:TAG`` reference with a registry host (the pinned ones)."""
    registry, rest = reference.split("/", 1)
    path, tag = rest.rsplit(":", 1)
    return {"registry": registry, "image": path, "tag": tag}
