"""The base class of every project-file section (kept apart so section modules can import it)."""

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """Base of every config section: unknown keys are errors, values are immutable.

    Give every field a ``description``: error hints and the docs are built from it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)
