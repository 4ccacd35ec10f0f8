"""The plan's scheduler and monitoring sections, as text for people and as data for ``plan -o json``.

Both forms come from the same helpers here (the ParallelCluster queues, the HyperPod instance groups, the
exporter table), so the JSON carries what the text shows.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from fmcluster import catalog
from fmcluster.cli.plantext import row, settings
from fmcluster.config.parallelcluster import DEFAULT_HEAD_NODE, DEFAULT_LOGIN_NODE
from fmcluster.facts import AMP_ACTIVE_SERIES_QUOTA
from fmcluster.generate import hyperpod, metrics
from fmcluster.generate import parallelcluster as pcluster
from fmcluster.plan import Plan
from fmcluster.plan.associations import plan_associations
from fmcluster.plan.storage import StoragePlan


def scheduler_data(p: Plan) -> dict:
    """The scheduler section: what `cdk deploy` starts, its nodes and queues or groups."""
    cluster = p.cluster
    if cluster.orchestrator == "parallelcluster":
        pc = cluster.pcluster
        arch = pcluster.architecture(cluster)
        login = pc.login_nodes
        return {
            "type": "parallelcluster", "version": pc.version, "cluster_name": cluster.pcluster_name,
            "created_by_cdk_deploy": pc.create_cluster,
            "head_node": {"instance_type": pc.head_node_instance_type or DEFAULT_HEAD_NODE[arch],
                          "root_volume_gib": pc.head_node_root_volume_gib, "os": pcluster.pc_os(cluster)},
            "login_nodes": None if login is None else {
                "count": login.count, "instance_type": login.instance_type or DEFAULT_LOGIN_NODE[arch]},
            "queues": [{"name": q.name, "capacity_type": q.capacity_type,
                        "groups": [{"group": g.name, "count": g.count, "instance_type": g.instance_type,
                                    "static": pcluster.min_count(cluster, g)} for g in q.groups]}
                       for q in pcluster.queues(cluster)],
            "deletion_policy": pc.deletion_policy,
        }
    if cluster.orchestrator == "hyperpod":
        hp = cluster.hyperpod
        groups = []
        for g in hyperpod.instance_groups(cluster):
            u = g.ultraserver
            groups.append({
                "name": g.name, "node_type": g.node_type, "instance_type": g.instance_type, "count": g.count,
                "partition": g.partition, "deep_health_checks": list(g.deep_health_checks),
                "training_plan_arn": g.training_plan_arn,
                "ultraservers": None if u is None else {
                    "type": u.type, "servers": u.servers, "instances_per_server": u.instances_per_server,
                    "nvlink_domains": u.servers},
            })
        return {"type": "hyperpod", "cluster_name": f"{cluster.hyperpod_name_prefix}-<subnet ID>", "created_by_cdk_deploy": True,
                "node_recovery": hp.node_recovery, "slurm_config_strategy": hp.slurm_config_strategy,
                "instance_groups": groups}
    return {"type": "none", "launch_templates": [f"{p.project}-{g.name}" for g in p.groups]}


def scheduler(p: Plan, lines: Table) -> None:
    data = scheduler_data(p)
    if data["type"] == "none":
        row(lines, "none", "launch templates only: `cdk deploy` starts no node and no scheduler; launch "
                           f"instances from the {p.project}-GROUP templates with your own tooling")
    elif data["type"] == "parallelcluster":
        created = ("created by cdk deploy" if data["created_by_cdk_deploy"]
                   else "cluster.yaml only (create_cluster: false)")
        row(lines, "Slurm", f"AWS ParallelCluster {data['version']}, cluster {data['cluster_name']}, {created}")
        head = data["head_node"]
        row(lines, "head node", f"{head['instance_type']}, {head['root_volume_gib']} GiB root ({head['os']})")
        if data["login_nodes"] is not None:
            row(lines, "login nodes", f"{data['login_nodes']['count']} x {data['login_nodes']['instance_type']}")
        for queue in data["queues"]:
            nodes = ", ".join(f"{g['count']} x {g['instance_type']} ({g['static']} static)" for g in queue["groups"])
            row(lines, f"queue {queue['name']}", f"{nodes}; {queue['capacity_type']}")
        row(lines, "on destroy", "the cluster is deleted with its stack" if data["deletion_policy"] == "Delete"
            else "the cluster is kept (Retain): delete it with pcluster delete-cluster")
    else:
        row(lines, "Slurm", f"SageMaker HyperPod cluster {data['cluster_name']}, created by cdk deploy; "
                            f"node recovery {data['node_recovery']}, slurm.conf {data['slurm_config_strategy']}")
        for group in data["instance_groups"]:
            where = f"partition {group['partition']}" if group["partition"] else group["node_type"].lower()
            detail = f"{group['count']} x {group['instance_type']}, {where}"
            if group["deep_health_checks"]:
                detail += f"; deep health checks {', '.join(group['deep_health_checks'])}"
            row(lines, f"group {group['name']}", detail)
            if group["training_plan_arn"]:
                row(lines, "  training plan", group["training_plan_arn"])
            u = group["ultraservers"]
            if u:
                row(lines, "  UltraServers", f"{u['servers']} x {u['type']} ({u['instances_per_server']} instances "
                                             "each, one NVLink domain per UltraServer)")
        row(lines, "on destroy", "the cluster is deleted with its stack; the lifecycle bucket is kept")


def monitoring_data(p: Plan) -> dict | None:
    """The monitoring section: workspace, Grafana, each role's exporters and ports, active series."""
    obs = p.observability
    if not obs.enabled:
        return None
    spec = obs.spec
    roles = {}
    for role, gpu in (("gpu_nodes", True), ("other_nodes", False)):
        if gpu or p.cluster.orchestrator != "none":  # without a scheduler there are only the GPU nodes
            roles[role] = {
                "exporters": [e.name for e in metrics.EXPORTERS if (gpu or not e.gpu_only) and e is not metrics.PROMETHEUS],
                "ports": sorted({port for _, port in metrics.scrape_targets(gpu=gpu)}),
            }
    per_group, total, unknown = {}, 0, set()
    for g in p.groups:
        itype = catalog.CATALOG[g.instance_type]
        est = metrics.node_series(gpus=itype.gpus, efa_devices=g.efa_interfaces, vcpus=itype.vcpus,
                                  nvme_drives=g.local_nvme_drives)
        total += est.total * g.count
        unknown.update(est.unknown)
        per_group[g.name] = {"per_node": est.total, "unconfirmed_parts": sorted(est.unknown)}
    return {
        "prometheus": "Amazon Managed Prometheus workspace",
        "alert_emails": len(spec.alerts.emails),
        "grafana": {"authentication": spec.grafana.authentication} if spec.grafana.enabled else None,
        "roles": roles,
        "active_series": {"groups": per_group, "gpu_nodes_total": total, "unconfirmed_parts": sorted(unknown),
                          "other_node": metrics.node_series(gpus=0, efa_devices=0, vcpus=0, nvme_drives=0).total,
                          "per_vcpu_of_other_nodes": metrics.CPU_MODES,
                          "workspace_quota": AMP_ACTIVE_SERIES_QUOTA, "share_of_quota": total / AMP_ACTIVE_SERIES_QUOTA},
    }


