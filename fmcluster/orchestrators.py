"""The orchestrators: what each ``orchestrator.type`` is, as data every stage can read.

Nothing outside an orchestrator's own modules asks an orchestrator's name. A stage asks the project's orchestrator
(``plan.cluster.driver``, an :class:`Orchestrator`) for its traits, or looks its name up in that stage's one table of
implementations, each in the orchestrator's own module of that stage:

==========  =======================================  ==============================================
stage       table                                    ParallelCluster's entry, for example
==========  =======================================  ==============================================
generate    ``fmcluster.generate.schedulers``        ``fmcluster.generate.parallelcluster``
bootstrap   ``fmcluster.bootstrap.bundles.RENDERERS``  ``fmcluster.bootstrap.parallelcluster``
stacks      ``fmcluster.stacks.cluster.BUILDERS``    ``fmcluster.stacks.parallelcluster.build``
aws         ``fmcluster.aws.preflight.ORCHESTRATOR_CHECKS``
aws         ``fmcluster.aws.status.CLUSTERS``        ``fmcluster.aws.parallelcluster.cluster_status``
aws         ``fmcluster.aws.connect.TARGETS``        ``fmcluster.aws.parallelcluster.target``
cli         ``fmcluster.cli.planservices.ROWS``      ``fmcluster.cli.parallelcluster.plan_rows``
plan        ``fmcluster.plan.cost.ORCHESTRATORS``    ``fmcluster.plan.parallelcluster.cost_parts``
==========  =======================================  ==============================================

``tests/test_orchestrators.py`` checks that every table names every orchestrator. Checks live in each
orchestrator's module of ``fmcluster.checks`` and run only for their own orchestrator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ALL_CAPACITY = frozenset({"on-demand", "reservation", "capacity-block"})
"""EC2 capacity: what an orchestrator launching EC2 instances from launch templates can use."""


@dataclass(frozen=True)
class Orchestrator:
    name: str
    """The project file's ``orchestrator.type``."""
    summary: str
    """One phrase for the key reference (``docs/project-file.md``)."""
    flavour: str
    """The bootstrap flavour its nodes run (:mod:`fmcluster.flavours`)."""
    slurm: bool
    """Its cluster runs Slurm (``cdk deploy`` starts it, unless the orchestrator's settings say otherwise)."""
    capacity_types: frozenset[str] = ALL_CAPACITY
    """The ``capacity.type`` values its compute groups can use."""
    unbounded_groups: bool = True
    """The cluster stack holds a launch template (and placement group) per compute group and nothing bounds their
    number below CloudFormation's stack limits, so the stack-limits check counts them. False where the orchestrator
    builds them in stacks of its own (ParallelCluster) or bounds the groups itself (HyperPod's instance groups)."""
    ultraserver_warning: bool = True
    """The generic "not a whole number of UltraServers" warning applies (False: the orchestrator's own check says
    it once, in usable instances)."""
    placement_groups: bool = True
    """fmcluster puts a compute group in a cluster placement group (``placement_group``). False where the
    orchestrator launches the instances and takes no placement group: HyperPod's CreateCluster has no such setting
    (botocore sagemaker ``ClusterInstanceGroupSpecification``), so the plan shows none."""
    image_os: str | None = None
    """The OS of the image the orchestrator boots its nodes from, where the project's ``os`` does not choose it (the
    plan says it instead of ``os``)."""
    kubernetes_api: bool = False
    """Users reach the cluster through a Kubernetes API (kubectl), not a login node: acceptance and first-job print
    the way in first (:mod:`fmcluster.generate.eks_access`)."""
    other_nodes: bool = True
    """Nodes besides the GPU nodes (a head, controller or login node) run exporters."""
    accounting: tuple[str, ...] = field(default=())
    """Where its Slurm accounting records can live (``orchestrator.accounting.store``), its default first; empty:
    no accounting (:mod:`fmcluster.config.accounting` says what each store is)."""
    accounting_secret: str = "password"
    """How the accounting database's secret holds its credentials (``stacks/accounting.py`` ``SECRET_FORMATS``):
    the password alone (ParallelCluster's ``PasswordSecretArn``) or JSON ``{"username", "password"}`` (HyperPod's
    ``AccountingDatabase.SecretArn``)."""
    accounting_node_clients: bool = False
    """The accounting database admits the whole node security group, not only its client group: the orchestrator
    cannot put slurmdbd's host alone in a group (HyperPod's ``VpcConfig`` is create-only and cluster-wide)."""
    accounting_tls: bool = True
    """The accounting database requires TLS (``require_secure_transport``): the orchestrator's slurmdbd is known to
    connect under it. False where that is unknown: the database then takes plain connections too, and its security
    group (the cluster's nodes only) is the control."""
    accounting_defaults: tuple[str, ...] = field(default=())
    """The Slurm policies accounting brings that fmcluster applies on it (:data:`fmcluster.config.accounting.
    SLURM_DEFAULTS`): the others are off, and asking for them is an error."""
    accounting_defaults_why: str = ""
    """Why the policies not in ``accounting_defaults`` cannot be applied (the accounting-defaults check says it)."""
    slurm_optional: tuple[str, ...] = field(default=())
    """The settings path of a switch that keeps ``cdk deploy`` from starting the cluster (``create_cluster``)."""
    login_setting: tuple[str, ...] = field(default=())
    """The settings path of its login nodes (None there: no login nodes); empty: login nodes run no bundle of ours."""
    efa_file_system_refusal: str = ""
    """Why its nodes cannot mount an EFA-enabled FSx for Lustre file system (empty: they can; our bundle sets up the
    LNet-over-EFA client)."""
    teams: tuple[str, ...] = field(default=())
    """The parts of the project's ``teams`` (:mod:`fmcluster.config.teams`) it enforces: ``members``,
    ``fair_share``, ``guaranteed``, ``borrow``, ``lend``, ``preempt``. A team asking for a part not here is refused
    at validate (teams-supported), with ``teams_why``; empty: no teams at all."""
    teams_why: str = "fmcluster does not apply teams on it"
    """Why the parts not in ``teams`` cannot be enforced (the teams-supported check says it)."""
    teams_how: tuple[tuple[str, str], ...] = field(default=())
    """How it enforces each part in ``teams`` (part, how), in the same order: docs/teams.md's table."""
    control_plane_subnets: bool = False
    """The cluster stack puts a control plane in two /28 subnets of two Availability Zones (EKS needs two zones),
    carved as the accounting database's are (the VPC's last two /28s: :attr:`fmcluster.plan.ClusterPlan.
    control_plane_subnet_cidrs`)."""
    pod_addresses: bool = False
    """Its nodes' pods and every EFA interface take addresses from the compute subnet (the Amazon VPC CNI on EKS): the
    plan counts them per instance group (:func:`fmcluster.plan.hyperpod_eks.node_addresses`) instead of one per node
    (launch templates' efa-only interfaces, FACTS.md section 1)."""
    nodes: tuple[str, ...] = ("compute",)
    """The nodes ``fmcluster connect --node`` reaches, its default first: ``head`` (ParallelCluster's head node),
    ``controller`` (HyperPod's slurmctld), ``login``, ``compute`` (a GPU node of a compute group: where nothing
    else runs). Which of them a project has (login nodes are optional) the orchestrator's own module says."""

    def has_login(self, cluster: Any) -> bool:
        """Whether ``cluster``'s login nodes run a bundle of ours (:attr:`login_setting`)."""
        if not self.login_setting:
            return False
        value: Any = cluster
        for part in self.login_setting:
            value = getattr(value, part)
        return value is not None

    def runs_slurm(self, cluster: Any) -> bool:
        """Whether ``cdk deploy`` starts a Slurm cluster for ``cluster`` (a :class:`fmcluster.plan.ClusterPlan`); the
        cluster stack is then termination-protected."""
        if not self.slurm:
            return False
        value: Any = cluster
        for part in self.slurm_optional:
            value = getattr(value, part)
        return bool(value)


