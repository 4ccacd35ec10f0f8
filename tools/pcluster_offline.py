"""Seal a process that runs the aws-parallelcluster package offline (``.venv-pcluster``): no credentials, no
instance metadata, no network, a Region for botocore. Imported first by ``tools/pcluster_validate.py`` and
``bench/pcluster_synth.py``, before botocore is."""

from __future__ import annotations

import os
import socket
from typing import Any


def seal(tool: str, region: str = "us-east-1") -> None:
    """Dummy AWS settings and a socket layer that refuses every connection, naming ``tool``."""
    for key, value in {
        "AWS_DEFAULT_REGION": region,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }.items():
        os.environ[key] = value
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        os.environ.pop(key, None)

    def no_network(*_args: Any, **_kwargs: Any) -> Any:
        raise OSError(f"{tool}: network access is blocked")

    socket.socket.connect = no_network  # type: ignore[method-assign]
    socket.create_connection = no_network  # type: ignore[assignment]
    socket.getaddrinfo = no_network  # type: ignore[assignment]
