"""Container image references as pyxis and enroot read them (``srun --container-image``).

enroot before 4.0 (bootstrap/versions.yaml pins 3.4.1) parses ``docker://[USER@][REGISTRY#]IMAGE[:TAG]``: the registry
is whatever precedes ``#``, and without one the image comes from Docker Hub, so the Docker form
``public.ecr.aws/deep-learning-containers/pytorch-training:TAG`` asks Docker Hub for an image called
``public.ecr.aws/deep-learning-containers/pytorch-training`` (NVIDIA/enroot v3.4.1 ``src/docker.sh``, ``docker::import``
and ``docker::_download``: an empty registry is ``registry-1.docker.io``; ``doc/cmd/import.md``). pyxis 0.19.0 hands
``--container-image`` to ``enroot import`` as ``docker://IMAGE`` unless it starts with ``docker://`` or ``dockerd://``,
and reads one that starts with ``.`` or ``/`` as a squashfs file (NVIDIA/pyxis v0.19.0 ``pyxis_slurmstepd.c``,
``enroot_container_create`` and the ``strspn(image, "./")`` test). The pyxis README: ``--container-image=[USER@]
[REGISTRY#]IMAGE[:TAG]|PATH``. enroot 4.0 reads both forms (``docker::_parse_uri``), so the ``#`` form is the one that
works on every node.

A digest: enroot 3.4.1 has no ``@sha256:`` (its image pattern has no ``@``: "Invalid image reference"), but its tag
pattern ``[[:alnum:]._:-]+`` takes ``sha256:HEX``, which it puts where the registry API's ``/v2/IMAGE/manifests/
REFERENCE`` takes a tag or a digest; enroot 4.x reads ``REGISTRY#IMAGE:sha256:HEX`` the same way. So
``REPO@sha256:HEX`` (and Docker's ``REPO:TAG@sha256:HEX``, whose tag enroot 4 ignores too) becomes
``REGISTRY#IMAGE:sha256:HEX``.
"""

from __future__ import annotations

import re

from fmcluster.bootstrap.versions import BootstrapError

ENROOT_3_4_URI = re.compile(
    r"^docker://(?:(?P<user>[A-Za-z0-9_.!~*\\'()%;:&=+$,\-./:;<=>?@]+)@)?(?:(?P<registry>[^#]+)#)?"
    r"(?P<image>[a-z0-9/._-]+)(?::(?P<tag>[A-Za-z0-9._:-]+))?$")
"""enroot 3.4.1's pattern (``docker::import``), in Python's syntax: ``[,-@]`` spelled out. The tests run enroot's own
bash lines as well (tests/support/enroot-3.4.1-parse.sh)."""

_DIGEST = re.compile(r"^(?P<name>[^@]+?)(?::[A-Za-z0-9._-]+)?@(?P<digest>sha256:[0-9a-f]{64})$")


class ImageReferenceError(BootstrapError):
    """A reference enroot cannot read; the message says what to give instead."""


def is_squashfs_path(image: str) -> bool:
    """pyxis reads a reference that starts with ``.`` or ``/`` as a squashfs file on the node."""
    return image[:1] in "./"


def enroot_reference(image: str) -> str:
    """``image`` in the form enroot 3.4 and 4.x both pull from the right registry: ``REGISTRY#PATH[:TAG]``.

    A reference with ``#`` already, a squashfs path, a ``dockerd://`` one and a Docker Hub one (no registry host:
    its first component has no ``.`` or ``:`` and is not ``localhost``, Docker's own rule) pass as they are."""
    if is_squashfs_path(image) or image.startswith("dockerd://"):
        return image
    scheme = "docker://" if image.startswith("docker://") else ""
    ref = image.removeprefix(scheme)
    if match := _DIGEST.match(ref):
        ref = f"{match['name']}:{match['digest']}"
    if "#" not in ref and "/" in ref:
        first, rest = ref.split("/", 1)
        if "." in first or ":" in first or first == "localhost":
            ref = f"{first}#{rest}"
    if not ENROOT_3_4_URI.match(f"docker://{ref}"):
        raise ImageReferenceError(
            f"--image {image}: enroot 3.4 cannot read it as docker://[USER@][REGISTRY#]IMAGE[:TAG] (IMAGE in lower "
            "case), or REGISTRY/IMAGE[:TAG], REGISTRY/IMAGE@sha256:HEX, or a .sqsh path")
    return scheme + ref
