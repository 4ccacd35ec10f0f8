"""Synth-time benchmarks. Run with `make bench` (see bench/README.md for the method).

Variants, each a fresh process as `cdk synth` runs ``app.py`` (``CDK_OUTDIR``, ``CDK_CONTEXT_JSON``):

- ``floor``, ``floor_bare``: a CDK app with one resource, with and without CDK's built-in CloudFormation
  validation engine (fmcluster's app turns it off): the jsii floor; ``floor_nag``: ``floor_bare`` with cdk-nag's
  AwsSolutions pack, as fmcluster's app adds it;
- ``l1_1``, ``l1_20``: the default project's resources and outputs (from its assembly), 1 and 20 times, each a single
  L1 construct, cdk-nag on: the least any CDK app spends on the same templates (``bench/floor_app.py``);
- ``default``: the default project alone, cdk-nag on, as `make synth` runs it;
- ``default_without_nag``: the same with ``-c nag=false``;
- ``default_among_20``: the default project while the projects folder holds 20 projects;
- ``all_20``: those 20 projects in one app run (``-c project=all``);
- ``pcluster``: ParallelCluster 3.x's own synthesis of the cluster fmcluster configures for the default project
  (``bench/pcluster_synth.py`` in ``.venv-pcluster``, on the ``cluster.yaml`` that
  ``fmcluster parallelcluster config default`` writes).

Each is timed over several runs, interleaved so that noise on the shared machine hits every variant alike, as wall
time and as CPU time (user + system of the process and the Node.js processes jsii starts, which it waits for).
Medians of both are reported; compare ratios, not seconds. Targets: ``all_20 / default <= 2.0``,
``default / pcluster <= 0.22``, ``default / floor <= 1.5``, ``among_20 / alone <= 1.10``.
Results are written to ``.bench/synth.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
PCLUSTER_PYTHON = ROOT / ".venv-pcluster" / "bin" / "python"

TARGETS = {"all_20_over_default": 2.0, "default_over_pcluster": 0.22, "default_over_floor": 1.5,
           "among_20_over_alone": 1.10}
RATIOS = {  # name: (numerator, denominator)
    "all_20_over_default": ("all_20", "default"),
    "default_over_pcluster": ("default", "pcluster"),
    "default_over_floor": ("default", "floor"),
    "default_over_floor_bare": ("default", "floor_bare"),
    "default_without_nag_over_floor_bare": ("default_without_nag", "floor_bare"),
    "among_20_over_alone": ("default_among_20", "default"),
    # the floors under the targets: what any CDK app with cdk-nag spends (bench/floor_app.py)
    "floor_nag_over_pcluster": ("floor_nag", "pcluster"),
    "l1_1_over_pcluster": ("l1_1", "pcluster"),
    "l1_20_over_l1_1": ("l1_20", "l1_1"),
}


def _env(projects_dir: Path, outdir: Path, project: str, **context: str) -> dict[str, str]:
    path = f"{ROOT / 'node_modules' / '.bin'}{os.pathsep}{os.environ['PATH']}"
    # Bytecode cached as a user's `cdk synth` caches it (the warm-up run writes it), even where the shell says not to.
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**inherited, "PATH": path, "FMCLUSTER_PROJECTS_DIR": str(projects_dir), "CDK_OUTDIR": str(outdir),
            "CDK_CONTEXT_JSON": json.dumps({"project": project, **context}), "CDK_DISABLE_CLI_TELEMETRY": "true",
            "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION": "1"}


def _time(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run; CPU counts the process and every child it waited for (jsii's Node.js)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.decode(errors='replace')[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def make_projects(folder: Path, count: int) -> None:
    """``count`` projects like the default one, each with its own name and VPC CIDR."""
    text = (ROOT / "projects" / "default.yaml").read_text()
    for i in range(count):
        name = "default" if i == 0 else f"team-{i:02d}"
        body = text.replace("name: default", f"name: {name}").replace("10.0.0.0/16", f"10.{i}.0.0/16")
        (folder / f"{name}.yaml").write_text(body)


def pcluster_facts(config: dict[str, Any]) -> dict[str, Any]:
    """What ParallelCluster's synthesis looks up, for ``config``'s own IDs: moto's snapshot of DescribeInstanceTypes
    for its instance types, and a subnet and an FSx for Lustre file system for its placeholder IDs."""
    import moto

    with gzip.open(Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz") as fh:
        known = json.load(fh)
    head = config["HeadNode"]
    types = {head["InstanceType"]}
    subnets = {head["Networking"]["SubnetId"]}
    for queue in config["Scheduling"]["SlurmQueues"]:
        subnets.update(queue["Networking"]["SubnetIds"])
        types.update(cr["InstanceType"] for cr in queue["ComputeResources"])
    vpc = "vpc-00000000000000000"
    file_systems = [s["FsxLustreSettings"]["FileSystemId"] for s in config.get("SharedStorage", [])
                    if s["StorageType"] == "FsxLustre" and "FileSystemId" in s.get("FsxLustreSettings", {})]
    return {
        "instance_types": {t: known[t] for t in sorted(types)},
        "subnets": {s: {"SubnetId": s, "VpcId": vpc, "AvailabilityZone": "us-east-1a", "AvailabilityZoneId": "use1-az6",
                        "CidrBlock": "10.0.0.0/20", "State": "available"} for s in sorted(subnets)},
        "file_systems": {f: {"FileSystemId": f, "FileSystemType": "LUSTRE", "Lifecycle": "AVAILABLE", "VpcId": vpc,
                             "DNSName": f"{f}.fsx.us-east-1.amazonaws.com", "SubnetIds": sorted(subnets),
                             "NetworkInterfaceIds": ["eni-00000000000000000"],
                             "LustreConfiguration": {"DeploymentType": "PERSISTENT_2", "MountName": "abcdefgh"}}
                         for f in file_systems},
    }


def pcluster_variant(work: Path, alone: Path) -> tuple[list[str], dict[str, str]] | None:
    """ParallelCluster's own synthesis of the default project's cluster, or None without ``.venv-pcluster``."""
    if not PCLUSTER_PYTHON.exists():
        print("no .venv-pcluster (make pcluster-venv): the ParallelCluster comparison is skipped", file=sys.stderr)
        return None
    config = work / "cluster.yaml"
    env = _env(alone, work / "unused", "default")
    subprocess.run([str(ROOT / ".venv" / "bin" / "fmcluster"), "parallelcluster", "config", "default",
                    "--out", str(config)], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    facts = work / "facts.json"
    facts.write_text(json.dumps(pcluster_facts(yaml.safe_load(config.read_text()))))
    cmd = [str(PCLUSTER_PYTHON), str(ROOT / "bench" / "pcluster_synth.py"), "--facts", str(facts), str(config),
           str(work / "pcluster-out")]
    return cmd, env


def ratios(medians: dict[str, float]) -> dict[str, float]:
    return {name: round(medians[a] / medians[b], 3) for name, (a, b) in RATIOS.items()
            if a in medians and b in medians}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs per variant (>= 3)")
    parser.add_argument("--only", help="comma-separated variants to run (default: all)")
    args = parser.parse_args()
    runs = max(3, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        alone, among = work / "alone", work / "among20"
        alone.mkdir()
        among.mkdir()
        make_projects(alone, 1)
        make_projects(among, 20)
        out = work / "out"
        floor = [sys.executable, str(ROOT / "bench" / "floor_app.py")]
        app = [sys.executable, str(ROOT / "app.py")]
        # the default project's assembly, for the L1 floors (l1_1, l1_20: its resources as single L1 constructs)
        default_assembly = work / "default-assembly"
        _time(app, _env(alone, default_assembly, "default"))
        bare = {**_env(alone, out, "default"), "FLOOR_BARE": "1"}
        l1 = {**bare, "FLOOR_NAG": "1", "FLOOR_TEMPLATES": str(default_assembly)}
        variants: dict[str, tuple[list[str], dict[str, str]]] = {
            "floor": (floor, _env(alone, out, "default")),
            "floor_bare": (floor, bare),
            "floor_nag": (floor, {**bare, "FLOOR_NAG": "1"}),
            "l1_1": (floor, {**l1, "FLOOR_COPIES": "1"}),
            "l1_20": (floor, {**l1, "FLOOR_COPIES": "20"}),
            "default": (app, _env(alone, out, "default")),
            "default_without_nag": (app, _env(alone, out, "default", nag="false")),
            "default_among_20": (app, _env(among, out, "default")),
            "all_20": (app, _env(among, out, "all")),
        }
        pcluster = pcluster_variant(work, alone)
        if pcluster:
            variants["pcluster"] = pcluster
        if args.only:
            wanted = set(args.only.split(","))
            variants = {k: v for k, v in variants.items() if k in wanted}
        wall: dict[str, list[float]] = {name: [] for name in variants}
        cpu: dict[str, list[float]] = {name: [] for name in variants}
        for name, (cmd, env) in variants.items():  # warm-up: file caches, .pyc, jsii's package cache
            _time(cmd, env)
        for i in range(runs):
            for name, (cmd, env) in variants.items():
                shutil.rmtree(out, ignore_errors=True)
                w, c = _time(cmd, env)
                wall[name].append(w)
                cpu[name].append(c)
            print(f"run {i + 1}/{runs}: " + "  ".join(f"{n} {wall[n][-1]:.1f}s/{cpu[n][-1]:.1f}cpu" for n in variants),
                  file=sys.stderr)
    median_wall = {name: statistics.median(values) for name, values in wall.items()}
    median_cpu = {name: statistics.median(values) for name, values in cpu.items()}
    result: dict[str, Any] = {
        "runs": runs,
        "load_average": os.getloadavg()[0],
        "median_seconds": {k: round(v, 3) for k, v in median_wall.items()},
        "median_cpu_seconds": {k: round(v, 3) for k, v in median_cpu.items()},
        "spread_seconds": {k: [round(min(v), 3), round(max(v), 3)] for k, v in wall.items()},
        "ratios": ratios(median_wall),
        "cpu_ratios": ratios(median_cpu),
        "targets": TARGETS,
    }
    if "all_20" in median_wall and "default" in median_wall:  # what each project beyond the first adds
        result["per_added_project_seconds"] = round((median_wall["all_20"] - median_wall["default"]) / 19, 3)
        result["per_added_project_cpu_seconds"] = round((median_cpu["all_20"] - median_cpu["default"]) / 19, 3)
    result["met"] = {k: result["ratios"][k] <= t for k, t in TARGETS.items() if k in result["ratios"]}
    result["met_cpu"] = {k: result["cpu_ratios"][k] <= t for k, t in TARGETS.items() if k in result["cpu_ratios"]}
    (ROOT / ".bench").mkdir(exist_ok=True)
    (ROOT / ".bench" / "synth.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
