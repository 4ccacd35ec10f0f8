"""The plan's scheduler and monitoring sections, as text for people and as data for ``plan -o json``.

Both forms come from the same data (the orchestrator's scheduler section, :mod:`fmcluster.orchestrators`; the
exporter table), so the JSON carries what the text shows.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from fmcluster import catalog
from fmcluster.facts import HOURS_PER_MONTH
from fmcluster.cli.plantext import row, settings
from fmcluster.facts import AMP_ACTIVE_SERIES_QUOTA
from fmcluster.cli import hyperpod, hyperpod_eks, parallelcluster, planpcs, planteams
from fmcluster.generate import metrics, schedulers
from fmcluster.plan import Plan
from fmcluster.plan import slurm_teams
from fmcluster.plan.associations import plan_associations
from fmcluster.plan.storage import StoragePlan


def scheduler_data(p: Plan) -> dict:
    """The scheduler section: what `cdk deploy` starts, its nodes and queues or groups (the orchestrator says)."""
    return schedulers.scheduler(p.cluster).data(p)


def _none_rows(p: Plan, data: dict, lines: Table) -> None:
    row(lines, "none", "launch templates only: `cdk deploy` starts no node and no scheduler; launch "
                       f"instances from the {p.project}-GROUP templates with your own tooling")


ROWS: dict[str, Callable[[Plan, dict, Table], None]] = {
    "none": _none_rows,
    "parallelcluster": parallelcluster.plan_rows,
    "hyperpod": hyperpod.plan_rows,
    "pcs": planpcs.scheduler_rows,
    "hyperpod-eks": hyperpod_eks.plan_rows,
}
"""The cli stage's table of orchestrators (:mod:`fmcluster.orchestrators`): the scheduler section as text rows."""


def scheduler(p: Plan, lines: Table) -> None:
    ROWS[p.cluster.orchestrator](p, scheduler_data(p), lines)


def accounting_data(p: Plan) -> dict | None:
    """The accounting section: where the records live, what is kept after ``cdk destroy``, the Slurm defaults; None
    when accounting is off. No price: Aurora's per-ACU-hour and per-GB-month prices vary by Region and are not
    recorded here."""
    store = p.cluster.accounting_store
    if store is None:
        return None
    spec = p.cluster.accounting
    policy = p.cluster.slurm_policy  # what fmcluster applies on this orchestrator, not what it would elsewhere
    data: dict = {"store": store, "fair_share": policy.fair_share, "qos_per_partition": policy.qos_per_partition,
                  "tres": list(policy.tres), "database": None, "kept": STORE_KEPT.get(store),
                  # Slurm enforces a QoS's limits only with AccountingStorageEnforce=limits, which teams bring
                  "qos_limits_enforced": policy.qos_per_partition and slurm_teams.applies(p.cluster)}
    if store == "database":
        db = spec.database
        data["database"] = {"engine": "Aurora MySQL Serverless v2", "min_capacity_acu": db.min_capacity_acu,
                            "max_capacity_acu": db.max_capacity_acu, "backup_retention_days": db.backup_retention_days,
                            "retained": True, "stack": f"{p.project}-accounting",
                            # Aurora Serverless v2 never goes below its minimum capacity, so the minimum is billed
                            # every hour (Aurora User Guide, "Aurora Serverless v2 capacity"); 730 hours a month
                            "min_acu_hours_per_month": db.min_capacity_acu * HOURS_PER_MONTH}
    return data


STORE_WORDS = {
    "controller": "on the controller node (HyperPod's own database): free, lost with the controller",
    "managed": "the orchestrator's managed accounting",
}
STORE_KEPT = {
    # AWS PCS user guide, "Slurm accounting in AWS PCS" (FACTS.md section 5)
    "managed": "the records live with the cluster: deleting it, or a replacement (a change of its size or "
               "subnets), deletes them; accounting cannot be turned off again (the cluster must be deleted)",
}
"""Where the records are not kept apart from the cluster: what ends them."""


QOS_WORDS = {True: "its limits enforced", False: "its limits not enforced: AccountingStorageEnforce comes with teams"}


def accounting(p: Plan, lines: Table) -> bool:
    """The accounting lines; False when accounting is off."""
    data = accounting_data(p)
    if data is None:
        return False
    db = data["database"]
    if db is not None:
        row(lines, "records", f"{db['engine']} in {db['stack']}, {db['min_capacity_acu']:g}-{db['max_capacity_acu']:g} "
                              f"ACU, encrypted, {db['backup_retention_days']} days of backups")
        row(lines, "cost to keep", f"Aurora bills ACU-hours: at least {db['min_capacity_acu']:g} ACU every hour it "
                                   f"exists (~{db['min_acu_hours_per_month']:,.0f} ACU-hours a month), up to "
                                   f"{db['max_capacity_acu']:g} while busy, plus storage and I/O; the price per ACU-hour "
                                   "is the Region's (Aurora pricing page), not read by `plan --prices`")
        row(lines, "on destroy", "the database, its snapshots and its secret are KEPT (deletion protection, Retain): "
                                 "it is billed until you delete it by hand")
    else:
        row(lines, "records", STORE_WORDS[data["store"]])
        if data["store"] in STORE_KEPT:
            row(lines, "kept", STORE_KEPT[data["store"]])
    policy = [*(["fair share"] if data["fair_share"] else []),
              *([f"a QoS per partition ({QOS_WORDS[data['qos_limits_enforced']]})"] if data["qos_per_partition"] else []),
              *([f"tracks {', '.join(data['tres'])}"] if data["tres"] else [])]
    row(lines, "Slurm", ", ".join(policy) or "set by fmcluster: nothing (the orchestrator's own Slurm defaults)")
    return True


