"""nccl-tests output and the NCCL_DEBUG=INFO lines that prove which transport NCCL used.

The table layout is nccl-tests' own (NVIDIA/nccl-tests ``src/util.cu``, ``writeResultHeader``,
``writeBenchmarkLinePreamble``, ``writeBenchmarkLineBody``, ``writeResultFooter``)::

    # nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 1 iters: 20 ...
    #  Rank  0 Group  0 Pid  41233 on ip-10-1-0-11 device  0 [0000:53:00] NVIDIA H100 80GB HBM3
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
              8             2     float     sum      -1    69.12    0.00    0.00      0    72.43    0.00    0.00      0
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 123.456
    # Collective test concluded: all_reduce_perf

the first group of time/algbw/busbw/#wrong is out-of-place, the second in-place; ``#wrong`` is
``N/A`` without validation. Bandwidths are GB/s (10^9 bytes per second), times microseconds.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

# --- the results table ---------------------------------------------------------------------------

_CONFIG = re.compile(r"^# nThread (\d+) nGpus (\d+) minBytes (\d+) maxBytes (\d+)")
_STARTING = re.compile(r"^# Collective test starting: (\S+)")
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)")
_OOB = re.compile(r"^# Out of bounds values\s*:\s*(\d+)")
_AVG = re.compile(r"^# Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_ROW_START = re.compile(r"^\s*\d+\s+\d+\s+\S+\s+\S+\s+-?\d+\s")


@dataclass(frozen=True)
class Result:
    """One placement (out-of-place or in-place) of one size."""

    time_us: float
    algbw: float
    busbw: float
    wrong: int | None
    """Elements that were wrong; None when nccl-tests did not check (``N/A``)."""


@dataclass(frozen=True)
class Row:
    size: int
    count: int
    dtype: str
    redop: str
    root: int
    out_of_place: Result | None
    in_place: Result


@dataclass(frozen=True)
class NcclRun:
    """What one nccl-tests binary printed."""

    test: str | None
    min_bytes: int | None
    max_bytes: int | None
    ranks: dict[int, str]
    """Rank -> host, from the "Using devices" lines."""
    rows: tuple[Row, ...]
    out_of_bounds: int | None
    avg_busbw: float | None
    """None when the footer is missing: the run did not finish."""

    @property
    def complete(self) -> bool:
        return self.avg_busbw is not None and self.out_of_bounds is not None

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.ranks.values())))

    def row(self, size: int) -> Row | None:
        return next((r for r in self.rows if r.size == size), None)

    @property
    def largest(self) -> Row | None:
        return self.rows[-1] if self.rows else None


def _number(token: str) -> float:
    return float(token)


def _result(tokens: list[str]) -> Result:
    time_us, algbw, busbw, wrong = tokens
    return Result(_number(time_us), _number(algbw), _number(busbw), None if wrong == "N/A" else int(float(wrong)))


def parse_row(line: str) -> Row | None:
    """A table row, or None when ``line`` is not one (13 fields; 9 when only in-place was run)."""
    if not _ROW_START.match(line):
        return None
    tokens = line.split()
    if len(tokens) >= 13:
        oop, ip = _result(tokens[5:9]), _result(tokens[9:13])
    elif len(tokens) >= 9:
        oop, ip = None, _result(tokens[5:9])
    else:
        return None
    try:
        return Row(int(tokens[0]), int(tokens[1]), tokens[2], tokens[3], int(tokens[4]), oop, ip)
    except ValueError:
        return None


def parse_nccl_tests(lines: list[str] | tuple[str, ...]) -> NcclRun:
    test = min_bytes = max_bytes = oob = None
    avg: float | None = None
    ranks: dict[int, str] = {}
    rows: list[Row] = []
    for line in lines:
        if m := _STARTING.match(line):
            test = m.group(1)
        elif m := _CONFIG.match(line):
            min_bytes, max_bytes = int(m.group(3)), int(m.group(4))
        elif m := _RANK.match(line):
            ranks[int(m.group(1))] = m.group(2)
        elif m := _OOB.match(line):
            oob = int(m.group(1))
        elif m := _AVG.match(line):
            avg = float(m.group(1))
        elif (row := parse_row(line)) is not None:
            rows.append(row)
    return NcclRun(test, min_bytes, max_bytes, ranks, tuple(rows), oob, avg)


# --- which transport NCCL used (NCCL_DEBUG=INFO) -------------------------------------------------
# NCCL prints INFO lines as "<host>:<pid>:<tid> [<dev>] NCCL INFO <message>" (NVIDIA/nccl
# src/debug.cc). The messages we read, and where each is printed:
#   "Using network <name>"                  NVIDIA/nccl src/init.cc (the net plugin NCCL chose)
#   "NET/Plugin: Loaded net plugin <name>"  NVIDIA/nccl src/plugin/net/net_v*.cc
#   "... via NET/<name>/<dev>[/GDRDMA]"      NVIDIA/nccl src/transport/net.cc (one per channel and peer)
#   "NET/Socket : Using ..."                NVIDIA/nccl src/transport/net_socket.cc (the socket transport started)
#   "NET/IB : Using ..."                    NVIDIA/nccl src/transport/net_ib/init.cc (InfiniBand verbs, e.g. NVLink ibp* devices)
# aws-ofi-nccl prefixes its own lines with "NET/OFI " (aws/aws-ofi-nccl include/nccl_ofi_log.h):
#   "NET/OFI Initializing aws-ofi-nccl <version>"            src/nccl_ofi_net.cpp
#   "NET/OFI Selected provider is <prov>, fabric is <fabric> (found <n> nics)"   src/nccl_ofi_net.cpp
# The plugin names itself "Libfabric", or "AWS Libfabric" when NCCL_NET asks for that name
# (aws-ofi-nccl src/nccl_ofi_interface_nvidia.cpp).

# Multi-node NVLink (GB200): each rank whose GPU reports an NVLink fabric prints (NVIDIA/nccl src/init.cc,
# fillInfo) "MNNVL busId 0x<bus> fabric UUID <hi>.<lo> cliqueId 0x<id> state <s> healthMask 0x<m>", where
# state is NVML's nvmlGpuFabricState_t (0 not supported, 1 not started, 2 in progress, 3 completed) and
# ranks with the same UUID and clique share one NVLink domain. Within it NCCL connects over NVLink (P2P),
# so an in-domain run has no "via NET/" channel: one that has went over the network instead.
FABRIC_COMPLETED = 3

PLUGIN_NAMES = ("Libfabric", "AWS Libfabric")
_INFO = re.compile(r"NCCL INFO (.*)$")
_WARN = re.compile(r"NCCL WARN (.*)$")
_USING_NETWORK = re.compile(r"^Using network (.+?)\s*$")
_LOADED = re.compile(r"^NET/Plugin: Loaded net plugin (.+?) \(v\d+\)")
_OFI_INIT = re.compile(r"^NET/OFI Initializing (.+?)\s*$")
_PROVIDER = re.compile(r"^NET/OFI Selected provider is ([^,]+), fabric is ([^ ]+) \(found (\d+) nics\)")
_CHANNEL = re.compile(r"via NET/(.+?)/(\d+)(?:\(\d+\))?(/GDRDMA)?")
_MNNVL = re.compile(r"^MNNVL busId 0x[0-9a-fA-F]+ fabric UUID ([0-9a-fA-F]+\.[0-9a-fA-F]+) cliqueId (0x[0-9a-fA-F]+) "
                    r"state (\d+) healthMask (0x[0-9a-fA-F]+)")


@dataclass(frozen=True)
class Fabric:
    """One rank's "MNNVL ..." line: its NVLink domain and the fabric's state."""

    domain: tuple[str, str]
    """(fabric UUID, clique ID)."""
    state: int
    health_mask: int


@dataclass(frozen=True)
class Transport:
    networks: frozenset[str]
    """Names in "Using network X" lines (every rank prints one)."""
    plugins_loaded: frozenset[str]
    ofi_version: str | None
    providers: frozenset[str]
    """libfabric providers aws-ofi-nccl selected ("efa")."""
    nics: frozenset[int]
    channel_nets: Counter = field(default_factory=Counter)
    """Net transport name -> channel connections through it."""
    gdrdma_channels: int = 0
    socket_lines: tuple[str, ...] = ()
    ib_lines: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    fabric: tuple[Fabric, ...] = ()
    """Multi-node NVLink: one entry per rank that printed an MNNVL line."""

    @property
    def info_lines_seen(self) -> bool:
        return bool(self.networks or self.plugins_loaded or self.providers or self.channel_nets or self.socket_lines)

    @property
    def libfabric(self) -> bool:
        return bool(self.networks) and self.networks <= set(PLUGIN_NAMES)

    @property
    def fell_back_to_socket(self) -> bool:
        return "Socket" in self.networks or self.channel_nets.get("Socket", 0) > 0 or bool(self.socket_lines)

    @property
    def used_ib(self) -> bool:
        return "IB" in self.networks or self.channel_nets.get("IB", 0) > 0


def parse_transport(lines: list[str] | tuple[str, ...]) -> Transport:
    networks, loaded, providers, nics = set(), set(), set(), set()
    channels: Counter = Counter()
    gdr = 0
    ofi_version = None
    socket, ib, warnings, fabric = [], [], [], []
    for line in lines:
        if m := _WARN.search(line):
            warnings.append(m.group(1).strip())
            continue
        m = _INFO.search(line)
        if not m:
            continue
        msg = m.group(1)
        if mm := _USING_NETWORK.match(msg):
            networks.add(mm.group(1))
        elif mm := _LOADED.match(msg):
            loaded.add(mm.group(1))
        elif mm := _OFI_INIT.match(msg):
            ofi_version = mm.group(1)
        elif mm := _PROVIDER.match(msg):
            providers.add(mm.group(1))
            nics.add(int(mm.group(3)))
        elif msg.startswith("NET/Socket : Using"):
            socket.append(line.strip())
        elif msg.startswith("NET/IB : Using"):
            ib.append(line.strip())
        elif mm := _MNNVL.match(msg):
            fabric.append(Fabric((mm.group(1), mm.group(2)), int(mm.group(3)), int(mm.group(4), 16)))
        if mm := _CHANNEL.search(msg):
            channels[mm.group(1)] += 1
            gdr += bool(mm.group(3))
    return Transport(frozenset(networks), frozenset(loaded), ofi_version, frozenset(providers), frozenset(nics),
                     channels, gdr, tuple(socket[:5]), tuple(ib[:5]), tuple(dict.fromkeys(warnings))[:10],
                     tuple(fabric))
