"""The plan's scheduler section for ``orchestrator.type: hyperpod-eks`` as text rows
(:data:`fmcluster.cli.planservices.ROWS`)."""

from __future__ import annotations

from rich.table import Table

from fmcluster.cli.plantext import row
from fmcluster.plan import Plan


def plan_rows(plan: Plan, data: dict, lines: Table) -> None:
    row(lines, "Kubernetes", f"EKS {data['kubernetes_version']} ({data['endpoint']} endpoint, API authentication), "
                             f"SageMaker HyperPod cluster {data['cluster_name']} created by cdk deploy; node recovery "
                             f"{data['node_recovery']}")
    row(lines, "add-ons", ", ".join(f"{name} {version}" for name, version in data["addons"].items()))
    if data["admins"]:
        row(lines, "admins", ", ".join(data["admins"]))
    for group in data["instance_groups"]:
        detail = f"{group['count']} x {group['instance_type']}"
        detail += ", untainted (CoreDNS, Kueue, operators)" if group["system"] else \
            f", taints {', '.join(group['taints']) or 'none'}"
        if group["labels"]:
            detail += f"; labels {', '.join(f'{k}={v}' for k, v in group['labels'].items())}"
        if group["deep_health_checks"]:
            detail += f"; deep health checks {', '.join(group['deep_health_checks'])}"
        row(lines, f"group {group['name']}", detail)
        if group["training_plan_arn"]:
            _, _, _, region, account, resource = group["training_plan_arn"].split(":", 5)
            row(lines, "  training plan", f"{resource.split('/', 1)[-1]} in {region}, account {account}")
        u = group["ultraservers"]
        if u:
            row(lines, "  UltraServers", f"{u['servers']} x {u['type']} ({u['instances_per_server']} instances "
                                         "each, one NVLink domain per UltraServer)")
    if data["task_governance"]:
        for team in data.get("teams", []):
            shares = ", ".join(f"{g}: {s['guaranteed']} guaranteed + {s['borrow']} borrowable"
                               for g, s in team["instances"].items()) or "no guaranteed instances"
            row(lines, f"team {team['name']}", f"fair share {team['fair_share']}, {shares}; lend "
                                               f"{'yes' if team['lend'] else 'no'}, preempt {team['preempt']}")
    row(lines, "on destroy", "the EKS and HyperPod clusters are deleted with their stack; the lifecycle bucket is kept")
