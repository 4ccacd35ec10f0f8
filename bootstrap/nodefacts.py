"""What a node knows of its file system, its instance type and the bootstrap's knobs: the parts of a
:class:`fmcluster.bootstrap.context.BootstrapContext` that are plain data (pure, no Jinja)."""

from __future__ import annotations

from pydantic import Field, model_validator

from fmcluster.bootstrap.versions import Arch, _Frozen
from fmcluster.flavours import NODE_HEALTH_INTERVAL_S
from fmcluster.plan.slurm_teams import SlurmAssociation, SlurmTeam  # noqa: F401 (the contexts' field types)
from fmcluster.plan import GroupPlan


class FsxMount(_Frozen):
    """The mount contract of an FSx for Lustre file system (see :class:`fmcluster.contracts.MountContract`).

    ``file_system_id``, ``dns_name`` and ``mount_name`` may be left out when the file system is
    created in the same deployment (CloudFormation knows them only then): the entry script
    then exports them as ``FMC_FSX_ID``, ``FMC_FSX_DNS`` and ``FMC_FSX_MOUNT_NAME`` from the
    launch template's user data (see :func:`entry_script`'s ``boot_env``).
    """

    file_system_id: str | None = Field(default=None, pattern=r"^fs-[0-9a-f]{8,17}$", description="The file system ID, `fs-...`.")
    dns_name: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9.-]{2,252}$", description="DNS name of the file system.")
    mount_name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_]{1,32}$", description="The Lustre mount name (e.g. `abcdefgh`).")
    mount_path: str = Field(default="/fsx", pattern=r"^/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$", description="Where to mount it.")
    efa_enabled: bool = Field(default=False, description="The file system was created with EfaEnabled: set up LNet over EFA.")
    efa_lnet_interfaces: int | None = Field(
        default=None,
        ge=1,
        le=32,
        description="How many EFA devices LNet uses for FSx traffic, spread evenly (first and last included). "
        "None: the FSx guide's default for the instance type (catalog: fsx_efa_client_interfaces).",
    )

    @model_validator(mode="after")
    def _all_or_none(self) -> FsxMount:
        given = [v is not None for v in (self.file_system_id, self.dns_name, self.mount_name)]
        if any(given) and not all(given):
            raise ValueError("give all of file_system_id, dns_name and mount_name, or none (then they come at boot)")
        return self

    @property
    def at_boot(self) -> bool:
        """The identity comes from the entry script's environment, not from the bundle."""
        return self.file_system_id is None


FSX_BOOT_ENV = ("FMC_FSX_ID", "FMC_FSX_DNS", "FMC_FSX_MOUNT_NAME")
"""Environment the entry script exports when :attr:`FsxMount.at_boot`."""


class InstanceFacts(_Frozen):
    """What the scripts need to know about the node's instance type (from its group's plan)."""

    instance_type: str
    gpu_model: str
    gpus: int
    efa_devices: int = Field(description="EFA devices the launch template attaches (all the instance has).")
    nvswitch: bool
    needs_imex: bool
    needs_nvlsm: bool = Field(default=False, description="NVLink Subnet Manager beside Fabric Manager (catalog).")
    local_nvme_drives: int | None = Field(description="Instance-store NVMe drives; None = unconfirmed, found at boot.")
    fsx_efa_client_interfaces: int = Field(description="EFA devices LNet uses for an EFA-enabled FSx (the FSx guide's figure).")
    architecture: Arch

    @classmethod
    def from_plan(cls, group: GroupPlan) -> InstanceFacts:
        return cls(
            instance_type=group.instance_type,
            gpu_model=group.gpu_model,
            gpus=group.gpus // group.count,
            efa_devices=group.efa_interfaces,
            nvswitch=group.nvswitch,
            needs_imex=group.needs_imex,
            needs_nvlsm=group.needs_nvlsm,
            local_nvme_drives=group.local_nvme_drives,
            fsx_efa_client_interfaces=group.fsx_efa_client_interfaces,
            architecture=group.kernel_arch,
        )

    @property
    def gpu_model_tokens(self) -> list[str]:
        """Words that must all appear in `nvidia-smi`'s GPU name (e.g. "A100 40GB")."""
        return self.gpu_model.split()


