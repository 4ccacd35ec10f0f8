"""A real Slurm on loopback for the tests: Debian's MariaDB, slurmdbd, slurmctld and one slurmd, each in a
test-owned directory with its own configuration and free ports (nothing under /etc, no systemd, no munge daemon:
``AuthType=auth/none`` and ``CredType=cred/none``, which Debian's Slurm 22.05 still ships, take the caller's uid as
it is). Users come from a test-owned passwd file through nss_wrapper (``LD_PRELOAD``, cwrap.org), so a test adds a
Linux user -- or adds one late -- without touching the machine's /etc/passwd.

Started once per test session (per pytest-xdist worker) by :func:`start`; the tests share it and each works in
its own accounts and users (:meth:`RealSlurm.reset` between tests). Partition ``gpu`` has four nodes, as
examples/p5-slurm-accounting.yaml's group: ``n1`` (this slurmd, 2 CPUs) and ``n[2-4]`` (configured, never
started: there so a job of several nodes is one the partition could run, and only a team's limit refuses it). They are
DOWN from the start: as UNKNOWN, slurmctld allocated one of them to a two-node job until SlurmdTimeout (300 s) marked
it down, and that job, once cancelled, stayed COMPLETING for want of its node's answer (a reset then timed out).

Root is needed: slurmd starts each job as its user. Packages: ``slurmdbd slurmctld slurmd slurm-client
mariadb-server libnss-wrapper`` (.ci/run installs them)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support.loopback import free_port, spawn, stop

PACKAGES = "slurmdbd slurmctld slurmd slurm-client mariadb-server munge libnss-wrapper"
INSTALL_HINT = f"a real Slurm needs root and `apt-get install {PACKAGES}` (Debian/Ubuntu)"
NSS_WRAPPER = "/usr/lib/x86_64-linux-gnu/libnss_wrapper.so"
PROGRAMS = ("mariadb-install-db", "mariadbd", "slurmdbd", "slurmctld", "slurmd", "sacctmgr", "sbatch", "scontrol",
            "strigger", "setpriv")
WAIT_S = 60.0
FIRST_UID = 42001
"""The test users' uids: far above any this machine's users are likely to have."""


def missing() -> str | None:
    """Why a real Slurm cannot start here, or None."""
    if os.geteuid() != 0:
        return "not root"
    gone = [p for p in PROGRAMS if shutil.which(p, path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin") is None]
    if not Path(NSS_WRAPPER).exists():
        gone.append(NSS_WRAPPER)
    return f"missing {', '.join(gone)}" if gone else None


@dataclass
class RealSlurm:
    """One running Slurm: its directory, the environment its clients need, and its users."""

    dir: Path
    env: dict[str, str]
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    uids: dict[str, int] = field(default_factory=dict)
    started_s: float = 0.0

    @property
    def passwd(self) -> Path:
        return self.dir / "passwd"

    def add_user(self, name: str) -> int:
        """A Linux user (in the test's passwd file), as ``useradd`` would make one; its uid."""
        if name not in self.uids:
            uid = FIRST_UID + len(self.uids)
            self.uids[name] = uid
            with self.passwd.open("a") as f:
                f.write(f"{name}:x:{uid}:{uid}:{name}:{self.dir}/home:/bin/bash\n")
            with (self.dir / "group").open("a") as f:
                f.write(f"{name}:x:{uid}:\n")
        return self.uids[name]

    def run(self, *argv: str, user: str | None = None, check: bool = False,
            timeout: float = 60) -> subprocess.CompletedProcess:
        """Run a Slurm client (or anything) with this Slurm's configuration; as ``user`` (setpriv) if given."""
        cmd = list(argv)
        if user is not None:
            uid = self.uids[user]
            cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *cmd]
        proc = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout, check=False,
                              cwd=self.dir / "home")
        if check and proc.returncode != 0:
            pytest.fail(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stdout}{proc.stderr}\n{self.logs()}")
        return proc

    def sacctmgr(self, *args: str) -> str:
        return self.run("sacctmgr", *args, check=True).stdout

    def logs(self) -> str:
        out = []
        for name in ("mariadb", "slurmdbd", "slurmctld", "slurmd"):
            log = self.dir / f"{name}.log"
            if log.exists():
                out.append(f"--- {name}.log (tail)\n" + "\n".join(log.read_text(errors="replace").splitlines()[-30:]))
        return "\n".join(out)

    def wait(self, what: str, probe, timeout: float = WAIT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    pytest.fail(f"{name} exited ({proc.returncode}) while waiting for {what}\n{self.logs()}")
            if probe():
                return
            time.sleep(0.2)
        pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}\n{self.logs()}")

    def reset(self) -> None:
        """Back to a fresh accounting database: no jobs, no users but root, no accounts or QoS but Slurm's own; no
        triggers, and the partition without a QoS."""
        for line in self.run("strigger", "--get").stdout.splitlines()[1:]:
            self.run("strigger", "--clear", f"--id={line.split()[0]}", check=True)
        self.run("scontrol", "update", "PartitionName=gpu", "QOS=", check=True)
        jobs = self.run("squeue", "-h", "-o", "%i").stdout.split()
        if jobs:
            self.run("scancel", *jobs, check=True)
        self.wait("no jobs", lambda: not self.run("squeue", "-h", "-o", "%i").stdout.strip())
        users = [u for u in self.sacctmgr("-n", "-P", "show", "user", "format=user").split() if u != "root"]
        self.wait("no active jobs in slurmdbd", lambda: not users or self.run(
            "sacctmgr", "-i", "delete", "user", "where", "name=" + ",".join(users)).returncode == 0, timeout=30)
        accounts = [a for a in self.sacctmgr("-n", "-P", "show", "account", "format=account").split() if a != "root"]
        if accounts:
            self.sacctmgr("-i", "delete", "account", "where", "name=" + ",".join(accounts))
        qos = [q for q in self.sacctmgr("-n", "-P", "show", "qos", "format=name").split() if q != "normal"]
        if qos:
            self.sacctmgr("-i", "delete", "qos", "where", "name=" + ",".join(qos))

    def stop(self) -> None:
        for name in ("slurmd", "slurmctld", "slurmdbd", "mariadb"):
            if name in self.procs:
                stop(self.procs[name])


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.write_text(text)
    path.chmod(mode)


