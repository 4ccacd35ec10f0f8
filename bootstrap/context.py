"""The bootstrap context: what one node role of one compute group runs, as typed data.

Built from the plan (:class:`fmcluster.plan.ClusterPlan`), which took every instance fact
from the catalog once. Pure (no Jinja): the renderer (:mod:`fmcluster.bootstrap.render`)
turns a context into scripts, and :mod:`fmcluster.checks` reads which pins a node needs.
"""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from fmcluster.bootstrap.versions import (
    Arch,
    BootstrapError,
    RepoKey,
    ResolvedArtifact,
    Versions,
    _Frozen,
    default_versions,
    resolve,
)
from pydantic import Field, field_validator, model_validator

from fmcluster.flavours import FLAVOURS as FLAVOUR_TRAITS, Flavour as FlavourTraits, Limit
from fmcluster.bootstrap.nodefacts import FSX_BOOT_ENV, FsxMount, InstanceFacts, Options, SlurmTeam
from fmcluster.orchestrators import ORCHESTRATORS
from fmcluster.facts import OPERATING_SYSTEMS as _OS_FACTS
from fmcluster.facts import OperatingSystem
from fmcluster.plan import ClusterPlan

Role = Literal["head", "login", "compute"]
Flavour = Literal[tuple(FLAVOUR_TRAITS)]  # type: ignore[valid-type]

ROLES: tuple[Role, ...] = get_args(Role)
FLAVOURS: tuple[str, ...] = tuple(FLAVOUR_TRAITS)
ARCHES: tuple[Arch, ...] = get_args(Arch)
OPERATING_SYSTEMS: tuple[str, ...] = tuple(_OS_FACTS)

LUSTRE_NETWORK_UNIT: dict[str, str] = {
    # Ubuntu 22.04/24.04: systemd-networkd (netplan); ParallelCluster restarts systemd-resolved there, and no
    # network.service exists (aws/aws-parallelcluster-cookbook@f75d84c3 cookbooks/aws-parallelcluster-environment/
    # resources/network_service/network_service_ubuntu20+.rb:31-33).
    "ubuntu": "network-online.target",
    # AL2023: systemd-networkd (the same folder, network_service_alinux2023.rb:22-24); network.service was AL2's
    # (network_service_alinux2.rb:20-22).
    "al2023": "network-online.target",
}
"""The unit an FSx for Lustre fstab line requires, per OS family. The FSx guides' line requires network.service,
which neither OS has: systemd then never starts the mount (`Unit network.service not found`), and /fsx does not come
back after a reboot. ParallelCluster's own Lustre line (cookbook resources/lustre/partial/_mount_unmount.rb:123) has
``_netdev`` and ``x-systemd.automount`` without it."""

ORCHESTRATOR_FLAVOUR: dict[str, Flavour] = {o.name: o.flavour for o in ORCHESTRATORS.values()}
"""orchestrator.type -> the bootstrap flavour its nodes run."""


def bundle_mounts_fsx(flavour: Flavour) -> bool:
    """Whether the bundle mounts FSx for Lustre itself (else the orchestrator does; :class:`Flavour`)."""
    return FLAVOUR_TRAITS[flavour].mounts_fsx