def monitoring(p: Plan, lines: Table) -> bool:
    """The monitoring lines; False when the project has no monitoring."""
    data = monitoring_data(p)
    if data is None:
        return False
    alerts = f"alerts to {data['alert_emails']} e-mail address(es)" if data["alert_emails"] else "alerts to SNS"
    row(lines, "Prometheus", f"{data['prometheus']}, GPU-health rules, {alerts}")
    if data["grafana"] is not None:
        auth = data["grafana"]["authentication"]
        sign_in = "AWS_SSO: needs IAM Identity Center in the account" if auth == "AWS_SSO" else f"{auth} sign-in"
        row(lines, "Grafana", f"Amazon Managed Grafana workspace; {sign_in}")
    for role, label in (("gpu_nodes", "GPU nodes"), ("other_nodes", "other nodes")):
        if role in data["roles"]:
            ports = data["roles"][role]["ports"]
            port_list = f"port{'s' if len(ports) > 1 else ''} {', '.join(map(str, ports))}"
            row(lines, label, f"{', '.join(data['roles'][role]['exporters'])} ({port_list}), and a Prometheus agent "
                              "remote-writing to the workspace")
    series = data["active_series"]
    for name, group in series["groups"].items():
        itype = p.group(name).instance_type
        missing = (f", plus its {' and '.join(group['unconfirmed_parts'])} series (unconfirmed for {itype})"
                   if group["unconfirmed_parts"] else "")
        row(lines, f"series, {name}", f"~{group['per_node']:,} active series per node{missing}")
    share = series["share_of_quota"]
    verdict = ("OVER the quota: ask for an increase (Service Quotas, Amazon Managed Service for Prometheus, "
               "'Active series per workspace') before deploying" if share > 1 else f"{share:.1%} of it")
    row(lines, "series, cluster",
        f"~{series['gpu_nodes_total']:,}{' + unconfirmed parts' if series['unconfirmed_parts'] else ''} from the GPU "
        f"nodes (+ ~{series['other_node']:,} and {series['per_vcpu_of_other_nodes']} per vCPU for each other node); "
        f"the workspace's default quota is {series['workspace_quota']:,} active series: {verdict}. Mounts, network "
        "devices and disks are assumed (fmcluster.generate.metrics)")
    return True


def associations_data(st: StoragePlan, project: str = "") -> list[dict]:
    """Each data repository association: where it links, whether the project owns the bucket, and which events
    cross in each direction (as :mod:`fmcluster.plan.associations` builds them)."""
    if not st.created:
        return []
    return [{"file_system_path": a.file_system_path, "data_repository_path": a.where(project),
             "external": not a.owned, "import_events": list(a.import_events), "export_events": list(a.export_events),
             "exports_deletions": a.exports_deletions, "batch_import_on_create": a.source.batch_import_on_create,
             "words": [line.strip() for line in a.words(project)]}
            for a in plan_associations(st.spec)]


def plan_json(p: Plan) -> dict:
    """``plan -o json``: the plan's numbers and every section the text shows."""
    data = p.as_dict()
    facts = p.cluster.os_facts
    data["os"] = {"name": facts.name, "family": facts.family, "version": facts.version_id}
    data["storage"]["associations"] = associations_data(p.storage, p.project)
    data["scheduler"] = scheduler_data(p)
    data["monitoring"] = monitoring_data(p)
    return data


def print_services(p: Plan, console: Console) -> None:
    lines = settings("scheduler")
    scheduler(p, lines)
    console.print(lines)
    console.print()
    lines = settings("monitoring")
    if monitoring(p, lines):
        console.print(lines)
        console.print()