def start(tmp: Path) -> RealSlurm:
    """Start MariaDB, slurmdbd, slurmctld and slurmd under ``tmp``; return once a job can be submitted."""
    t0 = time.monotonic()
    for sub in ("db", "state", "spool", "home", "run"):
        (tmp / sub).mkdir(parents=True, exist_ok=True)
    (tmp / "home").chmod(0o1777)
    host = socket.gethostname().split(".")[0]
    db_port, dbd_port, ctld_port, d_port = (free_port() for _ in range(4))
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp / "home"), "LANG": "C.UTF-8",
           "SLURM_CONF": str(tmp / "slurm.conf"), "LD_PRELOAD": NSS_WRAPPER,
           "NSS_WRAPPER_PASSWD": str(tmp / "passwd"), "NSS_WRAPPER_GROUP": str(tmp / "group")}
    _write(tmp / "passwd", Path("/etc/passwd").read_text())
    _write(tmp / "group", Path("/etc/group").read_text())
    sl = RealSlurm(tmp, env)

    subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={tmp / 'db'}", "--user=root",
                    "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"],
                   env=env, capture_output=True, check=True, timeout=120)
    sl.procs["mariadb"] = spawn(tmp, "mariadb", [
        "mariadbd", "--no-defaults", f"--datadir={tmp / 'db'}", "--user=root", f"--socket={tmp / 'run/mysql.sock'}",
        f"--port={db_port}", "--bind-address=127.0.0.1", f"--pid-file={tmp / 'run/mariadb.pid'}",
        "--skip-name-resolve", "--skip-log-bin", "--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0",
        "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M", "--sync-binlog=0", "--skip-grant-tables"],
        env=env)

    def db_up() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", db_port)) == 0
    sl.wait("MariaDB", db_up)

    _write(tmp / "slurmdbd.conf", f"""\
AuthType=auth/none
DbdHost={host}
DbdAddr=127.0.0.1
DbdPort={dbd_port}
SlurmUser=root
LogFile={tmp / 'slurmdbd.log'}
PidFile={tmp / 'run/slurmdbd.pid'}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser=root
StorageLoc=slurm_acct_db
""", 0o600)
    _write(tmp / "slurm.conf", f"""\
ClusterName=fmct
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/none
CredType=cred/none
StateSaveLocation={tmp / 'state'}
SlurmdSpoolDir={tmp / 'spool'}
SlurmctldPidFile={tmp / 'run/slurmctld.pid'}
SlurmdPidFile={tmp / 'run/slurmd.pid'}
SlurmctldLogFile={tmp / 'slurmctld.log'}
SlurmdLogFile={tmp / 'slurmd.log'}
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SchedulerParameters=sched_interval=1
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={dbd_port}
AccountingStorageEnforce=associations,limits,qos
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
PriorityWeightQOS=1000
NodeName=n1 NodeHostname={host} NodeAddr=127.0.0.1 CPUs=2 RealMemory=500 State=UNKNOWN
NodeName=n[2-4] NodeHostname=nowhere NodeAddr=127.0.0.2 CPUs=2 RealMemory=500 State=DOWN Reason=never_started
PartitionName=gpu Nodes=n[1-4] Default=YES State=UP MaxTime=INFINITE
""")
    sl.procs["slurmdbd"] = spawn(tmp, "slurmdbd", ["slurmdbd", "-D"], env=env)
    sl.wait("slurmdbd", lambda: subprocess.run(["sacctmgr", "-n", "show", "cluster"], env=env, capture_output=True,
                                               check=False).returncode == 0)
    # slurmctld registers its cluster on start (AccountingStorageType=...slurmdbd); the cluster first, so it does not
    # wait for it
    sl.run("sacctmgr", "-i", "add", "cluster", "fmct", check=True)
    sl.procs["slurmctld"] = spawn(tmp, "slurmctld", ["slurmctld", "-D", "-i"], env=env)
    sl.procs["slurmd"] = spawn(tmp, "slurmd", ["slurmd", "-D", "-N", "n1"], env=env)

    def n1_idle() -> bool:
        out = subprocess.run(["sinfo", "-h", "-n", "n1", "-o", "%T"], env=env, capture_output=True, text=True,
                             check=False)
        return out.stdout.strip() == "idle"
    sl.wait("slurmd n1 idle", n1_idle)
    sl.started_s = time.monotonic() - t0
    return sl
