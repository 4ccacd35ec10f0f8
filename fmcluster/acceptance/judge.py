"""Judge acceptance logs against the catalog: what a node of each instance type must show.

No pass/fail on bandwidth without a sourced figure: where the catalog has a published
nccl-tests figure (:attr:`fmcluster.catalog.InstanceType.nccl_references`) a run with the same
test and node count must reach it within the margin; otherwise the report gives the bus
bandwidth as a fraction of the EFA line rate (``efa_aggregate_gbps``) and says "no reference".
That fraction is a comparison figure, not a limit: in all_reduce each node's GPUs also move
data over NVLink, so bus bandwidth may exceed the EFA line rate (2 x p5: ~487 of 400 GB/s).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from fmcluster import catalog
from fmcluster.acceptance.dcgm import parse_dcgm_diag
from fmcluster.acceptance.logs import Log
from fmcluster.acceptance.nccl import (
    FABRIC_COMPLETED,
    NcclRun,
    Transport,
    parse_nccl_tests,
    parse_transport,
)
from fmcluster.acceptance.nodes import parse_node_lines

NO_REFERENCE = "no reference"
GIB, MIB = 2**30, 2**20


@dataclass(frozen=True)
class Finding:
    level: Literal["fail", "note"]
    file: str
    message: str


@dataclass(frozen=True)
class Expected:
    """What the catalog says a node of ``instance_type`` has."""

    instance_type: str
    gpus: int
    efa_devices: int
    efa_line_rate_gb_s: float
    nvlinks_per_gpu: int | None
    references: tuple[catalog.NcclReference, ...]

    @classmethod
    def of(cls, instance_type: str) -> Expected | None:
        t = catalog.CATALOG.get(instance_type)
        if t is None:
            return None
        return cls(t.name, t.gpus, t.max_efa_interfaces, t.efa_aggregate_gbps / 8, t.nvlinks_per_gpu, t.nccl_references)


def size_label(size: int) -> str:
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


class Judge:
    """Collects findings while judging logs; ``name`` turns a log path into the name reports show."""

    def __init__(self, margin: float, name=str) -> None:
        self.margin = margin
        self.name = name
        self.findings: list[Finding] = []

    def fail(self, log: Log, message: str) -> None:
        self.findings.append(Finding("fail", self.name(log.path), message))

    def note(self, log: Log, message: str) -> None:
        self.findings.append(Finding("note", self.name(log.path), message))

    def expected(self, log: Log) -> Expected | None:
        itype = log.meta.get("instance_type", "")
        exp = Expected.of(itype)
        if exp is None:
            self.fail(log, f"instance_type={itype!r} in the header is not in the catalog "
                           f"({', '.join(catalog.CATALOG)}); render the jobs again with this fmcluster")
        return exp

    def _tail(self, log: Log) -> str:
        text = [line.strip() for line in log.lines if line.strip()]
        return text[-1][:300] if text else "the log is empty"

    # --- nccl-tests -----------------------------------------------------------------------------

    def nccl(self, log: Log) -> dict[str, Any]:
        run, transport = parse_nccl_tests(log.lines), parse_transport(log.lines)
        exp = self.expected(log)
        test = run.test or log.meta.get("test")
        scope = log.meta.get("scope", "group")
        hosts = run.hosts or log.hosts
        if not run.rows:  # nothing ran: the one reason is all there is to say
            cut = "" if log.ended else "truncated before the first result (no FMC-END: the job was killed or timed out); "
            self.fail(log, f"no nccl-tests results ({test}): {cut}{self._tail(log)}")
            return self._record(log, run, transport, test, scope, hosts)
        if not run.complete or not log.ended:
            last = run.rows[-1].size
            of = f" of {size_label(run.max_bytes)}" if run.max_bytes else ""
            self.fail(log, f"truncated: the {test} table stops at {size_label(last)}{of} and has no "
                           f"'# Avg bus bandwidth' line{'' if log.ended else ' nor FMC-END'}; the job was killed or "
                           "timed out (rerun it; `sacct -j JOBID` says why)")
        if log.rc not in (None, 0):
            self.fail(log, f"{test} exited {log.rc}: {self._tail(log)}")
        if run.out_of_bounds:
            self.fail(log, f"{test}: {run.out_of_bounds} out-of-bounds values (wrong results): a GPU or link corrupts data")
        self._transport(log, transport, scope)
        out = self._record(log, run, transport, test, scope, hosts)
        if exp is not None and run.rows and out["complete"]:
            largest = run.rows[-1]
            busbw = (largest.out_of_place or largest.in_place).busbw
            if scope != "in-domain":
                out["line_rate_fraction"] = round(busbw / exp.efa_line_rate_gb_s, 3)
            out["references"] = self._references(log, run, exp, test, len(hosts))
        return out

    def _record(self, log: Log, run: NcclRun, transport: Transport, test: str | None, scope: str,
                hosts: tuple[str, ...]) -> dict[str, Any]:
        return {
            "file": self.name(log.path), "group": log.meta.get("group"), "instance_type": log.meta.get("instance_type"),
            "test": test, "scope": scope, "hosts": list(hosts), "ranks": len(run.ranks),
            "avg_busbw": run.avg_busbw, "complete": run.complete and log.ended,
            "rows": [_row(r) for r in run.rows], "transport": _transport_json(transport),
            "line_rate_fraction": None, "references": [],
        }

    def _transport(self, log: Log, tr: Transport, scope: str) -> None:
        if not tr.info_lines_seen:
            self.fail(log, "no NCCL_DEBUG=INFO lines: the transport cannot be proven (the rendered jobs set "
                           "NCCL_DEBUG=INFO; was the log cut or NCCL_DEBUG overridden?)")
            return
        if tr.fell_back_to_socket:
            evidence = tr.socket_lines[0] if tr.socket_lines else f"networks {sorted(tr.networks)}, channels {dict(tr.channel_nets)}"
            self.fail(log, f"NCCL fell back to sockets, not EFA ({evidence}); the aws-ofi-nccl plugin did not load: "
                           "check LD_LIBRARY_PATH (the job sources the bootstrap's profile) or the container's plugin")
        elif tr.used_ib:
            self.fail(log, "NCCL used its InfiniBand transport (IB), not EFA: RDMA devices that are not EFA (NVLink "
                           f"ibp* on p6-b200) were taken for a network ({tr.ib_lines[0] if tr.ib_lines else ''}); "
                           "the aws-ofi-nccl plugin did not load")
        elif not tr.libfabric:
            self.fail(log, f"NCCL used network {', '.join(sorted(tr.networks)) or 'unknown'}, not Libfabric "
                           "(aws-ofi-nccl): no 'Using network Libfabric' line")
        if not tr.fell_back_to_socket and not tr.used_ib and "efa" not in tr.providers:
            found = ", ".join(sorted(tr.providers)) or "none"
            self.fail(log, f"aws-ofi-nccl did not select the efa libfabric provider (selected: {found}; "
                           "no 'NET/OFI Selected provider is efa' line)")
        if scope == "in-domain":
            self._nvlink_domain(log, tr)
        for warning in tr.warnings[:3]:
            self.note(log, f"NCCL WARN {warning}")

    def _nvlink_domain(self, log: Log, tr: Transport) -> None:
        """An in-domain run must stay on one multi-node NVLink fabric, completed and healthy, and off the network."""
        if not tr.fabric:
            self.fail(log, "no 'MNNVL ... fabric UUID' lines: NCCL saw no multi-node NVLink fabric (is nvidia-imex "
                           "running with every node in /etc/nvidia-imex/nodes_config.cfg? NCCL >= 2.25.2?)")
            return
        bad = sorted({f.state for f in tr.fabric if f.state != FABRIC_COMPLETED})
        if bad:
            self.fail(log, f"the NVLink fabric is not ready on some GPUs (state {', '.join(map(str, bad))}; "
                           f"{FABRIC_COMPLETED} = completed): Fabric Manager / IMEX have not finished")
        unhealthy = sum(1 for f in tr.fabric if f.health_mask)
        if unhealthy:
            self.fail(log, f"{unhealthy} GPU(s) report a non-zero NVLink fabric healthMask")
        domains = {f.domain for f in tr.fabric}
        if len(domains) > 1:
            self.fail(log, f"the ranks span {len(domains)} NVLink domains (fabric UUID, clique): not one UltraServer")
        over_net = sum(tr.channel_nets.values())
        if over_net:
            self.fail(log, f"{over_net} channel connection(s) of the in-domain run went over the network "
                           f"({', '.join(sorted(tr.channel_nets))}), not NVLink: multi-node NVLink is not in use")

    def _references(self, log: Log, run: NcclRun, exp: Expected, test: str | None, nodes: int) -> list[dict[str, Any]]:
        refs = [r for r in exp.references if r.test == test and r.nodes == nodes]
        out = []
        for ref in refs:
            row = run.row(ref.size_bytes)
            if row is None:
                self.note(log, f"no {size_label(ref.size_bytes)} result to compare with the reference "
                               f"{ref.busbw_gb_s} GB/s ({ref.source})")
                continue
            measured = (row.out_of_place or row.in_place).busbw
            passed = measured >= ref.busbw_gb_s * (1 - self.margin)
            out.append({"size": ref.size_bytes, "busbw": measured, "reference": ref.busbw_gb_s,
                        "fraction": round(measured / ref.busbw_gb_s, 3), "pass": passed, "source": ref.source})
            if not passed:
                self.fail(log, f"{test} on {nodes} x {exp.instance_type}: {measured} GB/s bus bandwidth at "
                               f"{size_label(ref.size_bytes)} is more than {self.margin:.0%} below the reference "
                               f"{ref.busbw_gb_s} GB/s ({ref.source})")
        return out

    # --- dcgmi diag -----------------------------------------------------------------------------

    def dcgm(self, log: Log) -> dict[str, Any]:
        diag = parse_dcgm_diag(log.lines)
        exp = self.expected(log)
        host = log.meta.get("host", "?")
        if not diag.ran:
            self.fail(log, f"{host}: dcgmi diag did not run: {diag.errors[0] if diag.errors else self._tail(log)}")
        elif not diag.complete or not log.ended:
            self.fail(log, f"{host}: truncated: the dcgmi diag table has no closing border"
                           f"{'' if log.ended else ' and the log no FMC-END'} (the job was killed or timed out; rerun it)")
        for test in diag.failed:
            gpus = [e for e, r in test.entities.items() if r == "Fail"]
            why = "; ".join(test.warnings) or "no warning printed"
            self.fail(log, f"{host}: dcgmi diag {test.name} failed{' on ' + ', '.join(gpus) if gpus else ''}: {why}")
        if exp is not None and diag.ran and diag.complete and len(diag.gpus) != exp.gpus:
            self.fail(log, f"{host}: dcgmi diag tested {len(diag.gpus)} GPUs; {exp.instance_type} has {exp.gpus}")
        if log.rc not in (None, 0) and not diag.failed:
            self.fail(log, f"{host}: dcgmi diag exited {log.rc}: {diag.errors[0] if diag.errors else self._tail(log)}")
        return {"file": self.name(log.path), "host": host, "group": log.meta.get("group"),
                "nvlinks_expected": log.meta.get("nvlinks_expected"),
                "tests": {t.name: t.result for t in diag.tests}, "failed": [t.name for t in diag.failed],
                "gpus": len(diag.gpus)}

    # --- per-node checks ------------------------------------------------------------------------

    def nodes(self, log: Log) -> list[dict[str, Any]]:
        facts = parse_node_lines(log.lines)
        exp = self.expected(log)
        if not log.ended:
            self.fail(log, "truncated: no FMC-END line (the node-checks job was killed or timed out; rerun it)")
        wanted = int(log.meta.get("nodes", "0") or 0)
        if wanted and len(facts) < wanted:
            self.fail(log, f"only {len(facts)} of {wanted} nodes reported their checks")
        out = []
        for host, f in sorted(facts.items()):
            if exp is not None:
                if f.gpus is not None and f.gpus != exp.gpus:
                    self.fail(log, f"{host}: nvidia-smi lists {f.gpus} GPUs; {exp.instance_type} has {exp.gpus}")
                for label, count in (("fi_info -p efa", f.efa_fi_info), ("/sys/class/infiniband (efa driver)", f.efa_sysfs)):
                    if count is None:
                        self.fail(log, f"{host}: no EFA count from {label} (the check did not run)")
                    elif count != exp.efa_devices:
                        self.fail(log, f"{host}: {label} shows {count} EFA devices; {exp.instance_type} has "
                                       f"{exp.efa_devices} and the launch template attaches all of them")
            if f.fi_info_rc not in (0, None):
                self.fail(log, f"{host}: `fi_info -p efa -t FI_EP_RDM` exited {f.fi_info_rc}: no EFA provider")
            if f.other_rdma:
                self.note(log, f"{host}: RDMA devices that are not EFA: {', '.join(f.other_rdma)} "
                               "(NVLink ibp* on p6-b200): NCCL must not use them (the NCCL runs' transport check says whether it did)")
            if f.health is None:
                self.fail(log, f"{host}: no health line (the check did not run)")
            elif f.health.startswith("unhealthy"):
                self.fail(log, f"{host}: the bootstrap's health check says {f.health}")
            elif not f.health.startswith("healthy"):
                self.note(log, f"{host}: health check: {f.health}")
            if f.dcgm_rc not in (0, None):
                self.fail(log, f"{host}: dcgmi diag exited {f.dcgm_rc} (see {f.dcgm_log})")
            out.append({"host": host, "group": log.meta.get("group"), "gpus": f.gpus, "efa_fi_info": f.efa_fi_info,
                        "efa_sysfs": f.efa_sysfs, "other_rdma": list(f.other_rdma), "fi_info_rc": f.fi_info_rc,
                        "health": f.health, "dcgm_rc": f.dcgm_rc})
        return out


def _row(r) -> dict[str, Any]:
    def res(x):
        return None if x is None else {"time_us": x.time_us, "algbw": x.algbw, "busbw": x.busbw, "wrong": x.wrong}
    return {"size": r.size, "count": r.count, "type": r.dtype, "redop": r.redop,
            "out_of_place": res(r.out_of_place), "in_place": res(r.in_place)}


def _transport_json(tr: Transport) -> dict[str, Any]:
    return {"networks": sorted(tr.networks), "providers": sorted(tr.providers), "nics": sorted(tr.nics),
            "ofi": tr.ofi_version, "channels": dict(tr.channel_nets), "gdrdma_channels": tr.gdrdma_channels,
            "socket_fallback": tr.fell_back_to_socket}
