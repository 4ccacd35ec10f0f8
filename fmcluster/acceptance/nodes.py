"""The per-node check lines the node-checks job prints (``templates/acceptance/node_checks.sh.j2``).

One line per node and check, facts only (the judge compares them with the catalog)::

    FMC-NODE <host> efa fi_info=<EFA domains fi_info -p efa lists> sysfs=<infiniband devices bound to the efa driver> other=<other RDMA devices, comma-separated>
    FMC-NODE <host> fi_info rc=<exit status of fi_info -p efa -t FI_EP_RDM>
    FMC-NODE <host> health <healthy|unhealthy: reason|unknown: reason>
    FMC-NODE <host> dcgm rc=<exit status of dcgmi diag> log=<its log file>
    FMC-NODE <host> gpus count=<GPUs nvidia-smi lists>
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

TAG = "FMC-NODE"
_LINE = re.compile(r"^FMC-NODE (\S+) (\w+)(?: (.*))?$")


@dataclass
class NodeFacts:
    host: str
    efa_fi_info: int | None = None
    efa_sysfs: int | None = None
    other_rdma: tuple[str, ...] = ()
    fi_info_rc: int | None = None
    health: str | None = None
    dcgm_rc: int | None = None
    dcgm_log: str | None = None
    gpus: int | None = None
    unknown: list[str] = field(default_factory=list)


def _kv(text: str) -> dict[str, str]:
    return dict(t.partition("=")[::2] for t in text.split() if "=" in t)


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def parse_node_lines(lines: list[str] | tuple[str, ...]) -> dict[str, NodeFacts]:
    nodes: dict[str, NodeFacts] = {}
    for line in lines:
        m = _LINE.match(line.strip())
        if not m:
            continue
        host, check, rest = m.group(1), m.group(2), m.group(3) or ""
        node = nodes.setdefault(host, NodeFacts(host))
        kv = _kv(rest)
        if check == "efa":
            node.efa_fi_info, node.efa_sysfs = _int(kv.get("fi_info")), _int(kv.get("sysfs"))
            node.other_rdma = tuple(d for d in kv.get("other", "").split(",") if d)
        elif check == "fi_info":
            node.fi_info_rc = _int(kv.get("rc"))
        elif check == "health":
            node.health = rest.strip()
        elif check == "dcgm":
            node.dcgm_rc, node.dcgm_log = _int(kv.get("rc")), kv.get("log")
        elif check == "gpus":
            node.gpus = _int(kv.get("count"))
        else:
            node.unknown.append(line.strip())
    return nodes
