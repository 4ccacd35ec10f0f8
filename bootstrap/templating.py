"""What every Jinja environment of the bootstrap stage shares: compiled templates kept between processes.

Compiling the bootstrap templates takes about 0.2 s of CPU, once per process: every ``cdk synth`` paid it again for
the same templates. Jinja's own bytecode cache (``FileSystemBytecodeCache``: its default folder is
``$TMPDIR/_jinja2-cache-<uid>``, which Jinja makes private to the user and refuses when another user owns it) keeps
the compiled code, keyed by the template's name and path and checked against the template's source on every load:
an edited template is compiled again, so the cache changes how fast a bundle renders, never what it holds. A cache
that cannot be made, read or written is skipped (templates are compiled as before).
"""

from __future__ import annotations

import pickle
from functools import cache

from jinja2 import BytecodeCache, FileSystemBytecodeCache
from jinja2.bccache import Bucket


class _QuietCache(FileSystemBytecodeCache):
    """Jinja's file system cache, for which an unreadable or unwritable folder is a miss, never an error."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, EOFError, ValueError, TypeError, pickle.UnpicklingError):  # unreadable or cut short: compile
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


@cache
def bytecode_cache() -> BytecodeCache | None:
    """The shared bytecode cache, or None where no private cache folder can be had."""
    try:
        return _QuietCache()
    except (OSError, RuntimeError):  # Jinja raises RuntimeError for a folder another user owns or can write
        return None