def monitoring_data(p: Plan) -> dict | None:
    """The monitoring section: workspace, Grafana, each role's exporters and ports, active series."""
    obs = p.observability
    if not obs.enabled:
        return None
    spec = obs.spec
    roles = {}
    # The node that runs slurmctld also runs the Slurm metrics script; PCS's controller is AWS's, so there its login
    # nodes do (FlavourTraits.slurm_metrics_role), and no node does when it has none.
    controller = metrics.runs_slurm_metrics(p.cluster)
    for role, gpu, slurm in (("gpu_nodes", True, False), ("other_nodes", False, False),
                             ("slurm_controller", False, True)):
        if gpu or (p.cluster.driver.other_nodes and (controller or not slurm)):
            roles[role] = {
                "exporters": [e.name for e in metrics.EXPORTERS if (gpu or not e.gpu_only)
                              and (slurm or not e.slurm_only) and e is not metrics.PROMETHEUS],
                "ports": sorted({port for _, port in metrics.scrape_targets(gpu=gpu, slurm=slurm)}),
            }
    per_group, total, unknown = {}, 0, set()
    for g in p.groups:
        itype = catalog.CATALOG[g.instance_type]
        est = metrics.node_series(gpus=itype.gpus, efa_devices=g.efa_interfaces, vcpus=itype.vcpus,
                                  nvme_drives=g.local_nvme_drives)
        total += est.total * g.count
        unknown.update(est.unknown)
        per_group[g.name] = {"per_node": est.total, "unconfirmed_parts": sorted(est.unknown)}
    slurm_series = None
    if "slurm_controller" in roles:
        partitions = {t.partition for t in schedulers.scheduler(p.cluster).slurm_targets(p.cluster).values()}
        est = metrics.node_series(gpus=0, efa_devices=0, vcpus=0, nvme_drives=0, slurm_partitions=len(partitions))
        slurm_series = {"per_node": est.total, "unconfirmed_parts": sorted(est.unknown)}
    return {
        "prometheus": "Amazon Managed Prometheus workspace",
        "alert_emails": len(spec.alerts.emails),
        "grafana": {"authentication": spec.grafana.authentication} if spec.grafana.enabled else None,
        "roles": roles,
        "active_series": {"groups": per_group, "gpu_nodes_total": total, "unconfirmed_parts": sorted(unknown),
                          "other_node": metrics.node_series(gpus=0, efa_devices=0, vcpus=0, nvme_drives=0).total,
                          "slurm_controller": slurm_series,
                          "per_vcpu_of_other_nodes": metrics.CPU_MODES,
                          "workspace_quota": AMP_ACTIVE_SERIES_QUOTA, "share_of_quota": total / AMP_ACTIVE_SERIES_QUOTA},
    }


SLURM_METRICS_NODE = {"head": ("Slurm controller", "the Slurm controller's node"),
                      "login": ("login nodes", "each login node")}
"""The nodes that collect Slurm's metrics, by bootstrap role (:func:`fmcluster.generate.metrics.slurm_metrics_role`):
the plan's row label, and where the series come from."""


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
    slurm_node = SLURM_METRICS_NODE.get(metrics.slurm_metrics_role(p.cluster) or "", ("", ""))
    for role, label in (("gpu_nodes", "GPU nodes"), ("other_nodes", "other nodes"), ("slurm_controller", slurm_node[0])):
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
    if series["slurm_controller"] is not None:
        row(lines, "series, Slurm", f"~{series['slurm_controller']['per_node']:,} on {slurm_node[1]} "
                                    f"(+ {series['per_vcpu_of_other_nodes']} per vCPU), plus one per user, per (user, "
                                    "partition, pending reason) and per drained or down node: they follow the "
                                    "workload")
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
    if p.cluster.driver.image_os:  # the orchestrator's image, not the project's `os`, is what the nodes run
        data["os"] = {"name": p.cluster.driver.image_os, "family": None, "version": None}
    data["storage"]["associations"] = associations_data(p.storage, p.project)
    data["scheduler"] = scheduler_data(p)
    data["monitoring"] = monitoring_data(p)
    data["accounting"] = accounting_data(p)
    data["teams"] = planteams.teams_data(p)
    return data


def print_services(p: Plan, console: Console) -> None:
    lines = settings("scheduler")
    scheduler(p, lines)
    console.print(lines)
    console.print()
    lines = settings("accounting")
    if accounting(p, lines):
        console.print(lines)
        console.print()
    lines = settings("teams")
    if planteams.teams(p, lines):
        console.print(lines)
        console.print()
    lines = settings("monitoring")
    if monitoring(p, lines):
        console.print(lines)
        console.print()
