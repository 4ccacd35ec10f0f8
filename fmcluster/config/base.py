"""The base class of every project-file section, and the field types and rules the sections share."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Strict
from pydantic_core import PydanticCustomError

Int = Annotated[int, Strict()]
"""An integer as YAML writes one: ``true`` (1), ``2.0`` and ``"2"`` are refused, not converted."""


class Model(BaseModel):
    """Base of every config section: unknown keys are errors, values are immutable, numbers finite.

    Give every field a ``description``: error hints and the docs are built from it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, allow_inf_nan=False)


def located(message: str, *at: Any) -> PydanticCustomError:
    """A rule's error that points below the field it is raised on (``at``: keys and indexes from there).

    The loader reads ``at`` and reports the file line of that part, e.g. the second of two
    compute groups with the same name rather than the list.
    """
    return PydanticCustomError("located", "{message}", {"message": message, "at": tuple(at)})


AZ_ID = r"^[a-z]{2,5}[0-9](-[a-z]{3}[0-9])?-az[0-9]{1,2}$"
"""An Availability Zone ID (``use1-az6``) or a Local Zone ID (``use1-dfw2-az1``)."""
MAX_PATH = 255
"""Longest directory path accepted (Linux NAME_MAX is per component; 255 keeps unit names and logs sane)."""
_ABSOLUTE_DIR = re.compile(r"^(/[A-Za-z0-9._-]+)+/?$")
"""One or more ``/name`` components: linear to match (no nested optional repetition)."""


def absolute_directory(value: str, example: str) -> str:
    """An absolute directory path of plain components (no ``.``/``..``, no ``//``), without its trailing slash."""
    if len(value) > MAX_PATH or not _ABSOLUTE_DIR.match(value):
        raise ValueError(f"{value[:80]!r} is not an absolute directory like {example} (leading '/', letters, digits, "
                         f"'.', '_' and '-' only, at most {MAX_PATH} characters)")
    parts = value.rstrip("/").split("/")[1:]
    if any(part in (".", "..") for part in parts):
        raise ValueError(f"{value!r} contains '.' or '..'; write the directory itself, like {example}")
    return value.rstrip("/")