class BootstrapContext(_Frozen):
    """Everything a bundle is rendered from. Templates see it as ``ctx``."""

    project: str
    group: str | None
    role: Role
    flavour: Flavour
    os: OperatingSystem
    arch: Arch
    instance: InstanceFacts | None = Field(description="The GPU instance; None for head/login nodes.")
    fsx: FsxMount | None = None
    bundle_s3_uri: str | None = Field(
        default=None,
        description="Where the entry script downloads the bundle (s3://bucket/key.zip or s3://bucket/prefix/). "
        "None: the bundle sits beside the entry script (HyperPod lifecycle scripts).",
    )
    options: Options
    versions: Versions
    qos_partitions: tuple[str, ...] = Field(
        default=(),
        description="Partitions that get a QoS named after them (Slurm accounting's qos_per_partition), on the node "
                    "that runs slurmctld (see :attr:`slurm_policy`). Empty: no slurm-policy step.")

    slurm_teams: tuple[SlurmTeam, ...] = Field(
        default=(), description="The project's teams as Slurm accounts, QoS and associations, on the node that runs "
                                "slurmctld (:mod:`fmcluster.generate.slurmteams`). Empty: no slurm-teams step.")

    data_volume: str | None = Field(
        default=None, description="Where the orchestrator mounts the node's secondary volume, to which containerd's "
                                  "and kubelet's data move (HyperPod EKS: /opt/sagemaker, the instance group's extra "
                                  "EBS volume). None: no such volume, or nothing moves. The kubelet-volume step.")

    @field_validator("qos_partitions")
    @classmethod
    def _partition_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # Our restriction, not Slurm's: names that need no quoting in slurm.conf or sacctmgr and hold no '='/','
        # (ParallelCluster queue names and HyperPod partition names fit it; the templates shell-quote them anyway).
        for name in value:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name):
                raise ValueError(f"{name!r} is not a partition name a QoS can be named after")
        if len(set(value)) != len(value):
            raise ValueError(f"partitions listed more than once: {', '.join(value)}")
        return value

    @field_validator("bundle_s3_uri")
    @classmethod
    def _s3(cls, value: str | None) -> str | None:
        # A CDK token (``${Token[...]}``) stands for an s3:// URL resolved at deploy time.
        if value is not None and not (value.startswith("s3://") or "${Token[" in value):
            raise ValueError(f"{value!r} is not an s3:// URI")
        if value is not None and "'" in value:
            raise ValueError("the bundle URI may not contain a single quote")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> BootstrapContext:
        if self.role == "compute" and self.instance is None:
            raise ValueError("a compute node needs its instance facts")
        if self.instance is not None and self.instance.architecture != self.arch:
            raise ValueError(f"{self.instance.instance_type} is {self.instance.architecture}, not {self.arch}")
        return self

    # Derived values the templates use.

    @property
    def os_family(self) -> Literal["ubuntu", "al2023"]:
        return _OS_FACTS[self.os].family

    @property
    def os_release_id(self) -> str:
        return _OS_FACTS[self.os].release_id

    @property
    def os_version_id(self) -> str:
        return _OS_FACTS[self.os].version_id

    @property
    def ubuntu_codename(self) -> str:
        return _OS_FACTS[self.os].codename

    @property
    def lustre_network_unit(self) -> str:
        return LUSTRE_NETWORK_UNIT[self.os_family]

    @property
    def lustre_fstab_options(self) -> str:
        """The FSx for Lustre fstab options: ``_netdev`` (a network file system: after the network, before
        remote-fs.target; systemd.mount(5)), mounted on first access, requiring :data:`LUSTRE_NETWORK_UNIT`."""
        return f"defaults,relatime,flock,_netdev,x-systemd.automount,x-systemd.requires={self.lustre_network_unit}"

    @property
    def gpu(self) -> bool:
        return self.instance is not None

    @property
    def traits(self) -> FlavourTraits:
        """What this node's flavour does differently (the templates read these, never the flavour's name)."""
        return FLAVOUR_TRAITS[self.flavour]

    @property
    def boot_limit(self) -> Limit:
        """How long the orchestrator waits for this node: the head node's own limit where its flavour has one
        (ParallelCluster's head node: its CloudFormation wait condition, not the compute nodes' ResumeTimeout)."""
        t = self.traits
        return t.head_boot_limit if self.role == "head" and t.head_boot_limit is not None else t.boot_limit

    @property
    def slurm(self) -> bool:
        return self.options.slurm_prefix is not None

    @property
    def node_health(self) -> bool:
        """A Slurm GPU node checked while jobs run (trait ``periodic_health``): ``files/fmcluster-node-health`` drains
        it (or hands it to HyperPod's recovery) when a GPU or EFA device degrades or its bootstrap failed."""
        return self.gpu and self.slurm and self.traits.periodic_health is not None

    @property
    def slurm_metrics(self) -> bool:
        """This node collects Slurm's metrics (trait ``slurm_metrics_role``: the slurmctld node, or PCS's login node):
        its exporters step runs our Slurm metrics script (``files/fmcluster-slurm-metrics``) for node_exporter's
        textfile collector."""
        return self.options.exporters and self.slurm and self.traits.slurm_metrics_role == self.role

    @property
    def slurm_policy(self) -> bool:
        """This node runs slurmctld (trait ``slurmctld_role``) and partitions get a QoS each: the slurm-policy step."""
        return bool(self.qos_partitions) and self.slurm and self.traits.slurmctld_role == self.role

    @property
    def slurm_teams_step(self) -> bool:
        """This node runs slurmctld and the project has teams Slurm enforces: the slurm-teams step."""
        return bool(self.slurm_teams) and self.slurm and self.traits.slurmctld_role == self.role

    @property
    def ofi_nccl_plugin_files(self) -> list[str]:
        """Where the aws-ofi-nccl plugin may be (every EFA installer layout); the node takes the first that exists."""
        return [f.format(arch=self.arch) for f in self.versions.aws_ofi_nccl.plugin_files]

    @property
    def lnet_over_efa(self) -> bool:
        """LNet over EFA for an EFA-enabled FSx; only GPU nodes have EFA (others use TCP)."""
        return self.fsx is not None and self.fsx.efa_enabled and self.gpu

    @property
    def lnet_efa_interfaces(self) -> int | None:
        """EFA devices LNet uses on this node: the project's figure, else the FSx guide's for its type."""
        if not self.lnet_over_efa or self.fsx is None or self.instance is None:
            return None
        if self.fsx.efa_lnet_interfaces is not None:
            return self.fsx.efa_lnet_interfaces
        return self.instance.fsx_efa_client_interfaces

    @property
    def writes_plugstack(self) -> bool:
        """Where Slurm's configuration is shared from the head node (ParallelCluster's /opt/slurm), only the head
        writes it; where slurmd cannot load pyxis (:attr:`Flavour.pyxis_loadable`), no node does."""
        return self.slurm and self.traits.pyxis_loadable and (not self.traits.slurm_config_on_head_only
                                                               or self.role == "head")

    @property
    def nvidia_repo_url(self) -> str:
        return self.versions.nvidia_repo.repo_url(self.os, self.arch)

    @property
    def nvidia_repo_key(self) -> RepoKey:
        return self.versions.nvidia_repo.keys[self.os_family]

    @property
    def imex_members_at_boot(self) -> bool:
        """A GB200 node whose IMEX members this bundle sets (at boot, refreshed on an idle node). Not under
        ParallelCluster: there the members are the job's nodes, written per job by the prolog the head node installs."""
        i = self.instance
        return i is not None and i.needs_imex and self.traits.imex_members_at_boot

    @property
    def needs_nvlsm(self) -> bool:
        """The instance type needs the NVLink Subnet Manager beside Fabric Manager (the catalog's ``needs_nvlsm``: HGX
        B200/B300, fourth-generation NVSwitches; FACTS.md section 4), read as the catalog states it (the catalog's test
        holds that only NVSwitch types without IMEX carry it)."""
        return self.instance is not None and self.instance.needs_nvlsm

    def package_entries(self, component: str) -> list[str]:
        """Like :meth:`packages`, with ``{branch}`` left for the node to fill from the version it installs."""
        return list(getattr(self.versions, component).packages[self.os_family])

    def packages(self, component: str) -> list[str]:
        """NVIDIA repository package names of ``component`` (nvidia_driver, fabric_manager, ...) on this OS."""
        return getattr(self.versions, component).names(self.os_family)

    def artifacts(self) -> dict[str, ResolvedArtifact]:
        v = self.versions
        pairs = {
            "efa_installer": (v.efa_installer.tarball, "efa_installer.tarball", v.efa_installer.version),
            "gdrcopy": (v.gdrcopy.source, "gdrcopy.source", v.gdrcopy.version),
            "node_exporter": (v.node_exporter.tarball, "node_exporter.tarball", v.node_exporter.version),
            "prometheus": (v.prometheus.tarball, "prometheus.tarball", v.prometheus.version),
            "enroot_deb": (v.enroot.deb, "enroot.deb", v.enroot.version),
            "enroot_deb_caps": (v.enroot.deb_caps, "enroot.deb_caps", v.enroot.version),
            "enroot_rpm": (v.enroot.rpm, "enroot.rpm", v.enroot.version),
            "enroot_rpm_caps": (v.enroot.rpm_caps, "enroot.rpm_caps", v.enroot.version),
            "pyxis": (v.pyxis.source, "pyxis.source", v.pyxis.version),
        }
        return {name: resolve(art, key, version, self.arch) for name, (art, key, version) in pairs.items()}

    def steps(self) -> list[Step]:
        """The steps this node runs, in order."""
        return [step for step in STEPS if step.applies(self)]


