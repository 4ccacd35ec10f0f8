"""What the orchestrators' bundle renderers share (:mod:`fmcluster.bootstrap.selfmanaged`, ``parallelcluster``,
``hyperpod``): a fresh folder per bundle, the FSx mount a bundle gets, the partitions the slurmctld node gives a QoS.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fmcluster.bootstrap.context import FsxMount
from fmcluster.generate.slurmteams import SlurmTeam
from fmcluster.contracts import MountContract
from fmcluster.generate import schedulers, slurmteams
from fmcluster.plan import ClusterPlan


def qos_partitions(cluster: ClusterPlan) -> tuple[str, ...]:
    """The partitions the slurmctld node gives a QoS each: the compute groups' Slurm partitions as the orchestrator
    renders them (:func:`fmcluster.generate.schedulers.scheduler`'s ``slurm_targets``: ParallelCluster's queue,
    HyperPod's partition), each once, in the groups' order; empty unless accounting applies a QoS per partition
    (``ClusterPlan.slurm_policy``). Only the context of the node that runs slurmctld acts on them
    (``BootstrapContext.slurm_policy``)."""
    if not cluster.slurm_policy.qos_per_partition:
        return ()
    targets = schedulers.scheduler(cluster).slurm_targets(cluster)
    return tuple(dict.fromkeys(t.partition for t in targets.values()))


def slurm_teams(cluster: ClusterPlan) -> tuple[SlurmTeam, ...]:
    """The project's teams as Slurm accounting holds them (:func:`fmcluster.generate.slurmteams.slurm_teams`),
    against the orchestrator's partitions; empty where teams do not apply."""
    if not slurmteams.applies(cluster):
        return ()
    return slurmteams.slurm_teams(cluster, schedulers.scheduler(cluster).slurm_targets(cluster))


def fsx_mount(fsx: MountContract | None, fsx_at_boot: bool) -> FsxMount | None:
    """The mount a bundle that mounts FSx itself gets from the storage contract: the identity in the bundle, or (a
    file system created in the same deployment) only its path and EFA setting, the identity coming at boot."""
    if fsx is None:
        return None
    if fsx_at_boot:
        return FsxMount(mount_path=fsx.mount_path, efa_enabled=fsx.efa_enabled)
    return FsxMount(file_system_id=fsx.file_system_id, dns_name=fsx.dns_name, mount_name=fsx.mount_name,
                    mount_path=fsx.mount_path, efa_enabled=fsx.efa_enabled)


def fresh(folder: Path) -> Path:
    """An empty folder: nothing of an earlier synthesis survives into the assets."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder
