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

import json
import sys
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


# --- a stateful sacctmgr (the sandbox's, support.sandbox.install_slurm_controller) --------------------------------
#
# It keeps slurmdbd's QoS, accounts, associations and users under STATE (the sandbox's state/slurm): the QoS names
# one a line in ``qos`` (the sandbox's scontrol reads them), the rest in ``accounting.json``. It takes the command
# lines sacctmgr(1) documents (``add|create``, ``modify``, ``delete|remove``, ``show|list``; ``where``/``set``;
# ``-i -n -P``) for the entities the bootstrap uses, and refuses what the real one refuses: a QoS or account
# referenced before it exists, a user without an account, a default QoS outside the association's QoS, a default
# account the user has no association with; adding what exists prints " Nothing new added." (exit 0, as the
# QoS stub before it). The wording of the refusals is as recalled, UNCONFIRMED against Slurm 25.11: the scripts
# read only exit statuses. Slurm's own entries are there from the start: QoS ``normal``, account ``root`` and
# user ``root`` (SchedMD accounting.html: "root" account and user are created with the database).

def _load(state: Path) -> dict:
    path = state / "accounting.json"
    data = json.loads(path.read_text()) if path.exists() else {
        "tres": {}, "accounts": {"root": {"fairshare": "1"}},
        "assocs": [{"user": "root", "account": "root", "partition": "", "qos": "normal", "defqos": ""}],
        "users": {"root": "root"}}
    data["qos"] = (state / "qos").read_text().split() if (state / "qos").exists() else ["normal"]
    return data


def _save(state: Path, data: dict) -> None:
    (state / "qos").write_text("".join(f"{q}\n" for q in data.pop("qos")))
    (state / "accounting.json").write_text(json.dumps(data, indent=1, sort_keys=True))


def _err(msg: str) -> int:
    print(f"sacctmgr: error: {msg}", file=sys.stderr)
    return 1


def _pairs(words: list[str]) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """``where`` pairs, ``set`` pairs and bare names (before any keyword); keys lower-cased."""
    where: dict[str, str] = {}
    sets: dict[str, str] = {}
    names: list[str] = []
    target = where
    for w in words:
        if w.lower() == "where":
            target = where
        elif w.lower() == "set":
            target = sets
        elif "=" in w:
            k, v = w.split("=", 1)
            target[k.lower()] = v
        else:
            names.append(w)
    return where, sets, names


def _show(data: dict, entity: str, args: dict[str, str], parsable: bool, header: bool) -> int:
    fmt = [f.lower() for f in args.get("format", "").split(",") if f]
    if entity == "qos":
        rows = [{"name": q, "grptres": data["tres"].get(q, ""), "flags": data.setdefault("flags", {}).get(q, "")}
                for q in data["qos"]]
        if "name" in args:
            rows = [r for r in rows if r["name"] == args["name"].lower()]
    elif entity == "account":
        rows = [{"account": a, "organization": v.get("organization", a)} for a, v in data["accounts"].items()]
    elif entity in ("association", "associations", "assoc"):
        rows = [{"account": a, "user": "", "partition": "", "fairshare": v["fairshare"], "qos": "normal",
                 "defaultqos": "", "maxsubmitjobs": ""} for a, v in data["accounts"].items()]
        rows += [{"account": s["account"], "user": s["user"], "partition": s["partition"], "fairshare": "1",
                  "qos": s["qos"], "defaultqos": s["defqos"], "maxsubmitjobs": s.get("maxsubmitjobs", "")}
                 for s in data["assocs"]]
    elif entity in ("user", "users"):
        rows = [{"user": u, "defaultaccount": d} for u, d in data["users"].items()]
    else:
        return _err(f"show {entity}: not modelled")
    for f in fmt:
        if rows and f not in rows[0]:
            return _err(f"Unknown field '{f}'")
    if not parsable:
        return _err("only -P (parsable2) output is modelled")
    if header:
        print("|".join(f.capitalize() for f in fmt))
    for r in rows:
        print("|".join(r[f] for f in fmt))
    return 0


def _add(data: dict, entity: str, words: list[str]) -> int:
    where, _, names = _pairs(words)
    opts = where
    name = (names[0] if names else opts.pop("name", "")).lower()
    if not name:
        return _err(f"No new {entity} to add")
    if entity == "qos":
        if name in data["qos"]:
            print(" Nothing new added.")
            return 0
        data["qos"].append(name)
        if "grptres" in opts:
            data["tres"][name] = opts["grptres"]
        if "flags" in opts:
            data.setdefault("flags", {})[name] = opts["flags"]
        print(f" Adding QOS(s)\n  {name}")
        return 0
    if entity == "account":
        if name in data["accounts"]:
            print(" Nothing new added.")
            return 0
        data["accounts"][name] = {"fairshare": opts.get("fairshare", "1"),
                                  "organization": opts.get("organization", name).lower()}
        print(f" Adding Account(s)\n  {name}")
        return 0
    # user
    account = opts.get("account", "").lower()
    if not account:
        return _err(" Need name of account to add.")
    if account not in data["accounts"]:
        return _err(f" The account '{account}' doesn't exist.")
    qos = [q.lower() for q in opts.get("qos", "").split(",") if q]
    for q in qos + ([opts["defaultqos"].lower()] if "defaultqos" in opts else []):
        if q not in data["qos"]:
            return _err(f" Unknown QOS name: {q}")
    if "defaultqos" in opts and qos and opts["defaultqos"].lower() not in qos:
        return _err("Default QOS isn't part of the valid QOS list")
    default = opts.get("defaultaccount", "").lower()
    if default and default != account and not any(s["user"] == name and s["account"] == default
                                                  for s in data["assocs"]):
        return _err(f" The default account '{default}' is not among the user's accounts")
    partition = opts.get("partition", "")
    if any(s["user"] == name and s["account"] == account and s["partition"] == partition for s in data["assocs"]):
        print(" Nothing new added.")
        return 0
    data["assocs"].append({"user": name, "account": account, "partition": partition,
                           "qos": ",".join(qos) or "normal", "defqos": opts.get("defaultqos", "").lower()})
    data["users"].setdefault(name, default or account)
    if default:
        data["users"][name] = default
    print(f" Adding User(s)\n  {name}")
    return 0


