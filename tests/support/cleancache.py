"""Where the real linters' clean results are remembered between test runs (one empty file per digest).

A linter is deterministic: the same input bytes, options and linter version give the same findings. So an input a
linter version already found clean (no finding at all) with the same options is not linted again; only clean results
are kept, so any changed input is linted, and a finding is never hidden. tests/bootstrap/test_lint.py (shellcheck of
every bootstrap step), tests/support/shellcheck.py (the rendered jobs) and tests/stacks/test_validators.py (cfn-lint
of every template) use it. FMC_LINT_CACHE=off turns it off (a cold run, as CI makes); FMC_LINT_CACHE=DIR puts it in
DIR; by default it is the user's cache folder (XDG_CACHE_HOME or ~/.cache), fmcluster/.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def clean_dir(tool: str, version: str) -> Path | None:
    """The folder of digests ``tool`` at ``version`` found clean (None: FMC_LINT_CACHE=off)."""
    setting = os.environ.get("FMC_LINT_CACHE", "")
    if setting == "off":
        return None
    base = Path(setting) if setting else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fmcluster"
    return base / f"{tool}-clean-{version}"


def digest(*parts: str | bytes) -> str:
    """One digest of the options and the input (each part NUL-separated, so no two lists give the same bytes)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else part.encode())
        h.update(b"\0")
    return h.hexdigest()
