"""Bootstrap flavours: what differs, on the node, between the orchestrators' images and ways of running a bundle.

A flavour is a row of :data:`FLAVOURS`; the context (:mod:`fmcluster.bootstrap.context`) and the templates read
its traits, never its name. Each orchestrator names its flavour (:attr:`fmcluster.orchestrators.base.Orchestrator.
flavour`); the image it boots is in ``bootstrap/profiles/<flavour>-<os>.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ImexMembers = Literal["ec2-topology", "hyperpod-api", "job-prolog"]
SlurmctldRole = Literal["head"]
SlurmMetricsRole = Literal["head", "login"]
PeriodicHealth = Literal["slurm.conf", "timer"]

NODE_HEALTH_PROGRAM = "/usr/local/sbin/fmcluster-node-health"
"""Where the bundle installs the periodic node health check (``templates/bootstrap/partials/node_health.sh.j2``)."""
NODE_HEALTH_INTERVAL_S = 300
"""How often it runs: Slurm's HealthCheckInterval, or the timer's period (our choice: a degraded GPU keeps taking jobs
for at most five minutes; each run is a few nvidia-smi queries)."""
UnhealthyAction = Literal["drain", "hyperpod-replace"]


@dataclass(frozen=True)
class Limit:
    """How long the orchestrator waits for a node it launched, counted from the launch (the boot budget's limit,
    :mod:`fmcluster.bootstrap.budget`)."""

    seconds: int | None
    name: str
    source: str
    unconfirmed: bool = False


@dataclass(frozen=True)
class Phase:
    """Time inside the limit that is not the bundle's."""

    name: str
    seconds: int
    why: str
    assumed: bool = True
    """No source gives the figure: stated as an assumption wherever it is shown."""


@dataclass(frozen=True)
class Flavour:
    name: str
    slurm_prefix: str | None
    """Where Slurm is installed on the node (``bin/``, ``etc/``, ``lib/slurm``); None: no Slurm on the node."""
    mounts_fsx: bool
    """The bundle mounts FSx for Lustre itself (else the orchestrator does: ParallelCluster's ``SharedStorage``,
    HyperPod's ``FSxLustreConfig``)."""
    slurm_config_on_head_only: bool = False
    """Slurm's configuration directory is shared from the head node, so only the head writes plugstack.conf
    (ParallelCluster's /opt/slurm); otherwise every node writes its own."""
    plugstack_include_note: str = ""
    """Why the pyxis include sits where it does, appended to the comment in the rendered script."""
    plugstack_where: str = ""
    """Where Slurm reads plugstack.conf under this orchestrator (a comment in the head's rendered script)."""
    imex_members: ImexMembers = "ec2-topology"
    """How a GB200 node learns its IMEX peers: EC2's instance topology at boot, HyperPod's node API at boot, or a
    per-job prolog (the job's nodes)."""
    marks_unhealthy: bool = False
    """No orchestrator reads the health file: a failed health check also tags the instance and, in an Auto Scaling
    group, sets it Unhealthy."""
    reboots_itself: bool = False
    """The bundle may reboot the node to finish the EFA installer (no scheduler waits on the node)."""
    pyxis_loadable: bool = True
    """slurmd can load pyxis from a plugstack.conf the bundle writes (on the node, or on a controller it runs).
    False: slurmd takes plugstack.conf from a controller the bundle cannot configure, so containers (enroot +
    pyxis) are off by default."""

    slurmctld_role: SlurmctldRole | None = None
    """The bundle role of the node that runs slurmctld (the slurm-policy step's QoS per partition goes there); None:
    no node of ours runs the controller (no Slurm, or a controller AWS manages)."""

    slurm_metrics_role: SlurmMetricsRole | None = None
    """The bundle role of the node that runs our Slurm metrics script (``files/fmcluster-slurm-metrics``: squeue and
    sinfo, which any node with Slurm's clients and credentials can run): the slurmctld node where it is ours, a login
    node where AWS runs the controller; None: no Slurm metrics are collected."""

    image_gpu_stack: str = ""
    """Non-empty: the image carries the NVIDIA driver (with Fabric Manager or nvidia-imex), EFA and GDRCopy, and the
    bundle reuses them and installs none over the image; a node whose image lacks one fails, with this text saying
    which image should have carried it. Empty: what the image lacks is installed."""
    operating_systems: tuple[str, ...] = ()
    """The ``os`` values its image exists for (empty: every OS fmcluster knows)."""
    periodic_health: PeriodicHealth | None = None
    """How the periodic node health check (``files/fmcluster-node-health``) runs on GPU nodes while jobs run: Slurm's
    own ``HealthCheckProgram``, which fmcluster sets in slurm.conf ("slurm.conf"), or a systemd timer of ours
    ("timer": where slurm.conf is not fmcluster's to set); None: no scheduler to drain a node in."""
    unhealthy_action: UnhealthyAction = "drain"
    """What the check does with a faulty node: drain it with the reason ("drain": the orchestrator replaces drained
    nodes or an operator does), or HyperPod's own replace contract ("hyperpod-replace": ``state=fail
    reason=Action:Replace``)."""

    boot_limit: Limit = Limit(None, "none", "no scheduler waits on the node")
    """How long the orchestrator waits for the node (seconds None: no limit, or none known)."""
    head_boot_limit: Limit | None = None
    """How long the orchestrator waits for the head node's bundle, where that differs from ``boot_limit`` (None:
    ``boot_limit``)."""
    boot_before: tuple[Phase, ...] = ()
    """What the limit counts before the bundle starts (none: no limit, or the bundle starts the clock)."""
    boot_before_kernel: Phase | None = None
    """The part of ``boot_before`` before the node's kernel starts (the entry script measures the rest:
    /proc/uptime); None: the entry script sets no deadline."""
    boot_margin: Phase | None = None
    """What the orchestrator does after the bundle, inside the limit."""

    @property
    def slurm(self) -> bool:
        return self.slurm_prefix is not None

    @property
    def imex_members_at_boot(self) -> bool:
        return self.imex_members != "job-prolog"


