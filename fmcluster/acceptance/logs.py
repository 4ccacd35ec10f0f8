"""The log files the acceptance jobs write, and the lines fmcluster's own job scripts add to them.

Every run of a job script writes one log file framed by two lines of our own::

    FMC-ACCEPTANCE kind=nccl test=all_reduce_perf scope=pair group=train instance_type=p5.48xlarge nodes=2 hosts=a,b
    ... what the tools printed (nccl-tests, NCCL_DEBUG=INFO, dcgmi diag, FMC-NODE lines) ...
    FMC-END rc=0

The header says what the log is, so a report needs no project file; a log without ``FMC-END``
was cut off (the job was killed, timed out or is still running).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

HEADER = "FMC-ACCEPTANCE"
END = "FMC-END"
KINDS = ("nccl", "dcgm", "node", "build")
"""``build``: the setup job that builds nccl-tests (templates/acceptance/setup_nccl_tests.sh.j2)."""
MAX_LOG_BYTES = 64 * 1024 * 1024
"""A log larger than this is not an acceptance log (NCCL_DEBUG=INFO on 64 nodes stays far below)."""

# Prefixes launchers add in front of each line: `srun --label` ("0: "), Open MPI's
# --tag-output ("[1,0]<stdout>:"), as in awsome-distributed-training's nccl-tests README.
_PREFIX = re.compile(r"^(?:\s*\d+: |\[\d+,\d+\]<std(?:out|err)>:)")
# `kubectl logs --prefix` labels each line with its pod and container (kubectl's logs command, `--prefix`)
_KUBECTL_PREFIX = re.compile(r"^\[pod/([^/\]\s]+)/[^\]\s]+\] ")


class AcceptanceError(Exception):
    """A log that cannot be judged: the message names the file and what to do."""


@dataclass(frozen=True)
class Log:
    """One acceptance log: its header fields, the lines between header and end, and the exit status."""

    path: Path
    meta: dict[str, str]
    lines: tuple[str, ...]
    rc: int | None
    """The exit status in ``FMC-END``; None when the log has no end line (cut off)."""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.meta["kind"]

    @property
    def ended(self) -> bool:
        return self.rc is not None

    @property
    def hosts(self) -> tuple[str, ...]:
        value = self.meta.get("hosts", "")
        return tuple(h for h in value.split(",") if h)

    def name(self, root: Path | None = None) -> str:
        if root is not None and root in self.path.parents:
            return str(self.path.relative_to(root))
        return str(self.path)


def strip_prefix(line: str) -> str:
    """A line without the launcher's rank label."""
    return _PREFIX.sub("", line, count=1)


def _fields(text: str, path: Path, what: str) -> dict[str, str]:
    out = {}
    for token in text.split():
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise AcceptanceError(f"{path}: the {what} line has {token!r}, not key=value "
                                  "(hint: was the log edited? render the jobs again)")
        out[key] = value
    return out


def _text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_LOG_BYTES:
            raise AcceptanceError(f"{path}: {size} bytes is larger than an acceptance log can be "
                                  f"({MAX_LOG_BYTES // 2**20} MiB); point the report at the jobs' logs/ folder")
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise AcceptanceError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def _by_pod(lines: list[str]) -> list[tuple[str | None, list[str]]]:
    """The lines of each pod, in the order the pods first appear, where ``kubectl logs --prefix`` labelled them
    (``[pod/NAME/CONTAINER] ``); the whole file as one stream otherwise."""
    if not any(_KUBECTL_PREFIX.match(line) for line in lines):
        return [(None, lines)]
    pods: dict[str, list[str]] = {}
    for line in lines:
        m = _KUBECTL_PREFIX.match(line)
        if m:
            pods.setdefault(m.group(1), []).append(line[m.end():])
    return list(pods.items())


def _section(path: Path, raw: list[str], first: int, stop: int, pod: str | None) -> Log:
    meta = _fields(raw[first][len(HEADER):], path, HEADER)
    if meta.get("kind") not in KINDS:
        raise AcceptanceError(f"{path}: kind={meta.get('kind')!r} in the {HEADER} line; one of {', '.join(KINDS)}")
    rc = None
    body_end = stop
    for i in range(stop - 1, first, -1):
        if raw[i].startswith(END):
            end = _fields(raw[i][len(END):], path, END)
            try:
                rc = int(end.get("rc", ""))
            except ValueError:
                raise AcceptanceError(f"{path}: {END} line without rc=NUMBER: {raw[i]!r}") from None
            body_end = i
            break
    return Log(path=path, meta=meta, lines=tuple(raw[first + 1:body_end]), rc=rc,
               extra={"pod": pod} if pod is not None else {})


def read_logs(path: Path) -> list[Log]:
    """Every acceptance log in one file: a job script's log holds one; what ``kubectl logs`` saved of a Kubernetes
    job may hold several (an MPIJob launcher prints one per test, a node-check pod its node and dcgm logs, and
    ``kubectl logs -l ... --prefix`` several pods' lines, each labelled ``[pod/NAME/CONTAINER]``). Each log runs from
    its ``FMC-ACCEPTANCE`` line to the next one (of the same pod). :class:`AcceptanceError` when there is none."""
    logs = []
    for pod, lines in _by_pod(_text(path).splitlines()):
        raw = [strip_prefix(line) for line in lines]
        starts = [i for i, line in enumerate(raw) if line.startswith(HEADER + " ")]
        logs += [_section(path, raw, first, stop, pod) for first, stop in zip(starts, starts[1:] + [len(raw)])]
    if not logs:
        raise AcceptanceError(f"{path}: no {HEADER} line; this is not a log of the jobs "
                              "`fmcluster acceptance render` writes (hint: run those jobs, then report on their logs/)")
    return logs


def read_log(path: Path) -> Log:
    """The first acceptance log in one file (:func:`read_logs`)."""
    return read_logs(path)[0]


def find_logs(target: Path) -> list[Path]:
    """The logs under a directory (``*.log``, ``*.out``; ``logs/`` of a rendered directory, where the Kubernetes
    jobs' README saves ``kubectl logs`` as ``*.log``), or the one file."""
    if target.is_file():
        return [target]
    if not target.is_dir():
        raise AcceptanceError(f"{target}: no such file or directory (hint: give the directory "
                              "`fmcluster acceptance render --out` wrote, or its logs/)")
    files = sorted(p for p in target.rglob("*") if p.is_file() and p.suffix in (".log", ".out"))
    if not files:
        raise AcceptanceError(f"{target}: no *.log or *.out files; submit the jobs first "
                              "(the README.md `acceptance render` wrote says how)")
    return files