@dataclass(frozen=True)
class SlurmTarget:
    """Where an acceptance job for one compute group goes: its partition, a node constraint within it, and
    whether Slurm knows the GPUs as a GRES (``--gres``/``--gpus-per-node`` then apply)."""

    partition: str
    constraint: str | None
    gres: bool


@dataclass(frozen=True)
class DiagramPart:
    """The scheduler's part of the diagram: nodes ``(id, kind, label)``, edges ``(source, target, kind, label)``,
    and which of its nodes sit in the services subnet."""

    nodes: list[tuple[str, str, str]]
    edges: list[tuple[str, str, str, str]]
    services: list[str]


ORCHESTRATORS: dict[str, Orchestrator] = {o.name: o for o in (
    Orchestrator("none", "launch templates only", "self-managed", slurm=False, other_nodes=False),  # nodes: compute
    Orchestrator("parallelcluster", "AWS ParallelCluster 3 with Slurm", "parallelcluster", slurm=True,
                 unbounded_groups=False, slurm_optional=("pcluster", "create_cluster"),
                 # SlurmSettings.Database needs an external MySQL-compatible server (ParallelCluster user guide,
                 # "Slurm accounting with AWS ParallelCluster"): no controller-local option
                 accounting=("database",), nodes=("head", "login"),
                 # fair share and TRES through SlurmSettings.CustomSlurmSettings; the QoS by the head node's
                 # bootstrap once slurmdbd answers (a QOS= in slurm.conf before the QoS exists stops slurmctld)
                 accounting_defaults=("fair_share", "qos_per_partition", "tres"),
                 efa_file_system_refusal="ParallelCluster mounts the file system over TCP; the EFA Lustre client "
                                         "set-up it needs (FSx guide 'configure EFA clients') is not wired into "
                                         "ParallelCluster nodes yet",
                 # a team is an account (Fairshare=fair_share), its members users with an association per partition
                 # whose default QoS caps the team there (GrpTRES=node=guaranteed+borrow), made by the head node's
                 # bootstrap; AccountingStorageEnforce and the priority weights through CustomSlurmSettings (none on
                 # ParallelCluster 3.16.1's deny list, pcluster/validators/slurm_settings_validator.py)
                 # without borrowing the caps add up to at most each group's count, so every team can always get
                 # its guaranteed nodes: a guarantee without preemption
                 teams=("members", "fair_share", "guaranteed", "lend"),
                 teams_how=(
                     ("members", "an association per member with the team's account in each partition of its "
                                 "groups; `AccountingStorageEnforce=associations,limits,qos` refuses anyone else "
                                 "(\"Invalid account or account/partition combination specified\")"),
                     ("fair_share", "the account's `Fairshare=`, weighed by `PriorityType=priority/multifactor`"),
                     ("guaranteed", "a QoS per team and partition, `GrpTRES=node=N Flags=DenyOnLimit`: the team's "
                                    "jobs hold at most N nodes there and a job asking for more alone is refused at "
                                    "submit; no team borrows, so the caps add up to at most the group's count"),
                     ("lend", "nobody borrows on Slurm, so `lend` has nothing to lend: `true` and `false` both "
                              "hold")),
                 teams_why="on Slurm fmcluster configures no preemption: nothing takes borrowed nodes back from a job "
                           "(so a team that borrowed could keep another team from its guaranteed nodes) and there "
                           "are no priority classes within a team"),
    Orchestrator("hyperpod", "SageMaker HyperPod with Slurm", "hyperpod", slurm=True,
                 capacity_types=frozenset({"on-demand", "training-plan"}), unbounded_groups=False,
                 placement_groups=False,
                 ultraserver_warning=False,
                 # Orchestrator.Slurm.AccountingDatabase, else the controller's own database (botocore sagemaker)
                 accounting=("database", "controller"), accounting_secret="credentials",
                 nodes=("controller", "login"),
                 accounting_node_clients=True,
                 # whether HyperPod's slurmdbd connects with TLS: no source found (SageMaker developer guide on the
                 # external accounting database, awsome-distributed-training, HyperPod issues); requiring it could
                 # keep the controller's accounting from ever starting, so the security group is the control
                 accounting_tls=False,
                 # the QoS by the controller's bootstrap; HyperPod writes slurm.conf itself, and fmcluster does not
                 # edit it (no source says which of its lines HyperPod keeps across updates)
                 accounting_defaults=("qos_per_partition",),
                 accounting_defaults_why="HyperPod writes the controller's slurm.conf itself and fmcluster does not "
                                         "edit it",
                 efa_file_system_refusal="HyperPod mounts the file system itself (FsxLustreConfig) over TCP; the EFA "
                                         "Lustre client set-up (FSx guide 'configure EFA clients') is not part of it",
                 # no teams: accounts and QoS could be made on the controller, but without AccountingStorageEnforce
                 # (slurm.conf, HyperPod's) Slurm enforces neither membership nor limits (slurm.conf(5))
                 teams_why="HyperPod writes the controller's slurm.conf itself, so fmcluster cannot set "
                           "AccountingStorageEnforce (without it Slurm enforces neither a team's members nor its caps) "
                           "nor the fair-share priority weights"),
    Orchestrator("pcs", "AWS Parallel Computing Service, managed Slurm", "pcs", slurm=True,
                 unbounded_groups=False,  # at most 10 node groups (pcs-node-groups)
                 # slurmConfiguration.accounting (mode STANDARD): PCS keeps the records itself (botocore pcs)
                 accounting=("managed",), login_setting=("pcs", "login"),
                 nodes=("login",),  # AWS runs the controller: nothing to connect to
                 # PCS's cluster-level custom settings take Prolog, Epilog, SelectTypeParameters and
                 # AccountingStorageEnforce (botocore pcs SlurmCustomSetting), not PriorityType or
                 # AccountingStorageTRES; a queue's QOS needs the QoS made in PCS's accounting first (unconfirmed
                 # who may run sacctmgr there)
                 accounting_defaults_why="AWS PCS takes no PriorityType or AccountingStorageTRES among its custom "
                                         "settings, and fmcluster cannot create a QoS in PCS's managed "
                                         "accounting",
                 # PCS user guide, "Slurm accounting in AWS PCS" (docs.aws.amazon.com/pcs/latest/userguide/
                 # slurm-accounting.html): accounting can "enforce resource limits, and manage fine-grained access
                 # control to specific queues", its functions run from "the Linux shell of a login node"; "Custom
                 # Slurm settings for AWS PCS clusters" (.../slurm-custom-settings-cluster.html): "AWS PCS supports a
                 # subset of the options for AccountingStorageEnforce". So teams could be applied from a login node;
                 # fmcluster's PCS login bundle has no such step yet, and PriorityType is not a PCS custom setting
                 teams_why="fmcluster does not apply teams on AWS PCS yet: PCS takes AccountingStorageEnforce (a "
                           "subset of its options) and its accounting commands run on a login node (PCS user guide, "
                           "\"Slurm accounting in AWS PCS\" and \"Custom Slurm settings for AWS PCS clusters\"), but "
                           "fmcluster's login-node bundle has no step that creates the accounts, users and QoS, and "
                           "enforcing without them refuses every job; PriorityType (fair share) is not a PCS custom "
                           "setting"),
    Orchestrator("hyperpod-eks", "SageMaker HyperPod orchestrated by Amazon EKS (Kubernetes)", "hyperpod-eks",
                 slurm=False, capacity_types=frozenset({"on-demand", "training-plan"}), unbounded_groups=False,
                 ultraserver_warning=False, placement_groups=False,
                 # HyperPod's EKS AMI: Amazon Linux (FACTS.md 5b.x)
                 image_os="HyperPod's EKS AMI (Amazon Linux)", kubernetes_api=True,
                 # task governance's ComputeQuota per team (botocore sagemaker CreateComputeQuota): FairShareWeight,
                 # ComputeQuotaResources (guaranteed), ResourceSharingConfig.BorrowLimit/Strategy (borrow, lend),
                 # PreemptTeamTasks (preempt). Members would need a namespace RBAC binding per user: not mapped.
                 teams=("fair_share", "guaranteed", "borrow", "lend", "preempt"),
                 teams_how=(
                     ("fair_share", "`ComputeQuotaTarget.FairShareWeight` (the scheduler config's `FairShare: "
                                    "Enabled`)"),
                     ("guaranteed", "`ComputeQuotaConfig.ComputeQuotaResources` (count per instance type)"),
                     ("borrow", "`ResourceSharingConfig.AbsoluteBorrowLimits`, `Strategy: LendAndBorrow`; "
                                "borrowed pods are evicted when the lender asks for its quota back"),
                     ("lend", "`ResourceSharingConfig.Strategy`: `Lend` or `LendAndBorrow`; `false`: `DontLend`"),
                     ("preempt", "`ComputeQuotaConfig.PreemptTeamTasks`: `LowerPriority` or `Never`")),
                 teams_why="task governance shares instances between teams' namespaces; who may submit to a team's "
                           "namespace is Kubernetes RBAC, which fmcluster does not write",
                 control_plane_subnets=True, pod_addresses=True, nodes=("compute",)),
)}
"""``orchestrator.type`` -> what it is; the project file's default (no scheduler) first."""

NAMES: tuple[str, ...] = tuple(ORCHESTRATORS)


def get(name: str) -> Orchestrator:
    return ORCHESTRATORS[name]


def by_flavour(flavour: str) -> Orchestrator:
    """The orchestrator whose nodes run bootstrap ``flavour``."""
    return next(o for o in ORCHESTRATORS.values() if o.flavour == flavour)