class Step(_Frozen):
    """One step: a template rendered to ``steps/<name>.sh``."""

    name: str
    template: str
    description: str
    gpu_only: bool = False
    needs_fsx: bool = False
    needs_containers: bool = False
    needs_exporters: bool = False
    needs_scratch: bool = False
    needs_imex_prolog: bool = False
    needs_slurm_policy: bool = False
    needs_slurm_teams: bool = False
    needs_data_volume: bool = False
    needs_node_health: bool = False

    def applies(self, ctx: BootstrapContext) -> bool:
        return not (
            (self.gpu_only and not ctx.gpu)
            or (self.needs_imex_prolog and not (ctx.options.imex_prolog and ctx.role == "head"))
            or (self.needs_fsx and ctx.fsx is None)
            or (self.needs_containers and not ctx.options.containers)
            or (self.needs_exporters and not ctx.options.exporters)
            or (self.needs_scratch and not ctx.options.scratch)
            or (self.needs_slurm_policy and not ctx.slurm_policy)
            or (self.needs_slurm_teams and not ctx.slurm_teams_step)
            or (self.needs_data_volume and ctx.data_volume is None)
            or (self.needs_node_health and not ctx.node_health)
        )


STEPS: tuple[Step, ...] = (
    Step(name="10-preflight", template="preflight.sh.j2", description="OS/arch/instance checks, disk space, package lock"),
    Step(name="15-kubelet-volume", template="hyperpod_eks_kubelet_volume.sh.j2",
         description="containerd's and kubelet's data on the secondary volume, as AWS's HyperPod EKS on_create.sh "
                     "moves them", needs_data_volume=True),
    Step(name="20-nvidia", template="nvidia.sh.j2", description="NVIDIA driver + Fabric Manager or IMEX", gpu_only=True),
    Step(name="30-efa", template="efa.sh.j2", description="EFA installer (GPG-verified; bundles aws-ofi-nccl)", gpu_only=True),
    Step(name="40-gdrcopy", template="gdrcopy.sh.j2", description="GDRCopy packages and the gdrdrv module", gpu_only=True),
    Step(name="50-nccl-env", template="nccl_env.sh.j2", description="aws-ofi-nccl on the library path, memlock", gpu_only=True),
    Step(name="60-nvme", template="nvme.sh.j2", description="RAID 0 of the instance-store NVMe at the scratch path", gpu_only=True,
         needs_scratch=True),
    Step(name="70-lustre", template="lustre.sh.j2", description="Lustre client, LNet over EFA, FSx mount", needs_fsx=True),
    Step(name="80-containers", template="containers.sh.j2", description="enroot + pyxis, container storage on NVMe", needs_containers=True),
    Step(name="85-imex-prolog", template="imex_prolog_install.sh.j2",
         description="ParallelCluster head node: the per-job IMEX prolog for UltraServer queues", needs_imex_prolog=True),
    Step(name="88-slurm-policy", template="slurm_policy.sh.j2",
         description="slurmctld's node, Slurm accounting on: a QoS per partition, kept across slurmctld restarts",
         needs_slurm_policy=True),
    Step(name="89-slurm-teams", template="slurm_teams.sh.j2",
         description="slurmctld's node, teams: accounts, users and QoS caps in Slurm accounting, kept in step",
         needs_slurm_teams=True),
    Step(name="90-exporters", template="exporters.sh.j2", description="node_exporter, dcgm-exporter, EFA counters, Slurm metrics", needs_exporters=True),
    Step(name="95-node-health", template="node_health_install.sh.j2",
         description="the periodic node health check: drains a GPU node that degrades while jobs run",
         needs_node_health=True),
    Step(name="99-healthcheck", template="healthcheck.sh.j2", description="prove the node before it takes jobs"),
)


