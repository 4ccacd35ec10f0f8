"""Stub ``squeue`` and ``sinfo`` for the Slurm metrics script, printing what the real clients print.

Each stub answers only the exact command line it knows (the options and ``-O`` format below, as squeue(1) and
sinfo(1) of Slurm 25.11 define them); any other line fails as the real client does on a format it does not know,
so a change of the script's formats fails the tests until the stubs (and what they print) change with it.

Output, as the real clients print it with those formats (sources: src/squeue/opts.c and src/sinfo/opts.c
``_parse_long_token`` at tag slurm-25-11-7-1: ``Field:|`` is size 0 -- the whole value, unpadded (print.c
``_print_str``) -- and suffix ``|``):
- squeue: ``Partition|State|UserName|tres-alloc|Reason`` per job (State in extended form, ``PENDING``; tres-alloc
  ``cpu=..,mem=..,node=..,billing=..,gres/gpu=N``; Reason ``None`` for a running job, ``Priority``, ``Resources``,
  ``ReqNodeNotAvail, UnavailableNodes:<nodes>``);
- sinfo ``-N``: ``NodeList|PartitionName|StateLong|Gres|GresUsed|TimeStamp|Reason`` per node and partition (Gres
  ``gpu:h100:8(S:0-1)``, GresUsed ``gpu:h100:8(IDX:0-7)``, ``(null)`` without GRES; TimeStamp ``Unknown`` and
  Reason ``none`` without a reason). The Gres/GresUsed forms are those SckyzO/slurm_exporter 1.8.4 documents from
  real clusters (internal/collector/gpus.go comments); the p5 form is unconfirmed on a real head node.

Flip a stub to failing with :func:`fail` (it then prints Slurm's "Unable to contact slurm controller" and exits 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SQUEUE_ARGS = ("-h", "-a", "-r", "-O", "Partition:|,State:|,UserName:|,tres-alloc:|,Reason:")
SINFO_ARGS = ("-h", "-a", "-N", "-O", "NodeList:|,PartitionName:|,StateLong:|,Gres:|,GresUsed:|,TimeStamp:|,Reason:")

_STUB = """#!/bin/bash
# A stub {name}: it knows one command line, prints {out} for it, fails on any other as the real client would.
expected=({args})
if [[ $# -ne ${{#expected[@]}} ]]; then
  echo "{name}: error: unexpected options: $*" >&2
  exit 1
fi
for i in "${{!expected[@]}}"; do
  if [[ "${{expected[$i]}}" != "${{@:$((i + 1)):1}}" ]]; then
    echo "{name}: error: Invalid field specification or option: ${{@:$((i + 1)):1}}" >&2
    exit 1
  fi
done
if [[ -e "$0.fail" ]]; then
  echo "{error}: Unable to contact slurm controller (connect failure)" >&2
  exit 1
fi
cat "$0.out"
"""


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


@dataclass(frozen=True)
class Job:
    partition: str
    state: str
    user: str
    tres: str
    reason: str

    def line(self) -> str:
        return f"{self.partition}|{self.state}|{self.user}|{self.tres}|{self.reason}"


@dataclass(frozen=True)
class Node:
    name: str
    partition: str
    state: str
    gres: str = "(null)"
    used: str = "(null)"
    since: str = "Unknown"
    reason: str = "none"

    def line(self) -> str:
        return f"{self.name}|{self.partition}|{self.state}|{self.gres}|{self.used}|{self.since}|{self.reason}"


def p5(used: int) -> tuple[str, str]:
    """A p5.48xlarge's GRES and GRES in use (8 H100)."""
    idx = "N/A" if used == 0 else (f"0-{used - 1}" if used > 1 else "0")
    return "gpu:h100:8(S:0-1)", f"gpu:h100:{used}(IDX:{idx})"


def gpu_tres(cpus: int, nodes: int, gpus: int) -> str:
    return f"cpu={cpus},mem={nodes * 2000}G,node={nodes},billing={cpus},gres/gpu={gpus}"


def install(bin_dir: Path) -> None:
    """The two stubs in ``bin_dir`` (the image's ``<slurm_prefix>/bin``), with nothing queued and no nodes."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, args, error in (("squeue", SQUEUE_ARGS, "slurm_load_jobs error"),
                              ("sinfo", SINFO_ARGS, "slurm_load_node error")):
        path = bin_dir / name
        path.write_text(_STUB.format(name=name, out=f"{name}.out", args=" ".join(_quote(a) for a in args),
                                     error=error))
        path.chmod(0o755)
        (bin_dir / f"{name}.out").write_text("")


def set_queue(bin_dir: Path, jobs: list[Job]) -> None:
    (bin_dir / "squeue.out").write_text("".join(j.line() + "\n" for j in jobs))


def set_nodes(bin_dir: Path, nodes: list[Node]) -> None:
    (bin_dir / "sinfo.out").write_text("".join(n.line() + "\n" for n in nodes))


def fail(bin_dir: Path, name: str, failing: bool = True) -> None:
    flag = bin_dir / f"{name}.fail"
    if failing:
        flag.touch()
    else:
        flag.unlink(missing_ok=True)


# A small cluster: partition gpu (3 p5 nodes: 2 allocated to carol, 1 idle and powered down), partition debug
# (2 CPU nodes, idle). alice has 2 jobs waiting on priority, bob 1 on resources; carol runs 2 jobs of 8 GPUs each.
HEALTHY_JOBS = [
    Job("gpu", "RUNNING", "carol", gpu_tres(192, 1, 8), "None"),
    Job("gpu", "RUNNING", "carol", gpu_tres(192, 1, 8), "None"),
    Job("gpu", "PENDING", "alice", gpu_tres(192, 1, 8), "Priority"),
    Job("gpu", "PENDING", "alice", gpu_tres(192, 1, 8), "Priority"),
    Job("gpu", "PENDING", "bob", gpu_tres(384, 2, 16), "Resources"),
]
HEALTHY_NODES = [
    Node("gpu-dy-p5-1", "gpu", "idle~", *p5(0)),
    Node("gpu-st-p5-1", "gpu", "allocated", *p5(8)),
    Node("gpu-st-p5-2", "gpu", "allocated", *p5(8)),
    Node("debug-st-c7i-1", "debug", "idle"),
    Node("debug-st-c7i-2", "debug", "idle"),
]
