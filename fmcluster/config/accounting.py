"""The ``orchestrator.accounting`` section of a project file: Slurm accounting (``sacct``, ``sreport``, fair share).

Off by default. Accounting needs somewhere to keep its records, and on ParallelCluster and HyperPod that is a
MySQL-compatible database fmcluster creates and *retains*: it costs money every hour it exists, outlives
``cdk destroy`` on purpose (job history is the record of who used what) and must be deleted by hand. A project that
only wants a training cluster should not inherit that by default.

Where the records live depends on the orchestrator (its ``accounting`` trait, :mod:`fmcluster.orchestrators`):

- ``database``: an Aurora MySQL Serverless v2 cluster fmcluster creates (``stacks/accounting.py``). ParallelCluster
  reads it through ``Scheduling.SlurmSettings.Database`` (ParallelCluster 3.3+, ``slurm-accounting-v3``);
  HyperPod through ``Orchestrator.Slurm.AccountingDatabase`` (botocore's sagemaker model: "only supported for
  clusters using Continuous as the NodeProvisioningMode").
- ``controller``: HyperPod's own database on the controller node ("When you omit this field, Slurm accounting uses
  a database on the cluster's controller node", botocore ``ClusterOrchestratorSlurmConfig.AccountingDatabase``):
  free, but lost with the controller.
- ``managed``: AWS PCS's managed accounting (``SlurmConfiguration.Accounting.Mode: STANDARD``, botocore's pcs
  model; Slurm 24.11 or later, FACTS.md section 5).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from fmcluster.config.base import Int, Model, located

Store = Literal["database", "controller", "managed"]
SlurmDefault = Literal["fair_share", "qos_per_partition", "tres"]
SLURM_DEFAULTS: tuple[SlurmDefault, ...] = ("fair_share", "qos_per_partition", "tres")
"""The Slurm policies accounting brings by default where fmcluster can apply them (the orchestrator's
``accounting_defaults`` trait, :mod:`fmcluster.orchestrators`); asking for one elsewhere is an error."""
DEFAULT_TRES: tuple[str, ...] = ("gres/gpu",)
"""``tres`` where it is not set: GPUs counted by ``sacct`` and ``sreport`` (https://slurm.schedmd.com/tres.html)."""
ACU_STEP = 0.5
"""Aurora Serverless v2 capacity comes in steps of 0.5 ACU (CloudFormation ``ServerlessV2ScalingConfiguration``)."""
TRES_NAME = (r"^(cpu|mem|energy|node|billing|fs/disk|vmem|pages"
             r"|gres/[a-z0-9_]+(:[A-Za-z0-9_.-]+)?|license/[A-Za-z0-9_.-]+)$")
"""A trackable resource as ``AccountingStorageTRES`` names one (slurm.conf(5)): ``gres/gpu``, ``gres/gpu:h100``,
``license/NAME`` ... (CPU, memory, energy, node and billing are always tracked)."""


class AccountingDatabase(Model):
    """The accounting database fmcluster creates (``store: database``): small on purpose, accounting is light."""

    min_capacity_acu: float = Field(
        default=0.5, ge=0.5, le=256,
        description="Least Aurora Serverless v2 capacity (ACUs, steps of 0.5); what the database costs when idle.")
    max_capacity_acu: float = Field(
        default=2, ge=1, le=256,
        description="Most Aurora Serverless v2 capacity (ACUs, steps of 0.5); `sreport` over months is the peak.")
    backup_retention_days: Int = Field(
        default=7, ge=1, le=35, description="Days of automated backups (point-in-time restore) RDS keeps.")

    @field_validator("min_capacity_acu", "max_capacity_acu")
    @classmethod
    def _step(cls, value: float) -> float:
        if round(value / ACU_STEP) * ACU_STEP != value:
            raise ValueError(f"{value} is not a multiple of {ACU_STEP}; Aurora Serverless v2 scales in half ACUs")
        return value

    @model_validator(mode="after")
    def _range(self) -> AccountingDatabase:
        if self.min_capacity_acu > self.max_capacity_acu:
            raise located(f"min_capacity_acu {self.min_capacity_acu} is above max_capacity_acu "
                          f"{self.max_capacity_acu}", "min_capacity_acu")
        return self


class SlurmPolicy(Model):
    """The Slurm policies accounting applies on a project's orchestrator: each setting as given, else its default
    where the orchestrator takes it, else off (:func:`slurm_policy`)."""

    fair_share: bool = False
    qos_per_partition: bool = False
    tres: tuple[str, ...] = ()


class Accounting(Model):
    """Slurm accounting: job records, fair share, a QoS per partition, GPUs as a tracked resource."""

    enabled: bool = Field(
        default=False,
        description="Turn Slurm accounting on. Off by default: its database is retained and billed until you delete "
                    "it by hand.")
    store: Store | None = Field(
        default=None,
        description="Where the records live: `database` (a retained Aurora MySQL Serverless v2 database fmcluster "
                    "creates), `controller` (HyperPod's controller node) or `managed` (AWS PCS). Default: the "
                    "orchestrator's first choice (ParallelCluster and HyperPod: `database`).")
    database: AccountingDatabase = Field(
        default_factory=AccountingDatabase, description="Sizing of the database (`store: database`).")
    fair_share: bool | None = Field(
        default=None,
        description="Multifactor priority with fair share (`PriorityType=priority/multifactor`, "
                    "`PriorityWeightFairshare`): heavy users wait behind light ones. Default: on where fmcluster "
                    "can set it (ParallelCluster); `true` elsewhere is an error.")
    qos_per_partition: bool | None = Field(
        default=None,
        description="A QoS named after each partition and set as the partition's QoS (`sacctmgr add qos`, on the "
                    "node that runs slurmctld, and set again after a restart or `scontrol reconfigure`): a place "
                    "for a partition's limits (`sacctmgr modify qos P set ...`). Slurm enforces a QoS's limits only "
                    "with `AccountingStorageEnforce=limits`, which fmcluster sets with `teams` (ParallelCluster); "
                    "without teams the QoS's limits are not enforced (enforcing them would refuse every user "
                    "without an association, slurm.conf(5)). Default: "
                    "on where fmcluster can set it (ParallelCluster, HyperPod); `true` elsewhere is an error.")
    tres: list[str] | None = Field(
        default=None,
        description="Extra trackable resources (`AccountingStorageTRES`); `gres/gpu` makes `sacct`/`sreport` count "
                    "GPUs. CPU, memory, energy, node and billing are always tracked. Default: `[gres/gpu]` where "
                    "fmcluster can set it (ParallelCluster); a list elsewhere is an error, `[]` sets nothing.")

    @field_validator("tres")
    @classmethod
    def _tres(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return value
        for i, name in enumerate(value):
            if not re.match(TRES_NAME, name):
                raise located(f"{name[:60]!r} is not a trackable resource AccountingStorageTRES accepts "
                              "(gres/gpu, gres/gpu:TYPE, license/NAME, fs/disk, vmem, pages ...)", i)
        dupes = sorted({v for v in value if value.count(v) > 1})
        if dupes:
            raise ValueError(f"listed more than once: {', '.join(dupes)}")
        return value

    @model_validator(mode="after")
    def _database_only_for_database(self) -> Accounting:
        if "database" in self.model_fields_set and self.store not in (None, "database"):
            raise located(f"`database` sizes the database of `store: database`; with `store: {self.store}` there is "
                          "none (remove `database`)", "database")
        return self


def slurm_policy(spec: Accounting, applies: tuple[str, ...]) -> SlurmPolicy:
    """What ``spec`` asks of Slurm on an orchestrator that can apply ``applies`` (its ``accounting_defaults``
    trait): an unset setting is on where it applies and off elsewhere; a setting asked for where it cannot apply is
    the accounting-defaults check's error, and is off here."""
    if not spec.enabled:
        return SlurmPolicy()
    fair = spec.fair_share is not False and "fair_share" in applies
    qos = spec.qos_per_partition is not False and "qos_per_partition" in applies
    tres = tuple(DEFAULT_TRES if spec.tres is None else spec.tres) if "tres" in applies else ()
    return SlurmPolicy(fair_share=fair, qos_per_partition=qos, tres=tres)


def asked_for(spec: Accounting) -> list[SlurmDefault]:
    """The policies the project file turns on itself (``true``, or a non-empty ``tres``)."""
    return [name for name in SLURM_DEFAULTS if getattr(spec, name)]