def context_for(
    cluster: ClusterPlan,
    group_name: str | None,
    role: Role,
    flavour: Flavour | None = None,
    fsx: FsxMount | None = None,
    *,
    arch: Arch | None = None,
    bundle_s3_uri: str | None = None,
    versions: Versions | None = None,
    qos_partitions: tuple[str, ...] = (),
    slurm_teams: tuple[SlurmTeam, ...] = (),
    data_volume: str | None = None,
    **options: Any,
) -> BootstrapContext:
    """Build the context for one node role of one compute group of ``cluster``.

    ``group_name`` names a compute group; it is required for ``compute`` and optional for
    ``head``/``login`` (which have no GPU; with a group they take its architecture, as
    ParallelCluster requires). ``flavour`` defaults to the project's orchestrator.
    ``options`` override :class:`Options` fields. ``qos_partitions``: see :attr:`BootstrapContext.qos_partitions`.
    """
    flavour = flavour or ORCHESTRATOR_FLAVOUR[cluster.orchestrator]
    instance: InstanceFacts | None = None
    if group_name is not None:
        groups = {g.name: g for g in cluster.groups}
        if group_name not in groups:
            raise BootstrapError(
                f"project {cluster.project!r} has no compute group {group_name!r}; groups: {', '.join(groups)}"
            )
        facts = InstanceFacts.from_plan(groups[group_name])
        if arch is not None and arch != facts.architecture:
            raise BootstrapError(f"group {group_name!r} runs {facts.instance_type}, which is {facts.architecture}, not {arch}")
        arch = facts.architecture
        if role == "compute":
            instance = facts
    elif role == "compute":
        raise BootstrapError("a compute bundle needs a compute group name")
    traits = FLAVOUR_TRAITS[flavour]
    opts = {"containers": traits.slurm and traits.pyxis_loadable, "slurm_prefix": traits.slurm_prefix,
            "scratch": cluster.scratch, "scratch_path": cluster.scratch_path,
            "deep_health_check": cluster.deep_dcgm_diagnostic} | options
    try:
        return BootstrapContext(
            project=cluster.project,
            group=group_name,
            role=role,
            flavour=flavour,
            os=cluster.os,
            arch=arch or "x86_64",
            instance=instance,
            fsx=fsx,
            bundle_s3_uri=bundle_s3_uri,
            options=Options(**opts),
            versions=versions or default_versions(),
            qos_partitions=tuple(qos_partitions),
            slurm_teams=tuple(slurm_teams),
            data_volume=data_volume,
        )
    except ValueError as exc:
        raise BootstrapError(str(exc)) from exc


# The pins a node needs (its steps' downloads): fmcluster.bootstrap.pins, re-exported for the renderer and checks.
from fmcluster.bootstrap.pins import STEP_OF_COMPONENT, needed_placeholders, optional_unpinned  # noqa: E402,F401