PARALLELCLUSTER_LAUNCH = Phase(
    "EC2 launch", 120,
    "from ParallelCluster's RunInstances to the kernel starting (instance pending, firmware): no source gives a "
    "figure for GPU instances")

FLAVOURS: dict[str, Flavour] = {f.name: f for f in (
    Flavour("self-managed", slurm_prefix=None, mounts_fsx=True, marks_unhealthy=True, reboots_itself=True,
            boot_limit=Limit(None, "none", "self-managed nodes have no scheduler waiting on them")),
    Flavour(
        "parallelcluster", slurm_prefix="/opt/slurm", mounts_fsx=False, slurm_config_on_head_only=True,
        plugstack_where="ParallelCluster's head node shares /opt/slurm with every node (ParallelCluster user guide, "
                        "\"internal directories\"); the cookbook ships the files only as examples under "
                        "/opt/parallelcluster/examples (aws-parallelcluster-cookbook recipes/install/install_pyxis.rb)",
        imex_members="job-prolog", slurmctld_role="head", slurm_metrics_role="head",
        # HealthCheckProgram is not on ParallelCluster's deny list for CustomSlurmSettings (aws-parallelcluster
        # 3.16.1 pcluster/validators/slurm_settings_validator.py SLURM_SETTINGS_DENY_LIST) and its cookbook sets none
        # (aws-parallelcluster-cookbook@f75d84c3 slurm.conf.erb); clustermgtd replaces a static node that is DRAIN or
        # DOWN (ParallelCluster user guide, "Slurm Workload Manager (slurm)", cluster capacity size and update).
        periodic_health="slurm.conf",
        boot_limit=Limit(
            1800, "Slurm ResumeTimeout (ParallelCluster DevSettings/Timeouts/ComputeNodeBootstrapTimeout)",
            "aws/aws-parallelcluster-cookbook@f75d84c38ecfac1891e5f3e8fe2d424cc3e7448d cookbooks/aws-parallelcluster-"
            "slurm/libraries/update.rb:55 (ComputeNodeBootstrapTimeout or 1800) and files/default/head_node_slurm/"
            "slurm/templates/slurm_parallelcluster.conf:10 (ResumeTimeout={{ compute_node_bootstrap_timeout }}); a "
            "later cookbook change (aws-parallelcluster-cookbook #3175) speaks of 2100 s: the smaller is used"),
        boot_before=(
            PARALLELCLUSTER_LAUNCH,
            Phase("ParallelCluster's setup", 420,
                  "from the kernel starting to OnNodeConfigured (cloud-init, the cookbook's config recipes, shared "
                  "storage mounts): ParallelCluster's own integration tests allow a node 5 minutes, 7 in 3.13 on "
                  "RHEL/Rocky, to join the scheduler (aws/aws-parallelcluster#6761, tests/integration-tests/tests/"
                  "common/hit_common.py wait_for_num_nodes_in_scheduler); the larger is assumed"),
        ),
        head_boot_limit=Limit(
            2100, "CloudFormation HeadNodeWaitCondition (ParallelCluster DevSettings/Timeouts/HeadNodeBootstrapTimeout)",
            "aws-parallelcluster 3.16.1 pcluster/templates/cluster_stack.py _add_wait_condition: a new "
            "HeadNodeWaitCondition<timestamp> on every create and update, its timeout dev_settings.timeouts."
            "head_node_bootstrap_timeout, default pcluster/constants.py NODE_BOOTSTRAP_TIMEOUT = 2100; so an update "
            "(OnNodeUpdated) has the whole timeout again, from the update's start"),
        boot_before_kernel=PARALLELCLUSTER_LAUNCH,
        boot_margin=Phase("after the bundle", 120, "ParallelCluster finishes the node after OnNodeConfigured returns "
                                                   "and slurmd registers with slurmctld")),
    Flavour(
        "hyperpod", slurm_prefix="/opt/slurm", mounts_fsx=False,
        plugstack_include_note=" (slurmd resolves the controller's include locally)",
        plugstack_where="HyperPod's slurmd runs configless and fetches plugstack.conf from the controller, ignoring "
                        "a compute-local one",
        imex_members="hyperpod-api", slurmctld_role="head", slurm_metrics_role="head",
        # slurm.conf is HyperPod's (SlurmConfigStrategy): a timer runs the check, and a faulty node is handed to
        # HyperPod's own recovery: `scontrol update node=<node> state=fail reason="Action:Replace"` (SageMaker
        # developer guide, "Manually replace or reboot a node using Slurm",
        # sagemaker-hyperpod-resiliency-slurm-replace-faulty-instance.html)
        periodic_health="timer", unhealthy_action="hyperpod-replace",
        boot_limit=Limit(
            None, "HyperPod lifecycle script limit", "unconfirmed: no public source states how long HyperPod waits "
            "for OnInitComplete before it fails the node", unconfirmed=True)),
    # AWS PCS: the image is AWS's dlami_for_pcs_imagebuilder recipe on the DLAMI (profiles/pcs-*.yaml).
    # - Slurm: the recipe installs 24.11, 25.05 and 25.11 under /opt/aws/pcs/scheduler/slurm-<version> and puts
    #   24.11 first on PATH, its clients working with newer controllers (aws-samples/aws-hpc-recipes@
    #   009a29a8462aaeb83e82d90ab8405d1a735302c7 recipes/pcs/dlami_for_pcs_imagebuilder/assets/dlami-for-pcs.yaml:
    #   219-273, 387-425). The bundle runs only client commands from it (scontrol in the IMEX service); which
    #   version slurmd runs is the PCS agent's choice.
    # - FSx: PCS has no storage setting; AWS's samples mount FSx with a node lifecycle script (mount-fsx-lustre from
    #   s3://aws-pcs-repo-<region>/aws-pcs-node-lifecycle-scripts/: same repository, recipes/pcs/getting_started/
    #   assets/cluster.yaml:340-352). Our bundle mounts it instead, before slurmd starts (PCS user guide, "Working
    #   with Amazon EC2 user data": text/x-shellscript parts run after the instance registers, before slurmd).
    # - Containers: PCS runs Slurm configless (PCS user guide, "Slurm configuration in AWS PCS"): slurmd fetches
    #   plugstack.conf with the rest from the controller, whose files PCS generates and which has no plugstack
    #   setting (custom Slurm settings: slurm.conf, slurmdbd.conf and cgroup.conf parameters), so a node-local
    #   plugstack.conf is ignored and pyxis cannot be loaded.
    # - Health: our bundle runs before slurmd has fetched its configuration, so it cannot drain its own node at
    #   once; it tags the instance (fmcluster:health=unhealthy; no source says PCS uses an Auto Scaling group, so the
    #   group lookup is best effort), and the periodic node health check (below) drains it once slurmd registers. PCS's own instance health checks (ComputeNodeGroup InstanceHealthChecks, PCS API
    #   reference "HealthMonitoring": repair action AUTO | REPLACE | ISOLATE | NONE) watch the node once it runs.
    # - Reboot: none; a scheduler waits on the node (how long is unconfirmed: boot_limit).
    # - IMEX: as self-managed (EC2 instance topology at boot); GB200 under PCS: no source found.
    # - Slurm metrics: slurmctld runs on a controller AWS manages, which runs nothing of ours; the login nodes run
    #   sackd, through which Slurm's client commands reach it (PCS user guide, "Login nodes"), so the Slurm metrics
    #   script (squeue, sinfo) runs on the login node group's nodes. Without login nodes, none is collected.
    # - Periodic health: HealthCheckProgram is not among the custom Slurm settings the PCS sources we found list
    #   (PCS API reference SlurmCustomSetting), so a timer of ours runs the check and drains the node; a bootstrap that
    #   failed before the timer was installed installs it from the entry script, and its first run drains the node
    #   with the bootstrap's reason once slurmd has registered it.
    Flavour("pcs", slurm_prefix="/opt/aws/pcs/scheduler/slurm-24.11", mounts_fsx=True, marks_unhealthy=True,
            pyxis_loadable=False, slurm_metrics_role="login", periodic_health="timer",
            boot_limit=Limit(
                None, "PCS node registration/boot limit", "unconfirmed: the PCS user guide says when user data runs "
                "(shell parts after the instance registers, before slurmd starts: \"Working with Amazon EC2 user "
                "data\") but no public source found states how long PCS waits for slurmd (a ResumeTimeout is not "
                "among PCS's custom Slurm settings we found)", unconfirmed=True)),
    # SageMaker HyperPod on EKS: HyperPod's EKS AMI, no Slurm; pods mount FSx through the CSI driver (a static PV),
    # so the node bundle mounts nothing. HyperPod's health-monitoring agent (the Helm chart) reads node health and
    # taints the node itself (FACTS.md section 5b); IMEX peers from HyperPod's node API as under Slurm.
    # Its image: HyperPod's AMI for EKS, built on AL2023 only ("Each DLAMI is built on AL2023", SageMaker developer
    # guide "SageMaker HyperPod AMI releases for Amazon EKS"; no Amazon Linux 2 AMI for Kubernetes 1.33, release of
    # 2025-09-29), carrying the NVIDIA driver, Fabric Manager, EFA and GDRCopy (bootstrap/profiles/
    # hyperpod-eks-al2023.yaml). AWS's EKS lifecycle script installs none of them (awsome-distributed-training
    # 1.architectures/7.sagemaker-hyperpod-eks/LifecycleScripts/base-config/on_create_main.sh).
    Flavour("hyperpod-eks", slurm_prefix=None, mounts_fsx=False, imex_members="hyperpod-api", pyxis_loadable=False,
            image_gpu_stack="HyperPod's AMI for EKS carries it (bootstrap/profiles/hyperpod-eks-al2023.yaml) and "
                            "fmcluster installs none over that image: boot the AMI HyperPod selects for the cluster",
            operating_systems=("al2023",),
            boot_limit=Limit(
                None, "HyperPod lifecycle script limit", "unconfirmed: no public source states how long HyperPod waits "
                "for OnCreate before it fails the node", unconfirmed=True)),
)}
