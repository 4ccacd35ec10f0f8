"""The acceptance report: every log under a directory, judged; a table for people and JSON for machines."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fmcluster.acceptance.judge import NO_REFERENCE, Finding, Judge, size_label
from fmcluster.acceptance.logs import AcceptanceError, Log, find_logs, read_logs
from fmcluster.acceptance.pairs import DEFAULT_MARGIN, ring, slow_nodes


@dataclass
class Report:
    margin: float
    runs: list[dict[str, Any]] = field(default_factory=list)
    dcgm: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    slow: list[dict[str, Any]] = field(default_factory=list)
    builds: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(f.level == "fail" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {"passed": not self.failed, "margin": self.margin, "nccl": self.runs, "dcgm": self.dcgm,
                "nodes": self.nodes, "slow_nodes": self.slow, "builds": self.builds,
                "findings": [{"level": f.level, "file": f.file, "message": f.message} for f in self.findings]}


def build_report(target: Path, margin: float = DEFAULT_MARGIN) -> Report:
    """Judge every acceptance log under ``target`` (a directory or one log); :class:`AcceptanceError`
    when there is nothing to judge."""
    root = target if target.is_dir() else target.parent
    judge = Judge(margin, name=lambda p: str(p.relative_to(root)) if root in p.parents else str(p))
    report = Report(margin)
    skipped = []
    for path in find_logs(target):
        try:
            logs = read_logs(path)
        except AcceptanceError as exc:
            if target.is_file():
                raise
            skipped.append(str(exc))
            continue
        for log in logs:
            if log.kind == "nccl":
                report.runs.append(judge.nccl(log))
            elif log.kind == "dcgm":
                report.dcgm.append(judge.dcgm(log))
            elif log.kind == "build":
                report.builds.append(_build(log, judge))
            else:
                report.nodes.extend(judge.nodes(log))
    if not (report.runs or report.dcgm or report.nodes or report.builds):
        raise AcceptanceError(f"{target}: no acceptance logs among {len(skipped)} files: " + "; ".join(skipped[:3]))
    for message in skipped:
        judge.findings.append(Finding("note", message.split(":", 1)[0], "skipped: " + message.split(": ", 1)[-1]))
    _slow(report, judge, margin)
    _coverage(report, judge, root)
    report.findings = judge.findings
    return report


def _build(log: Log, judge: Judge) -> dict[str, Any]:
    """The setup job's nccl-tests build: failed or cut off, it fails the report, naming its log."""
    entry = {"group": log.meta.get("group"), "host": ",".join(log.hosts), "version": log.meta.get("version"),
             "rc": log.rc, "file": judge.name(log.path),
             "said": [line[len("fmc-setup: "):] for line in log.lines if line.startswith("fmc-setup: ")]}
    tail = next((line.strip()[:300] for line in reversed(log.lines) if line.strip()), "the log is empty")
    if not log.ended:
        judge.fail(log, f"the nccl-tests build was cut off (no FMC-END line): submit the setup job again ({tail})")
    elif log.rc != 0:
        judge.fail(log, f"the nccl-tests build failed (rc={log.rc}): {tail}")
    return entry


MANIFEST = "acceptance.json"
"""What ``acceptance render`` wrote beside the jobs: per group, its nodes and jobs (the report's expectations)."""


def _manifest(root: Path) -> dict[str, Any] | None:
    for folder in (root, root.parent):
        path = folder / MANIFEST
        if path.is_file():
            try:
                return json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise AcceptanceError(f"{path}: not the JSON `acceptance render` writes ({exc})") from None
    return None


def _coverage(report: Report, judge: Judge, root: Path) -> None:
    """Every node and run the rendered jobs promise left a log: a node that never ran its checks, or a
    job never submitted, fails here (each node and run writes its own log, so no single log can tell)."""
    manifest = _manifest(root)
    if manifest is None:
        judge.findings.append(Finding("note", str(root), f"no {MANIFEST} here or one folder up: the report cannot "
                                                         "tell whether every node and run left a log"))
        return
    for group in manifest.get("groups", []):
        name, nodes = group["group"], int(group["nodes"])
        where = f"group {name}"
        for job in group["jobs"]:
            if job["scope"] == "setup":
                if not any(b["group"] == name for b in report.builds):
                    judge.findings.append(Finding("fail", where, f"no nccl-tests build log: submit {job['file']} first "
                                                  "(the other jobs run what it builds)"))
                continue
            if job["scope"] == "node":
                for what, entries in (("node checks", report.nodes), ("dcgmi diag", report.dcgm)):
                    hosts = {e["host"] for e in entries if e["group"] == name}
                    if len(hosts) < nodes:
                        judge.findings.append(Finding("fail", where, f"{what} from {len(hosts)} of {nodes} nodes: "
                                                      f"submit {job['file']} (again) and look for the missing nodes' logs"))
                continue
            runs = [r for r in report.runs if r["group"] == name and r["scope"] == job["scope"]]
            want = len(ring([str(i) for i in range(nodes)])) if job["scope"] == "pair" else 1
            for test in job["tests"]:
                got = sum(1 for r in runs if r["test"] == test)
                if got < want:
                    judge.findings.append(Finding("fail", where, f"{job['scope']} {test}: {got} of {want} run(s) left "
                                                  f"a log: submit {job['file']} (again)"))


