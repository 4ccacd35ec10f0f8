"""The plan's teams section: who shares the cluster and what the scheduler makes of it (on Slurm: accounts, their
members, fair-share shares and each team's node cap per partition, :mod:`fmcluster.generate.slurmteams`)."""

from __future__ import annotations

from rich.table import Table

from fmcluster.cli.plantext import row
from fmcluster.generate import schedulers, slurmteams
from fmcluster.plan import Plan

CAP_WORDS = ("on Slurm a team's guaranteed nodes cap what its jobs hold at once (a job asking for more alone is refused "
             "at submit); the caps add up to at most each group's count and nobody borrows, so every team can always "
             "get its guaranteed nodes (docs/teams.md)")


def teams_data(p: Plan) -> dict | None:
    """``plan -o json``'s ``teams``: None without teams; on Slurm the accounts, members, shares and caps."""
    cluster = p.cluster
    if not cluster.teams:
        return None
    out: dict = {"enforced_by": None, "teams": [t.model_dump() for t in cluster.teams]}
    if not slurmteams.applies(cluster):
        if cluster.driver.teams and not cluster.driver.slurm:  # HyperPod EKS: task governance
            out["enforced_by"] = cluster.driver.name
            out["enforced"] = [{"key": k, "how": how} for k, how in cluster.driver.teams_how]
        return out
    accounts = slurmteams.slurm_teams(cluster, schedulers.scheduler(cluster).slurm_targets(cluster))
    out["enforced_by"] = "slurm-accounting"
    out["slurm"] = {
        "settings": slurmteams.slurm_settings(cluster),
        "accounts": [{"account": a.account, "fair_share": a.fair_share,
                      "members": list(dict.fromkeys(s.user for s in a.associations)),
                      "default_account_of": list(a.default_of),
                      "caps": [{"partition": part, "qos": qos, "nodes": n} for part, qos, n in a.caps],
                      "add_a_user": slurmteams.refusal_hint(a)} for a in accounts],
        "refused": "a user in no team: Slurm refuses their jobs (\"Invalid account or account/partition combination "
                   "specified\")",
        "cap": CAP_WORDS,
    }
    return out


def teams(p: Plan, lines: Table) -> bool:
    """The teams lines; False without teams."""
    data = teams_data(p)
    if data is None:
        return False
    names = ", ".join(t["name"] for t in data["teams"])
    if data["enforced_by"] is None:  # validate refuses teams here (teams-supported, teams-need-accounting)
        row(lines, "teams", f"{names}: not enforced (validate refuses them here)")
        return True
    if "slurm" not in data:
        row(lines, "teams", f"{names}: enforced by {data['enforced_by']}: HyperPod task governance (Kueue), a "
                            "ComputeQuota each in namespace hyperpod-ns-<team>, listed under scheduler (docs/teams.md)")
        for e in data["enforced"]:
            row(lines, e["key"], e["how"])
        return True
    slurm = data["slurm"]
    for a in slurm["accounts"]:
        caps = ", ".join(f"{c['nodes']} nodes in {c['partition']} (QoS {c['qos']})" for c in a["caps"])
        members = ", ".join(a["members"]) or "no members"
        row(lines, a["account"], f"Slurm account, fair share {a['fair_share']}; {members}; "
                                 f"at most {caps or 'no nodes (no partition: its jobs are refused)'}")
    row(lines, "caps", slurm["cap"])
    row(lines, "not in a team", f"{slurm['refused']}; add them to a team's members and deploy (one added by hand, "
                                f"`{slurm['accounts'][0]['add_a_user']}`, is removed at the next run of the teams "
                                "script)")
    row(lines, "slurm.conf", ", ".join(f"{k}={v}" for k, v in slurm["settings"].items()))
    return True