class Options(_Frozen):
    """Knobs with defaults; the config may expose some of them later."""

    containers: bool = Field(description="Install enroot (+ pyxis where Slurm runs). Default: on for Slurm flavours.")
    exporters: bool = Field(default=True, description="Install node_exporter, dcgm-exporter and the EFA counters.")
    deep_health_check: bool = Field(default=False, description="Run `dcgmi diag -r 2` in the boot health check "
                                    "(health.deep_dcgm_diagnostic: about two minutes, DEEP_HEALTH_S).")
    health_check_interval_s: int = Field(default=NODE_HEALTH_INTERVAL_S, ge=60, le=3600,
                                         description="How often the periodic node health check runs on a Slurm GPU "
                                                     "node (HealthCheckInterval, or the timer's period).")
    min_root_free_gb: int = Field(default=20, ge=1, description="Free space the root file system needs.")
    pkg_lock_timeout_s: int = Field(default=300, ge=10, description="How long one boot may wait, in all, for another "
                                    "apt/dnf to release its locks (every package-manager call draws on it).")
    retry_attempts: int = Field(default=5, ge=1, le=20, description="Attempts per download or package-manager call.")
    retry_base_delay_s: int = Field(default=2, ge=0, le=60, description="First retry delay; doubles each time.")
    connect_timeout_s: int = Field(default=20, ge=1, le=120, description="curl --connect-timeout of every download.")
    download_timeout_s: int = Field(default=300, ge=10, le=1800,
                                    description="curl --max-time of one attempt at a tarball or installer.")
    key_download_timeout_s: int = Field(default=30, ge=5, le=300,
                                        description="curl --max-time of one attempt at a signing key or signature.")
    scratch_path: str = Field(default="/scratch", pattern=r"^/[A-Za-z0-9._/-]+$", description="RAID 0 of the local NVMe.")
    slurm_prefix: str | None = Field(default=None, description="Where Slurm lives (pyxis builds against it).")
    dlami_nvme_wait_s: int = Field(
        default=120, ge=0, le=600,
        description="How long the scratch step waits for the DLAMI's dlami-nvme.service to finish with the instance "
                    "store (AWS's HyperPod lifecycle script: 120 s).")
    scratch: bool = Field(default=True, description="Assemble the instance-store NVMe drives (storage.scratch.enabled).")
    imex_prolog: bool = Field(default=False, description="ParallelCluster head node: install the per-job IMEX prolog "
                                                         "(a queue has IMEX instances).")
    slurmdbd_wait_s: int = Field(default=600, ge=1, description="How long the slurm-policy step waits for slurmdbd "
                                                                "to answer sacctmgr before it fails.")
    slurmctld_wait_s: int = Field(
        default=60, ge=1, le=600,
        description="How long fmcluster-partition-qos waits for slurmctld to answer `scontrol ping`; it runs as "
                    "slurmctld.service's ExecStartPost, bounded by partition_qos_hook_s.")
    slurm_teams_hook_s: int = Field(
        default=60, ge=10, le=600,
        description="How long fmcluster-slurm-teams may run as slurmctld.service's ExecStartPost (timeout(1)): one "
                    "try at the teams; slurmctld's start timeout is raised by it.")

    @property
    def hook_kill_after_s(self) -> int:
        """timeout(1)'s ``--kill-after`` of slurmctld's ExecStartPost hooks: SIGKILL this long after the SIGTERM; each
        hook's share of slurmctld's start timeout counts it."""
        return 5

    @property
    def partition_qos_hook_s(self) -> int:
        """How long fmcluster-partition-qos may run as slurmctld.service's ExecStartPost (timeout(1)): its wait for
        slurmctld, then its scontrol and strigger calls (30 s); slurmctld's start timeout is raised by it."""
        return self.slurmctld_wait_s + 30