def _busbw(run: dict[str, Any]) -> float | None:
    if not run["rows"] or not run["complete"]:
        return None
    last = run["rows"][-1]
    return (last["out_of_place"] or last["in_place"])["busbw"]


def _slow(report: Report, judge: Judge, margin: float) -> None:
    groups: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
    files: dict[tuple[str, str], str] = {}
    for run in report.runs:
        value = _busbw(run)
        if run["scope"] != "pair" or value is None or len(run["hosts"]) != 2:
            continue
        a, b = sorted(run["hosts"])
        groups.setdefault((run["group"] or "", run["test"] or ""), {})[(a, b)] = value
        files[(a, b)] = run["file"]
    for (group, test), values in sorted(groups.items()):
        flagged, note = slow_nodes(values, margin)
        where = f"group {group}, {test} pairs"
        if note:
            judge.findings.append(Finding("note", where, note))
        for node in flagged:
            logs = ", ".join(f for pair, f in sorted(files.items()) if node.host in pair and pair in values)
            pairs = ", ".join(f"with {p}: {v:g} GB/s" for p, v in sorted(node.pairs.items())) + f"; logs {logs}"
            judge.findings.append(Finding("fail", where, f"slow node {node.host}: every pair is more than {margin:.0%} "
                                                         f"below the median {node.median:g} GB/s ({pairs})"))
            report.slow.append({"group": group, "test": test, "host": node.host, "pairs": node.pairs,
                                "median": node.median})


def _f(value: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def to_text(report: Report) -> str:
    out: list[str] = []
    for run in report.runs:
        title = (f"{run['test']}  {run['scope']}  group {run['group']}  {run['instance_type']}  "
                 f"{len(run['hosts'])} nodes, {run['ranks']} ranks  ({run['file']})")
        out += [title, f"  hosts: {', '.join(run['hosts'])}"]
        tr = run["transport"]
        out.append(f"  transport: network {', '.join(tr['networks']) or '?'}, provider {', '.join(tr['providers']) or '?'}, "
                   f"NICs {', '.join(map(str, tr['nics'])) or '?'}, GDRDMA channels {tr['gdrdma_channels']}"
                   + ("  SOCKET FALLBACK" if tr["socket_fallback"] else ""))
        out.append(f"  {'size':>10}  {'oop algbw':>9}  {'oop busbw':>9}  {'ip algbw':>9}  {'ip busbw':>9}   GB/s")
        for row in run["rows"]:
            oop, ip = row["out_of_place"] or {}, row["in_place"]
            out.append(f"  {size_label(row['size']):>10}  {_f(oop.get('algbw')):>9}  {_f(oop.get('busbw')):>9}  "
                       f"{_f(ip['algbw']):>9}  {_f(ip['busbw']):>9}")
        frac = run["line_rate_fraction"]
        if not run["complete"]:
            out.append("  incomplete run: no figures judged")
        else:
            out.append(f"  largest size: busbw {_f(frac, '{:.0%}')} of the EFA line rate"
                       if frac is not None else "  largest size: in-domain (NVLink only): EFA line rate does not apply")
        if run["references"]:
            for ref in run["references"]:
                out.append(f"  vs reference at {size_label(ref['size'])}: {ref['busbw']:g} of {ref['reference']:g} GB/s "
                           f"({ref['fraction']:.0%}) {'pass' if ref['pass'] else 'FAIL'}  [{ref['source']}]")
        else:
            out.append(f"  vs reference: {NO_REFERENCE}")
        out.append("")
    if report.nodes:
        out.append(f"{'node':<24} {'group':<12} {'GPUs':>4} {'EFA fi_info':>11} {'EFA sysfs':>9}  health")
        for n in report.nodes:
            out.append(f"{n['host']:<24} {n['group'] or '-':<12} {_f(n['gpus'], '{}'):>4} {_f(n['efa_fi_info'], '{}'):>11} "
                       f"{_f(n['efa_sysfs'], '{}'):>9}  {n['health'] or '-'}")
        out.append("")
    for d in report.dcgm:
        tests = ", ".join(f"{k} {v}" for k, v in d["tests"].items()) or "no results"
        out.append(f"dcgmi diag {d['host']} (NVLinks expected per GPU: {d['nvlinks_expected'] or 'not set'}): {tests}")
    if report.dcgm:
        out.append("")
    for b in report.builds:
        state = "ok" if b["rc"] == 0 else ("cut off" if b["rc"] is None else f"FAILED (rc={b['rc']})")
        out.append(f"nccl-tests {b['version'] or '?'} build, group {b['group']} on {b['host'] or '?'}: {state}  ({b['file']})")
    if report.builds:
        out.append("")
    for f in report.findings:
        out.append(f"{'FAIL' if f.level == 'fail' else 'note'}  {f.file}: {f.message}")
    out.append(f"acceptance: {'FAILED' if report.failed else 'passed'} "
               f"({len(report.runs)} NCCL runs, {len(report.nodes)} nodes, {len(report.dcgm)} dcgmi diag logs)")
    return "\n".join(out) + "\n"
