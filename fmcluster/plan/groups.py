"""Compute groups: per group the EFA interface layout, addresses, GPUs and what a node is.

Everything the stacks and the bootstrap know about an instance comes from here; this is the
only stage that reads the catalog for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fmcluster import catalog
from fmcluster.config.compute import ComputeGroup
from fmcluster.facts import KERNEL_ARCH, Architecture, KernelArch

InterfaceType = Literal["interface", "efa", "efa-only"]


@dataclass(frozen=True)
class NetworkInterface:
    """One entry of a launch template's NetworkInterfaces."""

    card: int
    device: int
    type: InterfaceType

    @property
    def needs_ip(self) -> bool:
        # efa-only interfaces take no IPv4 address (AWS, 2024-10-28).
        return self.type != "efa-only"

    @property
    def carries_efa(self) -> bool:
        return self.type in ("efa", "efa-only")


def efa_layout(instance: catalog.InstanceType) -> tuple[NetworkInterface, ...]:
    """The interfaces that expose all of an instance's EFA bandwidth with one IP per node.

    ENA primary on card 0 device 0; ``efa-only`` on card 0 device 1 where card 0 carries
    EFA; ``efa-only`` on device 0 of every other card (FACTS.md section 1).
    """
    interfaces = [NetworkInterface(0, 0, "interface")]
    if instance.card0_carries_efa:
        interfaces.append(NetworkInterface(0, 1, "efa-only"))
    interfaces.extend(NetworkInterface(card, 0, "efa-only") for card in range(1, instance.network_cards))
    return tuple(interfaces)


@dataclass(frozen=True)
class GroupPlan:
    name: str
    instance_type: str
    count: int
    capacity: str
    reservation_id: str | None
    placement_group: bool
    """fmcluster creates a cluster placement group for the group."""
    interfaces: tuple[NetworkInterface, ...]
    ips_per_node: int
    gpus: int
    gpu_model: str
    bf16_pflops: float | None
    """Dense BF16 peak of the whole group; None when the catalog does not know the per-GPU figure."""
    hbm_gb: float | None
    efa_interfaces: int
    efa_gbps_exposed: float
    efa_gbps_spec: int
    architecture: Architecture
    existing_placement_group: str | None
    """The placement group a reservation was made in (the nodes launch into it), or None."""
    # What the node itself is and runs (the bootstrap and the launch template read these; `plan -o json` does not show them).
    nvswitch: bool
    """NVSwitch systems need NVIDIA Fabric Manager matching the driver."""
    needs_imex: bool
    """GB200 NVLink domains need the ``nvidia-imex`` service."""
    needs_nvlsm: bool
    """Fourth-generation NVSwitch systems need the NVLink Subnet Manager beside Fabric Manager (catalog)."""
    local_nvme_drives: int | None
    """Instance-store NVMe drives; None = unconfirmed (found at boot)."""
    fsx_efa_client_interfaces: int
    """EFA interfaces a node uses for LNet to an EFA-enabled FSx (catalog: the FSx guide's figure)."""
    ami_id: str | None
    root_volume_gib: int
    training_plan_arn: str | None = None
    """The SageMaker training plan the group's capacity comes from (HyperPod), or None."""
    spare_instances_per_ultraserver: int = 0
    """Instances per UltraServer a training plan keeps as spares (not in the group); 0 without a plan."""

    def usable_per_ultraserver(self, instances: int) -> int:
        """Instances of an UltraServer of ``instances`` that the group can use (the plan's spares held back)."""
        return instances - self.spare_instances_per_ultraserver

    def whole_ultraservers(self, wanted: str | None = None) -> list[tuple[catalog.UltraServer, int]]:
        """The UltraServer offers (``wanted`` alone, else every one, largest first) whose usable instances divide the
        count, each with its usable instances: the one test of divisibility (the check refuses a group with none,
        HyperPod's instance groups take the first)."""
        offers = catalog.get(self.instance_type).ultraservers
        candidates = [u for u in offers if u.name == wanted] if wanted else sorted(offers, key=lambda u: -u.instances)
        usable = [(u, self.usable_per_ultraserver(u.instances)) for u in candidates]
        return [(u, n) for u, n in usable if n > 0 and self.count % n == 0]

    @property
    def kernel_arch(self) -> KernelArch:
        """The architecture as the node's kernel names it (``uname -m``)."""
        return KERNEL_ARCH[self.architecture]

    @property
    def efa_fraction(self) -> float:
        """Share of the instance's EFA bandwidth that the layout exposes (1.0 = all of it)."""
        return self.efa_gbps_exposed / self.efa_gbps_spec

    @property
    def ips(self) -> int:
        return self.ips_per_node * self.count


def uses_placement_group(group: ComputeGroup) -> bool:
    """Whether fmcluster creates a cluster placement group: ``auto`` means for on-demand capacity only.

    A capacity block is already placed (a placement group can keep it from launching); a
    reservation made in a placement group must launch into that group, which the project names
    (``capacity.placement_group``), and one made without cannot be placed after the fact.
    """
    if group.placement_group == "auto":
        return group.capacity.type == "on-demand"
    return bool(group.placement_group)


def plan_group(group: ComputeGroup) -> GroupPlan:
    instance = catalog.get(group.instance_type)
    interfaces = efa_layout(instance)
    efa_count = sum(1 for i in interfaces if i.carries_efa)
    per_node_hbm = instance.gpu_memory_total_gb
    per_node_bf16 = instance.bf16_dense_pflops
    return GroupPlan(
        name=group.name,
        instance_type=group.instance_type,
        count=group.count,
        capacity=group.capacity.type,
        reservation_id=getattr(group.capacity, "reservation_id", None),
        placement_group=uses_placement_group(group),
        existing_placement_group=getattr(group.capacity, "placement_group", None),
        interfaces=interfaces,
        ips_per_node=sum(1 for i in interfaces if i.needs_ip),
        gpus=instance.gpus * group.count,
        gpu_model=instance.gpu_model,
        bf16_pflops=None if per_node_bf16 is None else per_node_bf16 * group.count,
        hbm_gb=None if per_node_hbm is None else per_node_hbm * group.count,
        efa_interfaces=efa_count,
        efa_gbps_exposed=efa_count * instance.efa_gbps_per_interface,
        efa_gbps_spec=instance.efa_aggregate_gbps,
        architecture=instance.architecture,
        nvswitch=instance.nvswitch,
        needs_imex=instance.needs_imex,
        needs_nvlsm=instance.needs_nvlsm,
        local_nvme_drives=instance.local_nvme_drives,
        fsx_efa_client_interfaces=instance.fsx_efa_client_interfaces,
        ami_id=group.ami_id,
        root_volume_gib=group.root_volume_gib,
        training_plan_arn=getattr(group.capacity, "arn", None),
        spare_instances_per_ultraserver=getattr(group.capacity, "spare_instances_per_ultraserver", 0)
        if instance.ultraservers else 0,
    )


JSON_OMITS = ("nvswitch", "needs_imex", "needs_nvlsm", "local_nvme_drives", "ami_id", "root_volume_gib")
"""GroupPlan fields for the stacks and the bootstrap, left out of `fmcluster plan -o json`."""
