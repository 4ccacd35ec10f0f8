"""The instance catalog: the one place that states what each accelerated instance type has.

Every figure comes from ``shared/FACTS.md`` section 1 (seed tables, moto 5.2.5's
DescribeInstanceTypes data, the AWS page "Maximize network bandwidth on accelerated
instance types", NVIDIA's A100 datasheet). A figure FACTS.md marks **unconfirmed** is
``None`` here: code that needs it must say it is unknown (or read it at preflight from
``DescribeInstanceTypes``), never guess.

Nothing else in fmcluster repeats these numbers; derive from this module instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from fmcluster.facts import Architecture


@dataclass(frozen=True)
class UltraServer:
    """An UltraServer offering: several instances joined into one NVLink domain."""

    name: str
    instances: int


@dataclass(frozen=True)
class NcclReference:
    """A measured nccl-tests figure someone published for an instance type, with where it comes from."""

    test: str
    """The nccl-tests binary, e.g. ``all_reduce_perf``."""
    nodes: int
    """How many instances ran it (all their GPUs, one rank per GPU)."""
    size_bytes: int
    busbw_gb_s: float
    """Bus bandwidth in GB/s (10^9 bytes per second, as nccl-tests prints it)."""
    source: str


AWSOME_NCCL_README = ("awsome-distributed-training micro-benchmarks/nccl-tests/README.md "
                      "(2 x p5.48xlarge, all_reduce_perf -b 8 -e 16G -f 2 -g 1; FACTS.md section 7)")


@dataclass(frozen=True)
class InstanceType:
    """One accelerated EC2 instance type. ``None`` means unconfirmed (FACTS.md)."""

    name: str
    gpu_model: str
    gpus: int
    gpu_memory_gb: float | None
    """HBM per GPU, in GB."""
    instance_gpu_memory_gb: float | None
    """HBM of the whole instance where FACTS.md gives it directly (otherwise gpus x per GPU)."""
    bf16_dense_pflops_per_gpu: float | None
    fp8_dense_pflops_per_gpu: float | None
    fp4_dense_pflops_per_gpu: float | None
    hbm_bandwidth_tbps_per_gpu: float | None
    """HBM bandwidth per GPU in TB/s."""
    nvlink_generation: int | None
    nvlink_aggregate_tbps: float | None
    nvlink_note: str | None
    vcpus: int | None
    memory_gib: int | None
    local_nvme_drives: int | None
    local_nvme_drive_gb: int | None
    network_cards: int
    max_efa_interfaces: int
    efa_generation: int | None
    """The EFA generation; None where FACTS.md names none (nothing in fmcluster derives from it)."""
    efa_aggregate_gbps: int
    card0_carries_efa: bool
    max_enis_per_card: tuple[int | None, ...]
    """Maximum network interfaces on each card, indexed by card; ``None`` if unconfirmed."""
    architecture: Architecture
    ipv4_per_interface: int | None
    """Private IPv4 addresses one network interface takes (EC2 DescribeInstanceTypes ``Ipv4AddressesPerInterface``,
    as moto's bundled copy has it: tests/test_catalog.py compares); None where no source gives it (p6e-gb200)."""
    ultraservers: tuple[UltraServer, ...] = ()
    nvswitch: bool = True
    """NVSwitch systems need NVIDIA Fabric Manager matching the driver."""
    needs_imex: bool = False
    """GB200 NVL domains need the ``nvidia-imex`` service."""
    needs_nvlsm: bool = False
    """HGX systems with fourth-generation NVSwitches (B200, B300) need the NVLink Subnet Manager ``nvlsm`` beside Fabric
    Manager (Fabric Manager user guide, release 2.3, "Systems Using Fourth Generation NVSwitches"; FACTS.md section 4)."""
    instance_local_nvme_gb: float | None = None
    """Instance-store NVMe of the whole instance, in GB, where FACTS.md gives only the total (not the drives)."""
    nvlinks_per_gpu: int | None = None
    """NVLinks each GPU has up (``dcgmi diag -p pcie.gpu_nvlinks_expected_up``, FACTS.md section 7); None = no source."""
    nccl_references: tuple[NcclReference, ...] = ()
    """Published nccl-tests figures (FACTS.md section 7); none = the acceptance report says "no reference"."""
    fsx_efa_client_interfaces_listed: int | None = None
    """EFA interfaces an FSx for Lustre client configures for LNet where the FSx for Lustre User Guide lists the
    type ("Configuring EFA clients", step 4, table "Default Number of EFA Interfaces"); see
    :attr:`fsx_efa_client_interfaces`. Not derivable from ``max_efa_interfaces``: p5 has 32 and gets 8."""

    @property
    def fsx_efa_client_interfaces(self) -> int:
        """The FSx guide's default EFA interfaces for a Lustre client: its table, else 2 with several network
        cards and 1 with one. Each counts against a file system's EFA connections (facts.FSX_EFA_CONNECTIONS)."""
        if self.fsx_efa_client_interfaces_listed is not None:
            return self.fsx_efa_client_interfaces_listed
        return 2 if self.network_cards > 1 else 1

    @property
    def gpu_memory_total_gb(self) -> float | None:
        """HBM of one instance, in GB."""
        if self.instance_gpu_memory_gb is not None:
            return self.instance_gpu_memory_gb
        if self.gpu_memory_gb is None:
            return None
        return self.gpus * self.gpu_memory_gb

    @property
    def local_nvme_total_gb(self) -> float | None:
        """Instance-store NVMe of one instance, in GB; None when unconfirmed."""
        if self.local_nvme_drives is not None and self.local_nvme_drive_gb is not None:
            return self.local_nvme_drives * self.local_nvme_drive_gb
        return self.instance_local_nvme_gb

    @property
    def efa_gbps_per_interface(self) -> float:
        """The share of the EFA aggregate that one EFA interface carries."""
        return self.efa_aggregate_gbps / self.max_efa_interfaces

    @property
    def bf16_dense_pflops(self) -> float | None:
        """Dense BF16 peak of one instance, in PFLOPS."""
        if self.bf16_dense_pflops_per_gpu is None:
            return None
        return self.gpus * self.bf16_dense_pflops_per_gpu


def _same_per_card(cards: int, enis: int) -> tuple[int, ...]:
    return (enis,) * cards


CATALOG: dict[str, InstanceType] = {
    t.name: t
    for t in (
        InstanceType(
            name="p4d.24xlarge",
            gpu_model="A100 40GB",
            gpus=8,
            gpu_memory_gb=40,
            instance_gpu_memory_gb=None,
            bf16_dense_pflops_per_gpu=0.312,
            fp8_dense_pflops_per_gpu=None,  # A100 has no FP8 tensor cores
            fp4_dense_pflops_per_gpu=None,
            hbm_bandwidth_tbps_per_gpu=1.555,
            nvlink_generation=3,
            nvlink_aggregate_tbps=4.8,
            nvlink_note=None,
            vcpus=96,
            memory_gib=1152,
            local_nvme_drives=8,
            local_nvme_drive_gb=1000,
            network_cards=4,
            max_efa_interfaces=4,
            efa_generation=1,
            efa_aggregate_gbps=400,
            card0_carries_efa=True,
            max_enis_per_card=_same_per_card(4, 15),
            ipv4_per_interface=50,
            architecture="x86_64",
        ),
        InstanceType(
            name="p5.48xlarge",
            gpu_model="H100",
            gpus=8,
            gpu_memory_gb=80,
            instance_gpu_memory_gb=None,
            bf16_dense_pflops_per_gpu=0.9895,
            fp8_dense_pflops_per_gpu=1.979,
            fp4_dense_pflops_per_gpu=None,
            hbm_bandwidth_tbps_per_gpu=3.35,
            nvlink_generation=4,
            nvlink_aggregate_tbps=7.2,
            nvlink_note=None,
            vcpus=192,
            memory_gib=2048,
            local_nvme_drives=8,
            local_nvme_drive_gb=3840,
            network_cards=32,
            max_efa_interfaces=32,
            efa_generation=2,
            efa_aggregate_gbps=3200,
            card0_carries_efa=True,
            max_enis_per_card=_same_per_card(32, 2),
            ipv4_per_interface=50,
            architecture="x86_64",
            nvlinks_per_gpu=18,
            nccl_references=(
                NcclReference("all_reduce_perf", 2, 16 * 2**30, 487.0, AWSOME_NCCL_README),
                NcclReference("all_reduce_perf", 2, 512 * 2**20, 393.0, AWSOME_NCCL_README),
            ),
            fsx_efa_client_interfaces_listed=8,
        ),
        InstanceType(
            # The seed's small entry point: one H100 of a p5 (FACTS.md section 1, "p5.4xlarge" paragraph;
            # moto 5.2.5's DescribeInstanceTypes copy, which tests/test_catalog.py compares against).
            name="p5.4xlarge",
            gpu_model="H100",
            gpus=1,
            gpu_memory_gb=80,
            instance_gpu_memory_gb=None,
            # Per-GPU figures are the H100's, as for p5.48xlarge (FACTS.md gives them per GPU, not per type).
            bf16_dense_pflops_per_gpu=0.9895,
            fp8_dense_pflops_per_gpu=1.979,
            fp4_dense_pflops_per_gpu=None,
            hbm_bandwidth_tbps_per_gpu=3.35,
            # One GPU: no NVLink peer and no NVSwitch in the instance, so no Fabric Manager (it exits with
            # NV_WARN_NOTHING_TO_DO where no NVSwitch is visible: NVIDIA/gpu-operator issue #610) and no
            # expected-NVLinks figure for dcgmi.
            nvlink_generation=None,
            nvlink_aggregate_tbps=None,
            nvlink_note="none: one GPU",
            vcpus=16,
            memory_gib=256,
            local_nvme_drives=1,
            local_nvme_drive_gb=3800,
            network_cards=1,
            max_efa_interfaces=1,
            efa_generation=None,  # FACTS.md names none for p5.4xlarge
            efa_aggregate_gbps=100,  # the one card's 100 Gbps (12.5 GB/s), shared with its ENA traffic
            card0_carries_efa=True,  # MaximumEfaInterfaces (1) == MaximumNetworkCards (1)
            max_enis_per_card=_same_per_card(1, 4),
            ipv4_per_interface=30,
            architecture="x86_64",
            nvswitch=False,
            # Not in the FSx guide's table: the guide's default for one network card applies (1).
            fsx_efa_client_interfaces_listed=None,
        ),
        InstanceType(
            name="p5e.48xlarge",
            gpu_model="H200",
            gpus=8,
            gpu_memory_gb=141,
            instance_gpu_memory_gb=None,
            bf16_dense_pflops_per_gpu=0.9895,
            fp8_dense_pflops_per_gpu=1.979,
            fp4_dense_pflops_per_gpu=None,
            hbm_bandwidth_tbps_per_gpu=4.8,
            nvlink_generation=4,
            nvlink_aggregate_tbps=7.2,
            nvlink_note=None,
            vcpus=192,
            memory_gib=2048,
            local_nvme_drives=8,
            local_nvme_drive_gb=3840,
            network_cards=32,
            max_efa_interfaces=32,
            efa_generation=2,
            efa_aggregate_gbps=3200,
            card0_carries_efa=True,
            max_enis_per_card=_same_per_card(32, 2),
            ipv4_per_interface=50,
            architecture="x86_64",
            fsx_efa_client_interfaces_listed=8,
        ),
        InstanceType(
            name="p5en.48xlarge",
            gpu_model="H200",
            gpus=8,
            gpu_memory_gb=141,
            instance_gpu_memory_gb=None,
            bf16_dense_pflops_per_gpu=0.9895,
            fp8_dense_pflops_per_gpu=1.979,
            fp4_dense_pflops_per_gpu=None,
            hbm_bandwidth_tbps_per_gpu=4.8,
            nvlink_generation=4,
            nvlink_aggregate_tbps=7.2,
            nvlink_note=None,
            vcpus=192,
            memory_gib=2048,
            local_nvme_drives=8,
            local_nvme_drive_gb=3840,
            network_cards=16,
            max_efa_interfaces=16,
            efa_generation=3,
            efa_aggregate_gbps=3200,
            card0_carries_efa=True,
            max_enis_per_card=_same_per_card(16, 4),
            ipv4_per_interface=50,
            architecture="x86_64",
            nvlinks_per_gpu=18,
            fsx_efa_client_interfaces_listed=8,
        ),
        InstanceType(
            name="p6-b200.48xlarge",
            gpu_model="B200",
            gpus=8,
            gpu_memory_gb=180,
            instance_gpu_memory_gb=None,
            bf16_dense_pflops_per_gpu=2.25,
            fp8_dense_pflops_per_gpu=4.5,
            fp4_dense_pflops_per_gpu=9,
            hbm_bandwidth_tbps_per_gpu=8,
            nvlink_generation=5,
            nvlink_aggregate_tbps=14.4,
            nvlink_note=None,
            vcpus=192,
            memory_gib=2048,
            local_nvme_drives=8,
            local_nvme_drive_gb=3840,
            network_cards=8,
            max_efa_interfaces=8,
            efa_generation=4,
            efa_aggregate_gbps=3200,
            card0_carries_efa=True,
            max_enis_per_card=_same_per_card(8, 4),
            ipv4_per_interface=50,
            architecture="x86_64",
            nvlinks_per_gpu=18,
            fsx_efa_client_interfaces_listed=8,
            needs_nvlsm=True,
        ),
        InstanceType(
            name="p6-b300.48xlarge",
            gpu_model="B300",
            gpus=8,
            gpu_memory_gb=288,
            # The seed gives 2,100 GB for the instance; 8 x 288 GB = 2,304 GB (~2,146 GiB).
            # We derive from the per-GPU figure rather than carry two that disagree.
            instance_gpu_memory_gb=None,
            bf16_dense_pflops_per_gpu=2.25,
            fp8_dense_pflops_per_gpu=4.5,
            fp4_dense_pflops_per_gpu=13.5,
            hbm_bandwidth_tbps_per_gpu=8,
            nvlink_generation=5,
            nvlink_aggregate_tbps=14.4,
            nvlink_note=None,
            vcpus=192,
            memory_gib=4096,
            local_nvme_drives=8,
            local_nvme_drive_gb=3840,
            network_cards=17,
            max_efa_interfaces=16,
            efa_generation=4,
            efa_aggregate_gbps=6400,
            card0_carries_efa=False,
            # Card 0 is ENA-only; FACTS.md gives 4 interfaces on cards 1-16 only.
            max_enis_per_card=(None,) + _same_per_card(16, 4),
            ipv4_per_interface=50,
            architecture="x86_64",
            fsx_efa_client_interfaces_listed=16,
            needs_nvlsm=True,
        ),
        InstanceType(
            name="p6e-gb200.36xlarge",
            gpu_model="GB200",
            gpus=4,
            # FACTS.md gives both: 186 GB per GPU, 740 GB per instance (the instance figure is used for totals).
            gpu_memory_gb=186,
            instance_gpu_memory_gb=740,
            # NVIDIA's GB200 NVL72 datasheet: 360 / 720 PF BF16 / FP8 with sparsity for 72 GPUs, halved for dense.
            bf16_dense_pflops_per_gpu=2.5,
            fp8_dense_pflops_per_gpu=5,
            fp4_dense_pflops_per_gpu=10,
            hbm_bandwidth_tbps_per_gpu=8,  # 576 TB/s per NVL72 / 72
            nvlink_generation=None,
            nvlink_aggregate_tbps=None,
            nvlink_note="NVL72 domain across the UltraServer (1.8 TB/s per GPU)",
            vcpus=None,  # unconfirmed (FACTS.md): read DescribeInstanceTypes at preflight
            memory_gib=None,  # unconfirmed
            local_nvme_drives=None,  # FACTS.md gives the total only; the bootstrap finds the drives at boot
            local_nvme_drive_gb=None,
            network_cards=17,
            max_efa_interfaces=16,
            efa_generation=4,
            efa_aggregate_gbps=1600,
            card0_carries_efa=False,
            # Odd cards take 1 interface, even cards (card 0 included) take 2.
            max_enis_per_card=tuple(2 if card % 2 == 0 else 1 for card in range(17)),
            ipv4_per_interface=None,
            architecture="arm64",
            ultraservers=(
                UltraServer("u-p6e-gb200x36", 9),
                UltraServer("u-p6e-gb200x72", 18),
            ),
            needs_imex=True,
            nvlinks_per_gpu=18,
            instance_local_nvme_gb=22_500,  # 405 TB per u-p6e-gb200x72 / 18 instances
            fsx_efa_client_interfaces_listed=8,
        ),
    )
}


def get(name: str) -> InstanceType:
    """The catalog entry for ``name``; ``KeyError`` when it is not in the catalog."""
    return CATALOG[name]


HYPERPOD_PREFIX = "ml."
"""SageMaker names an EC2 type with this prefix (``ml.p5.48xlarge``)."""

HYPERPOD_TYPES: frozenset[str] = frozenset({
    "p4d.24xlarge", "p5.4xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge",
    "p6-b300.48xlarge", "p6e-gb200.36xlarge",
})
"""Catalog types SageMaker HyperPod offers: those whose ``ml.`` name is in boto3's ``ClusterInstanceType``
enum (botocore's sagemaker service model, boto3 1.44; FACTS.md section 5). HyperPod has no ``ml.u-*`` type:
GB200 UltraServers come as p6e-gb200.36xlarge instances through a training plan."""


def hyperpod_type(name: str) -> str:
    """The SageMaker name of a catalog type (``p5.48xlarge`` -> ``ml.p5.48xlarge``)."""
    return HYPERPOD_PREFIX + name
