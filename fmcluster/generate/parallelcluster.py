"""The ParallelCluster 3 cluster configuration, built as data from the cluster plan and the
outputs of the network, storage, bootstrap and observability stacks.

Every string may be a CDK token (synthesis) or a real ID / placeholder (``fmcluster parallelcluster
config``): this module never looks inside them. The same dict becomes the ``ClusterConfiguration``
of the ``Custom::PclusterCluster`` resource and the ``cluster.yaml`` for ``pcluster create-cluster``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fmcluster.config.parallelcluster import (
    DEFAULT_HEAD_NODE,
    DEFAULT_LOGIN_NODE,
    ParallelClusterSettings,
)
from fmcluster.config.accounting import DEFAULT_TRES, SlurmPolicy
from fmcluster.contracts import (
    AccountingContract,
    BootstrapContract,
    MetricsContract,
    NetworkContract,
    StorageContract,
)
from fmcluster.facts import PROJECT_TAG
from fmcluster.flavours import NODE_HEALTH_INTERVAL_S, NODE_HEALTH_PROGRAM
from fmcluster.orchestrators import DiagramPart, SlurmTarget
from fmcluster.plan import ClusterPlan, GroupPlan, Plan
from fmcluster.plan.parallelcluster import min_count
from fmcluster.generate.slurmteams import FAIR_SHARE_WEIGHT, slurm_settings as team_settings

SHARED_FSX_NAME = "fsx"
LOGIN_POOL_NAME = "login"
SSM_POLICY = "arn:{partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"


@dataclass(frozen=True)
class Queue:
    """One Slurm queue and the compute groups (one compute resource each) it holds."""

    name: str
    groups: tuple[GroupPlan, ...]

    @property
    def capacity_type(self) -> str:
        return "CAPACITY_BLOCK" if self.groups[0].capacity == "capacity-block" else "ONDEMAND"


def pc_os(cluster: ClusterPlan) -> str:
    return cluster.pcluster.os or cluster.os_facts.parallelcluster


def architecture(cluster: ClusterPlan) -> str:
    """The one CPU architecture of the compute groups (the parallelcluster-architecture check ensures one)."""
    return cluster.groups[0].architecture


def queues(cluster: ClusterPlan) -> tuple[Queue, ...]:
    """Queues in file order: the explicit mapping, or one queue per compute group named after it."""
    mapping = cluster.pcluster.queue_mapping([g.name for g in cluster.groups])
    return tuple(Queue(name, tuple(cluster.group(g) for g in members)) for name, members in mapping.items())


def node_policy_statements(bootstrap_read_arns: Sequence[str], metrics: MetricsContract | None,
                           pointer_arns: Sequence[str] = ()) -> list[dict[str, Any]]:
    """What every cluster node may do besides ParallelCluster's own policies: read the bootstrap
    bundle (``bootstrap_read_arns``: its object ARNs, or ``<bucket-arn>/<prefix>/*``) and the bootstrap pointers
    (``pointer_arns``: the SSM parameters the launcher reads), and remote-write metrics to the project's Prometheus
    workspace."""
    statements: list[dict[str, Any]] = [
        {"Sid": "ReadBootstrapBundle", "Effect": "Allow", "Action": "s3:GetObject",
         "Resource": list(bootstrap_read_arns)},
    ]
    if pointer_arns:
        statements.append({"Sid": "ReadBootstrapPointers", "Effect": "Allow", "Action": "ssm:GetParameter",
                           "Resource": list(pointer_arns)})
    if metrics is not None:
        statements.append({"Sid": "RemoteWriteMetrics", "Effect": "Allow", "Action": "aps:RemoteWrite",
                           "Resource": metrics.workspace_arn})
    return statements


def cluster_config(
    cluster: ClusterPlan,
    *,
    network: NetworkContract,
    storage: StorageContract | None,
    bootstrap: BootstrapContract,
    node_policy_arns: Sequence[str] = (),
    region: str | None = None,
    partition: str = "aws",
    accounting: AccountingContract | None = None,
) -> dict[str, Any]:
    """The ParallelCluster 3 configuration (the dict behind cluster.yaml).

    ``accounting``: the accounting database (``stacks/accounting.py``), given when the project's accounting is on;
    it becomes ``SlurmSettings.Database`` and its client group joins the head node's (where slurmdbd runs).

    ``bootstrap``: the launcher every node runs as its custom action, and the pointers it reads
    (:func:`custom_actions`).

    ``node_policy_arns``: managed policies fmcluster made for the nodes (see
    :func:`node_policy_statements`); the project's ``extra_iam_policy_arns`` and SSM's
    AmazonSSMManagedInstanceCore are added to them.
    """
    settings = cluster.pcluster
    arch = architecture(cluster)
    policies = [{"Policy": arn} for arn in _unique(
        [SSM_POLICY.format(partition=partition), *node_policy_arns, *settings.extra_iam_policy_arns])]
    # The cluster's own groups instead of ParallelCluster's managed ones: no SSH ingress from
    # anywhere, and head, login and compute nodes reach each other through the EFA group
    # (all traffic to and from itself). Access is SSM Session Manager; no key pair.
    security_groups = [network.node_security_group_id, network.efa_security_group_id]

    config: dict[str, Any] = {}
    if region is not None:
        config["Region"] = region
    config["Image"] = {"Os": pc_os(cluster)}
    config["Imds"] = {"ImdsSupport": "v2.0"}
    config["HeadNode"] = {
        "InstanceType": settings.head_node_instance_type or DEFAULT_HEAD_NODE[arch],
        "Networking": {"SubnetId": network.services_subnet_id, "SecurityGroups": list(
            security_groups if accounting is None else [*security_groups, accounting.client_security_group_id])},
        "LocalStorage": {"RootVolume": {**_root_volume(settings.head_node_root_volume_gib), "DeleteOnTermination": True}},
        "Imds": {"Secured": True},
        # The launcher every node runs: on the head node it runs the head-node bundle, which puts pyxis in the
        # shared /opt/slurm/etc/plugstack.conf (ParallelCluster ships it disabled) and runs `scontrol reconfigure`.
        "CustomActions": custom_actions(bootstrap, head=True),
        "Iam": {"AdditionalIamPolicies": list(policies)},
    }
    config["Scheduling"] = {
        "Scheduler": "slurm",
        "SlurmSettings": _slurm_settings(settings, imex=cluster.needs_imex,
                                         accounting=accounting, policy=cluster.slurm_policy,
                                         teams=team_settings(cluster)),
        "SlurmQueues": [
            _queue(cluster, queue, network, security_groups, policies, bootstrap)
            for queue in queues(cluster)
        ],
    }
    if settings.login_nodes is not None:
        config["LoginNodes"] = {"Pools": [{
            "Name": LOGIN_POOL_NAME,
            "Count": settings.login_nodes.count,
            "InstanceType": settings.login_nodes.instance_type or DEFAULT_LOGIN_NODE[arch],
            "Networking": {"SubnetIds": [network.services_subnet_id], "SecurityGroups": list(security_groups)},
            "Iam": {"AdditionalIamPolicies": list(policies)},
        }]}
    if storage is not None and storage.fsx is not None:
        config["SharedStorage"] = [{
            "Name": SHARED_FSX_NAME,
            "StorageType": "FsxLustre",
            "MountDir": storage.fsx.mount_path,
            "FsxLustreSettings": {"FileSystemId": storage.fsx.file_system_id},
        }]
    config["Tags"] = [{"Key": k, "Value": v} for k, v in tags(cluster).items()]
    return _fresh(config)  # no shared sub-objects: YAML writes no anchors, callers may edit any part


def tags(cluster: ClusterPlan) -> dict[str, str]:
    return {PROJECT_TAG: cluster.project, **cluster.tags}


def _queue(cluster: ClusterPlan, queue: Queue, network: NetworkContract, security_groups: list[str],
           policies: list[dict[str, str]], bootstrap: BootstrapContract) -> dict[str, Any]:
    amis = {g.ami_id for g in queue.groups}
    out: dict[str, Any] = {
        "Name": queue.name,
        "CapacityType": queue.capacity_type,
        "Networking": {"SubnetIds": [network.compute_subnet_id], "SecurityGroups": list(security_groups)},
        "ComputeSettings": {"LocalStorage": {"RootVolume": _root_volume(
            max(g.root_volume_gib for g in queue.groups))}},
        "CustomActions": custom_actions(bootstrap, head=False),
        "Iam": {"AdditionalIamPolicies": list(policies)},
        "ComputeResources": [_compute_resource(cluster, g) for g in queue.groups],
    }
    if len(amis) == 1 and None not in amis:
        out["Image"] = {"CustomAmi": amis.pop()}
    return out


LAUNCH_CONFIGURE, LAUNCH_UPDATE = "configure", "update"
"""The launcher's modes (``templates/bootstrap/launch.sh.j2``)."""


def custom_actions(bootstrap: BootstrapContract, *, head: bool) -> dict[str, Any]:
    """A node role's ``CustomActions``: the launcher, reading the role's pointer, as ``OnNodeConfigured``.

    ParallelCluster 3.16.1 never applies a change of ``HeadNode.CustomActions.OnNodeConfigured`` (update policy
    UNSUPPORTED) and a queue's only under its QueueUpdateStrategy (``fmcluster.pcluster_update_policies``), so
    neither names anything a deploy changes: the launcher's URL is its content hash, fixed, and the pointer's ARN
    is fixed; the pointer's value, the current dispatcher, is what deploys change. The head node also runs the
    launcher as ``OnNodeUpdated`` (SUPPORTED; ParallelCluster runs it after every update of the head node) with the
    digest its pointer names: a new head-node bundle changes that digest, so ParallelCluster applies the update
    and the head node re-runs its bundle, whose steps are idempotent; the launcher refuses any other digest."""
    pointer = bootstrap.head_pointer_arn if head else bootstrap.compute_pointer_arn
    out: dict[str, Any] = {"OnNodeConfigured": {"Script": bootstrap.launcher_uri, "Args": [LAUNCH_CONFIGURE, pointer]}}
    if head:
        out["OnNodeUpdated"] = {"Script": bootstrap.launcher_uri,
                                "Args": [LAUNCH_UPDATE, pointer, bootstrap.head_digest]}
    return out


def _compute_resource(cluster: ClusterPlan, group: GroupPlan) -> dict[str, Any]:
    out: dict[str, Any] = {
        "Name": group.name,
        "InstanceType": group.instance_type,
        "MinCount": min_count(cluster, group),
        "MaxCount": group.count,
        "Efa": {"Enabled": True, "GdrSupport": True},
        "Networking": {"PlacementGroup": _placement_group(group)},
    }
    if group.reservation_id is not None:
        out["CapacityReservationTarget"] = {"CapacityReservationId": group.reservation_id}
    return out


def _placement_group(group: GroupPlan) -> dict[str, Any]:
    """Explicit either way: a new group for on-demand nodes (EFA traffic wants one spine), the
    reservation's own group by name, none for capacity blocks (already placed)."""
    if group.existing_placement_group is not None:
        return {"Enabled": True, "Name": group.existing_placement_group}
    return {"Enabled": bool(group.placement_group)}


IMEX_PROLOG_FLAGS = "Alloc,NoHold"
"""UltraServer queues: the per-job IMEX prolog runs on every node of a job when it is allocated (ParallelCluster user
guide, "Support NVIDIA-Imex with p6e-gb200 instance": CustomSlurmSettings PrologFlags "Alloc,NoHold")."""


def _slurm_settings(settings: ParallelClusterSettings, *, imex: bool = False,
                    accounting: AccountingContract | None = None, policy: SlurmPolicy = SlurmPolicy(),
                    teams: dict[str, str | int] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "QueueUpdateStrategy": settings.slurm.queue_update_strategy,
        "ScaledownIdletime": settings.slurm.scaledown_idletime_minutes,
    }
    custom = dict(settings.slurm.custom_settings)
    if imex and not any(k.lower() == "prologflags" for k in custom):  # the project's own PrologFlags win
        custom["PrologFlags"] = IMEX_PROLOG_FLAGS
    defaults = accounting_settings(policy, teams) if accounting is not None else {
        # GPUs as a tracked resource even without accounting: squeue's tres-alloc (the Slurm metrics' GPUs per
        # user) and sacct name gres/gpu only when AccountingStorageTRES lists it (slurm.conf(5)), and
        # ParallelCluster's slurm.conf does not (aws-parallelcluster-cookbook slurm.conf.erb: GresTypes=gpu only)
        "AccountingStorageTRES": ",".join(DEFAULT_TRES)}
    # The periodic node health check every GPU node's bundle installs (FLAVOURS["parallelcluster"].periodic_health):
    # slurmd runs it on every node, whatever its state, while jobs run too (slurm.conf(5): HealthCheckProgram,
    # HealthCheckInterval, HealthCheckNodeState ANY); it drains a node whose GPU or EFA device degrades.
    defaults = {"HealthCheckProgram": NODE_HEALTH_PROGRAM, "HealthCheckInterval": NODE_HEALTH_INTERVAL_S,
                "HealthCheckNodeState": "ANY", **defaults}
    if accounting is not None:
        out["Database"] = database(accounting)
    for key, value in defaults.items():
        if not any(k.lower() == key.lower() for k in custom):  # the project's own settings win
            custom[key] = value
    if custom:
        out["CustomSlurmSettings"] = [{k: v} for k, v in custom.items()]
    return out


def database(accounting: AccountingContract) -> dict[str, Any]:
    """``Scheduling.SlurmSettings.Database`` (ParallelCluster 3.3+): ``Uri`` is ``host:port`` without a scheme
    (``DatabaseUriValidator``), ``PasswordSecretArn`` a secret holding the password alone; ``DatabaseName`` is left
    to ParallelCluster (the cluster's name), so two clusters can share one database server."""
    return {"Uri": f"{accounting.endpoint}:{accounting.port}", "UserName": accounting.user_name,
            "PasswordSecretArn": accounting.secret_arn}


def accounting_settings(policy: SlurmPolicy, teams: dict[str, str | int] | None = None) -> dict[str, str | int]:
    """The slurm.conf lines accounting brings (``ClusterPlan.slurm_policy``): fair share and the tracked resources
    (the QoS per partition is the head node's bootstrap's, after slurmdbd answers). None of them is on
    ParallelCluster's deny list for accounting (``SLURM_SETTINGS_DENY_LIST["SlurmConf"]["Accounting"]``:
    AccountingStorageType/Host/Port/User, JobAcctGatherType), nor are those teams bring
    (:func:`fmcluster.generate.slurmteams.slurm_settings`: AccountingStorageEnforce, PriorityType, PriorityWeight*;
    ``SlurmConf``'s ``Global`` list names none of them either)."""
    out: dict[str, str | int] = {}
    teams = teams or {}
    if policy.fair_share:
        out["PriorityType"] = "priority/multifactor"
        out["PriorityWeightFairshare"] = FAIR_SHARE_WEIGHT
    if policy.tres:
        out["AccountingStorageTRES"] = ",".join(policy.tres)
    return out | teams


def _root_volume(size_gib: int) -> dict[str, Any]:
    # Compute root volumes always go with their node (the schema has no DeleteOnTermination for them).
    return {"Size": size_gib, "Encrypted": True, "VolumeType": "gp3"}


def _fresh(value: Any) -> Any:
    """A deep copy that shares nothing (``copy.deepcopy`` keeps repeated objects repeated)."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    return value


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


# -- the scheduler's plan section, diagram and acceptance targets (fmcluster.generate.schedulers) --------------------

def scheduler_data(plan: Plan) -> dict:
    """The plan's scheduler section (``plan -o json``): head node, login nodes, queues."""
    cluster = plan.cluster
    pc = cluster.pcluster
    arch = architecture(cluster)
    login = pc.login_nodes
    return {
        "type": "parallelcluster", "version": pc.version, "cluster_name": cluster.pcluster_name,
        "created_by_cdk_deploy": pc.create_cluster,
        "head_node": {"instance_type": pc.head_node_instance_type or DEFAULT_HEAD_NODE[arch],
                      "root_volume_gib": pc.head_node_root_volume_gib, "os": pc_os(cluster)},
        "login_nodes": None if login is None else {
            "count": login.count, "instance_type": login.instance_type or DEFAULT_LOGIN_NODE[arch]},
        "queues": [{"name": q.name, "capacity_type": q.capacity_type,
                    "groups": [{"group": g.name, "count": g.count, "instance_type": g.instance_type,
                                "static": min_count(cluster, g)} for g in q.groups]}
                   for q in queues(cluster)],
        "deletion_policy": pc.deletion_policy,
    }


def diagram_part(plan: Plan) -> DiagramPart:
    return DiagramPart([("head", "head-node", f"Slurm head node\n{plan.cluster.pcluster_name}")],
                       [("head", f"group:{g.name}", "slurm", "queue") for g in plan.groups], ["head"])


def slurm_targets(cluster: ClusterPlan) -> dict[str, SlurmTarget]:
    """A group's queue; several groups in one queue are told apart by ``--constraint=<compute resource>``, a feature
    ParallelCluster gives every node of a compute resource; its nodes carry ``Gres=gpu`` (see
    :mod:`fmcluster.bootstrap.acceptance`)."""
    return {g.name: SlurmTarget(q.name, g.name if len(q.groups) > 1 else None, True)
            for q in queues(cluster) for g in q.groups}
