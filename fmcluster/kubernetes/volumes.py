"""FSx for Lustre as a Kubernetes volume: the project's retained file system, bound statically.

One PersistentVolume per namespace that needs it, all with the same ``csi.volumeHandle`` (the file system ID), and
one claim per namespace bound to its own volume by name (``volumeName``; ``storageClassName: ""`` keeps any default
storage class from provisioning another): a PVC binds one PV and a PV one PVC, and a PVC lives in one namespace, so
each namespace (``default`` and each team's) gets its own pair. ``persistentVolumeReclaimPolicy: Retain``: deleting a
claim or volume never deletes the file system (the driver's static example, kubernetes-sigs/aws-fsx-csi-driver
``examples/kubernetes/static_provisioning``, PR #129: Retain, ``volumeName``, ``storageClassName: ""``).

Several PVs with one volumeHandle: the FSx CSI node service has no stage step (``nodeCaps`` is empty,
``NodeStageVolume`` is Unimplemented) and mounts ``<dnsname>@tcp:/<mountname>`` at each pod's own target path,
keyed by volume ID and target (aws-fsx-csi-driver ``pkg/driver/node.go``), so pods of different namespaces mount the
same file system side by side, as the EFS driver's maintainers confirm for its identical static case
(aws-efs-csi-driver#254). What fails is one pod using two PVs of the same handle: kubelet takes them for one volume
and the second never mounts (aws-fsx-csi-driver#328): each pod here mounts one claim only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fmcluster.kubernetes.governance import team_namespace

DRIVER = "fsx.csi.aws.com"
ACCESS_MODES = ["ReadWriteMany"]
CLAIM_NAME = "fsx"
"""The claim's name in every namespace: jobs name the same claim wherever they run."""
MOUNT_PATH = "/fsx"
"""Where the jobs mount it: the path the Slurm orchestrators' nodes mount FSx at by default."""


def namespaces(teams: Iterable[str], task_governance: bool) -> list[str]:
    """The namespaces whose jobs mount FSx: ``default``, and each team's when task governance makes them."""
    return ["default", *(team_namespace(t) for t in teams)] if task_governance else ["default"]


def volume_name(project: str, namespace: str) -> str:
    return f"{project}-fsx-{namespace}"


def persistent_volume(name: str, file_system_id: Any, dns_name: Any, mount_name: Any, capacity_gib: int,
                      *, labels: dict[str, str] | None = None) -> dict:
    """The static PersistentVolume of the file system (ID, DNS name and mount name: values or the stack's tokens)."""
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {
            "capacity": {"storage": f"{capacity_gib}Gi"},
            "volumeMode": "Filesystem",
            "accessModes": list(ACCESS_MODES),
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "mountOptions": ["flock"],
            "csi": {"driver": DRIVER, "volumeHandle": file_system_id,
                    "volumeAttributes": {"dnsname": dns_name, "mountname": mount_name}},
        },
    }


def persistent_volume_claim(namespace: str, volume: str, capacity_gib: int) -> dict:
    return {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": CLAIM_NAME, "namespace": namespace},
        "spec": {"accessModes": list(ACCESS_MODES), "storageClassName": "", "volumeName": volume,
                 "resources": {"requests": {"storage": f"{capacity_gib}Gi"}}},
    }


def fsx_volumes(project: str, namespaces: Iterable[str], file_system_id: Any, dns_name: Any, mount_name: Any,
                capacity_gib: int) -> list[dict]:
    """A PV and its claim for each namespace (in the order given, each once)."""
    out: list[dict] = []
    seen: set[str] = set()
    for namespace in namespaces:
        if namespace in seen:
            continue
        seen.add(namespace)
        name = volume_name(project, namespace)
        out.append(persistent_volume(name, file_system_id, dns_name, mount_name, capacity_gib,
                                     labels={"app.kubernetes.io/managed-by": "fmcluster"}))
        out.append(persistent_volume_claim(namespace, name, capacity_gib))
    return out


def pod_volume() -> tuple[dict, dict]:
    """(volume, volumeMount) for a pod spec using the namespace's claim."""
    return ({"name": "fsx", "persistentVolumeClaim": {"claimName": CLAIM_NAME}},
            {"name": "fsx", "mountPath": MOUNT_PATH})
