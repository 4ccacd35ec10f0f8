"""The ``compute_groups:`` section: sets of identical GPU nodes and where their capacity comes from."""

from __future__ import annotations

import difflib
from typing import Annotated, Literal, Union

from pydantic import Field, field_validator

from fmcluster import catalog
from fmcluster.config.base import Int, Model

RESERVATION_ID = r"^cr-[0-9a-f]{8,17}$"
TRAINING_PLAN_ARN = r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:[0-9]{12}:training-plan/[A-Za-z0-9-]+$"
GROUP_NAME = r"^[a-z][a-z0-9]{0,24}$"

_TYPE = ("Where the nodes come from: `on-demand`, `reservation` (an ODCR), `capacity-block` (bought for fixed dates) "
         "or `training-plan` (a SageMaker training plan; HyperPod only).")


class OnDemand(Model):
    """Plain on-demand instances."""

    type: Literal["on-demand"] = Field(description=_TYPE)


class Reservation(Model):
    """An On-Demand Capacity Reservation (ODCR)."""

    type: Literal["reservation"] = Field(description=_TYPE)
    reservation_id: str = Field(pattern=RESERVATION_ID, description="The ODCR ID, `cr-...`.")
    placement_group: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_.:-]{1,255}$",
        description="The cluster placement group the reservation was made in, if any: its instances must launch "
                    "into that group. fmcluster creates no placement group for a reservation.",
    )


class CapacityBlock(Model):
    """An EC2 Capacity Block for ML (bought ahead for fixed dates)."""

    type: Literal["capacity-block"] = Field(description=_TYPE)
    reservation_id: str = Field(pattern=RESERVATION_ID, description="The capacity block's reservation ID, `cr-...`.")


class TrainingPlan(Model):
    """A SageMaker flexible training plan (HyperPod only)."""

    type: Literal["training-plan"] = Field(description=_TYPE)
    arn: str = Field(pattern=TRAINING_PLAN_ARN, description="ARN of the SageMaker training plan.")
    spare_instances_per_ultraserver: Int = Field(
        default=1, ge=0, le=17,
        description="UltraServer plans (GB200): the spare instances the plan keeps per UltraServer, as bought "
                    "(`aws sagemaker create-training-plan --spare-instance-count-per-ultra-server N`; AWS's default "
                    "is 1). The group's count is whole UltraServers of the rest: 17 per x72 UltraServer with 1 spare.")


Capacity = Annotated[Union[OnDemand, Reservation, CapacityBlock, TrainingPlan], Field(discriminator="type")]


class ComputeGroup(Model):
    """A set of identical GPU nodes: one placement group and one launch template."""

    name: str = Field(pattern=GROUP_NAME,
                      description="Short name, 1 to 25 lowercase letters and digits starting with a letter; used in "
                                  "resource names.")
    instance_type: str = Field(description="An instance type from the catalog, e.g. `p5.48xlarge`.")
    count: Int = Field(ge=1, le=2048, description="Number of nodes.")
    capacity: Capacity = Field(default_factory=lambda: OnDemand(type="on-demand"), description="Where the nodes come from.")
    placement_group: bool | Literal["auto"] = Field(
        default="auto",
        description="A new cluster placement group: `auto` = on for on-demand capacity only (capacity blocks are "
                    "already placed; a reservation launches into the group it was made in, `capacity.placement_group`).",
    )
    root_volume_gib: Int = Field(default=200, ge=50, le=16384, description="Size of the encrypted gp3 root volume.")
    ami_id: str | None = Field(
        default=None,
        pattern=r"^ami-[0-9a-f]{8,17}$",
        description="AMI for the nodes. Default: the latest AWS Deep Learning Base OSS NVIDIA driver AMI for the OS.",
    )

    @field_validator("instance_type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in catalog.CATALOG:
            if value.startswith("ml.") and value[3:] in catalog.CATALOG:
                raise ValueError(f"{value[:60]!r} is HyperPod's name of the type: write instance_type: {value[3:]} "
                                 "(fmcluster adds the ml. prefix where SageMaker needs it)")
            near = difflib.get_close_matches(value, catalog.CATALOG, n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise ValueError(f"{value[:60]!r} is not in the catalog; {hint}known types: {', '.join(catalog.CATALOG)}")
        return value

CAPACITY_TYPES = {"on-demand": OnDemand, "reservation": Reservation, "capacity-block": CapacityBlock,
                  "training-plan": TrainingPlan}
"""The ``capacity.type`` tags and their models (the loader names them in hints)."""