def _modify(data: dict, entity: str, words: list[str]) -> int:
    where, sets, _ = _pairs(words)
    name = where.get("name", "").lower()
    if not sets:
        return _err("You didn't give me anything to set")
    if entity == "qos":
        if name not in data["qos"]:
            print(" Nothing modified")
            return 1
        data["tres"][name] = sets.get("grptres", data["tres"].get(name, ""))
        flags = data.setdefault("flags", {})
        for flag in [f for f in sets.get("flags+", "").split(",") if f]:
            if flag.lower() not in flags.get(name, "").lower().split(","):
                flags[name] = ",".join(f for f in (flags.get(name, ""), flag) if f)
    elif entity == "account":
        if name not in data["accounts"]:
            print(" Nothing modified")
            return 1
        data["accounts"][name]["fairshare"] = sets.get("fairshare", data["accounts"][name]["fairshare"])
        if "organization" in sets:
            data["accounts"][name]["organization"] = sets["organization"].lower()
    else:
        match = [s for s in data["assocs"] if s["user"] == name
                 and all(s[k] == where[k].lower() for k in ("account", "partition") if k in where)]
        if not match:
            print(" Nothing modified")
            return 1
        if "defaultaccount" in sets:
            default = sets["defaultaccount"].lower()
            if not any(s["account"] == default for s in match):
                return _err(f" Can't modify because these users aren't associated with new default account "
                            f"'{default}'")
            data["users"][name] = default
        for q in [v.lower() for k in ("qos", "defaultqos") if k in sets for v in sets[k].split(",")]:
            if q not in data["qos"]:
                return _err(f" Unknown QOS name: {q}")
        for s in match:
            s["qos"] = sets.get("qos", s["qos"]).lower()
            s["defqos"] = sets.get("defaultqos", s["defqos"]).lower()
            if "maxsubmitjobs" in sets:
                s["maxsubmitjobs"] = "" if sets["maxsubmitjobs"] == "-1" else sets["maxsubmitjobs"]
    print(f" Modified {entity}...\n  {name}")
    return 0


def _delete(data: dict, entity: str, words: list[str]) -> int:
    where, _, names = _pairs(words)
    name = (names[0] if names else where.get("name", "")).lower()
    if entity != "user":
        return _err(f"delete {entity}: not modelled")
    match = [s for s in data["assocs"] if s["user"] == name
             and all(s[k] == where[k].lower() for k in ("account", "partition") if k in where)]
    if not match:
        print(" Nothing deleted")
        return 1
    rest = [s for s in data["assocs"] if s not in match]
    mine = [s for s in rest if s["user"] == name]
    if mine and not any(s["account"] == data["users"][name] for s in mine):
        return _err(f" Can not remove the default account of user {name} while others remain; change it first")
    data["assocs"] = rest
    if not mine:
        data["users"].pop(name, None)
    print(f" Deleting user associations...\n  {name}")
    return 0


def sacctmgr(argv: list[str], state: Path) -> int:
    flags = {a for a in argv if a.startswith("-")}
    words = [a for a in argv if not a.startswith("-")]
    for f in flags - {"-n", "--noheader", "-P", "--parsable2", "-i", "--immediate"}:
        return _err(f"unrecognized option '{f}'")
    verb = words[0].lower() if words else ""
    entity = words[1].lower() if len(words) > 1 else ""
    verbs = {"show": "show", "list": "show", "add": "add", "create": "add", "modify": "modify",
             "update": "modify", "delete": "delete", "remove": "delete"}
    if verb not in verbs:
        return _err(f"Unknown command '{verb}'")
    entity = {"clusters": "cluster", "users": "user", "accounts": "account", "assoc": "association",
              "associations": "association"}.get(entity, entity)
    if entity not in ("cluster", "qos", "account", "user", "association"):
        return _err(f"Unknown entity '{entity}'")
    if (state / "dbd-down").exists():
        return _err("Problem talking to the database: Connection refused")
    verb = verbs[verb]
    if verb == "show" and entity == "cluster":
        if "-n" not in flags:
            print("   Cluster     ControlHost  ControlPort   RPC")
        print("      demo        10.0.0.5         6817  11008")
        return 0
    if verb != "show" and not ({"-i", "--immediate"} & flags):
        return _err("sandbox sacctmgr: without -i it asks 'Would you like to commit changes?'")
    data = _load(state)
    if verb == "show":
        if entity == "qos" and words[2:] == ["format=name"]:
            for q in data["qos"]:
                print(q)
            return 0
        where, _, names = _pairs(words[2:])
        if names:
            where["name"] = names[0]
        return _show(data, entity, where, bool({"-P", "--parsable2"} & flags), "-n" not in flags)
    rc = {"add": _add, "modify": _modify, "delete": _delete}[verb](data, entity, words[2:])
    if rc == 0:
        _save(state, data)
    return rc


if __name__ == "__main__":
    sys.exit(sacctmgr(sys.argv[2:], Path(sys.argv[1])))
