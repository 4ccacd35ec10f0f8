"""What every Jinja environment of the bootstrap stage shares: compiled templates kept between processes.

Compiling the bootstrap templates takes about 0.2 s of CPU, once per process: every ``cdk synth`` paid it again for
the same templates. Jinja's own bytecode cache (``FileSystemBytecodeCache``: its default folder is
``$TMPDIR/_jinja2-cache-<uid>``, which Jinja makes private to the user and refuses when another user owns it) keeps
the compiled code, keyed by the template's name and path and checked against the template's source on every load:
an edited template is compiled again. The key here also holds Jinja's version and the environment's compile options
(delimiters, whitespace control...), which change the compiled code while the source stays the same. So the cache
changes how fast a bundle renders, never what it holds. A cache that cannot be made, read or written is skipped
(templates are compiled as before).
"""

from __future__ import annotations

import hashlib
import pickle
from functools import cache

import jinja2
from jinja2 import BytecodeCache, Environment, FileSystemBytecodeCache
from jinja2.bccache import Bucket


class _QuietCache(FileSystemBytecodeCache):
    """Jinja's file system cache, keyed by ``options`` as well, for which an unreadable or unwritable folder is a miss,
    never an error."""

    def __init__(self, directory: str | None = None, options: str = "") -> None:
        super().__init__(directory)
        self.options = options

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        return hashlib.sha1(f"{super().get_cache_key(name, filename)}|{self.options}".encode()).hexdigest()

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


def compile_options(env: Environment) -> str:
    """What, besides a template's source, decides the code Jinja compiles it to."""
    return repr((jinja2.__version__, env.block_start_string, env.block_end_string, env.variable_start_string,
                 env.variable_end_string, env.comment_start_string, env.comment_end_string, env.line_statement_prefix,
                 env.line_comment_prefix, env.trim_blocks, env.lstrip_blocks, env.newline_sequence,
                 env.keep_trailing_newline, sorted(env.extensions), env.optimized, env.autoescape, env.is_async))


@cache
def _shared(options: str) -> BytecodeCache | None:
    try:
        return _QuietCache(options=options)
    except (OSError, RuntimeError):  # Jinja raises RuntimeError for a folder another user owns or can write
        return None


def bytecode_cache(env: Environment) -> BytecodeCache | None:
    """The shared bytecode cache for ``env`` (set it as ``env.bytecode_cache``), or None where no private cache folder
    can be had."""
    return _shared(compile_options(env))
