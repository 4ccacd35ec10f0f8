"""The ``orchestrator.pcs`` section of a project file: a Slurm cluster on AWS Parallel Computing Service (PCS).

Skeleton: the PCS work fills in the settings (Slurm version, size, AMI, login nodes, idle time)."""

from __future__ import annotations

from fmcluster.config.base import Model


class PcsSettings(Model):
    """How fmcluster builds the AWS PCS cluster (``orchestrator.type: pcs``)."""
