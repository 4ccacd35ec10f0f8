"""The ``orchestrator.hyperpod_eks`` section: SageMaker HyperPod orchestrated by an Amazon EKS cluster the stack
builds (``orchestrator.type: hyperpod-eks``).

Facts (FACTS.md section 5b; SageMaker developer guide "Getting started with Amazon EKS support in SageMaker
HyperPod", docs.amazonaws.cn/en_us/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html: "SageMaker HyperPod
supports Kubernetes versions 1.28, 1.29, 1.30, 1.31, 1.32, and 1.33"; authentication mode API or API_AND_CONFIG_MAP;
VPC CNI 1.18.3 or later). The instance-group settings HyperPod Slurm also has (deep health checks, threads per core,
the extra EBS volume, EFA interface type, UltraServers, node recovery, the lifecycle bucket, the name prefix) take
the same types and rules as :mod:`fmcluster.config.hyperpod`. Slurm-only settings (the controller and login groups,
partitions, ``slurm_config_strategy``) are refused with a line saying so; accounting is refused by the
accounting-supported check.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from fmcluster.config.base import AZ_ID, Int, Model, located
from fmcluster.config.hyperpod import (
    BUCKET_NAME,
    CLUSTER_NAME,
    CLUSTER_NAME_PREFIX_MAX,
    ML_INSTANCE_TYPE,
    DeepHealthCheck,
    UltraServerType,
)

KUBERNETES_VERSIONS: tuple[str, ...] = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34", "1.35")
"""The Kubernetes versions SageMaker HyperPod supports: 1.28 to 1.33 (developer guide, EKS prerequisites, English
page), 1.34 (its Chinese page), 1.35 (**unconfirmed** on those pages: AWS's Terraform for HyperPod EKS says its
training operator add-on's default build spans "K8s 1.28-1.35", awsome-distributed-training
``terraform-modules/hyperpod-eks-tf/modules/hyperpod_training_operator/main.tf``). Whether EKS still creates a cluster
on one, and at which rate, is :mod:`fmcluster.eks_versions`' calendar (the hyperpod-eks-kubernetes-support check)."""
DEFAULT_KUBERNETES_VERSION = "1.35"
"""In EKS standard support until 2027-03-27 (:data:`fmcluster.eks_versions.CALENDAR`); 1.34 left it on 2026-12-02."""

EKS_UNSUPPORTED_ZONE_IDS = ("use1-az3", "usw1-az2", "cac1-az3")
"""Zones EKS refuses for a cluster's subnets (``UnsupportedAvailabilityZoneException``): EKS user guide, "VPC and
subnet requirements", subnet requirements for clusters (docs.aws.amazon.com/eks/latest/userguide/network-reqs.html);
the same three IDs in AWS's EKS docs' Karpenter GPU walkthrough and in public Terraform that excludes them."""
CONTROL_PLANE_ZONE_CANDIDATES = 6
"""The default second control-plane zone is the Region's lowest-numbered zone ID (``<region>-az1``, ``-az2``, ...)
that is not the nodes' and EKS accepts: zone IDs are the same in every account (EC2 user guide, "AZ IDs"), and
`fmcluster preflight` checks both exist in the account's Region before a deploy. **Unconfirmed** that every Region
has an az1 or az2 for every account: set ``control_plane_zone_ids`` where it does not."""

SYSTEM = "system"
"""The instance-group name of the untainted system group (CoreDNS, Kueue, the operators)."""
DEFAULT_SYSTEM_TYPE = "ml.m5.2xlarge"
"""8 vCPUs and 32 GiB per node run CoreDNS, Kueue and the operators; the general-purpose group of AWS's HyperPod EKS
samples is ml.m5 (awsome-distributed-training 7.sagemaker-hyperpod-eks, general purpose instance group)."""

PRINCIPAL_ARN = r"^arn:aws[a-z-]*:(iam::[0-9]{12}:(role|user)/[A-Za-z0-9+=,.@_/-]+|sts::[0-9]{12}:assumed-role/.+)$"
"""An IAM role or user ARN (``AWS::EKS::AccessEntry`` PrincipalArn: an IAM principal)."""
LABEL_KEY = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}" \
            r"[A-Za-z0-9])?$"
"""A Kubernetes label or taint key: an optional DNS-subdomain prefix and ``/``, then a name of up to 63 characters
(Kubernetes "Labels and Selectors", syntax and character set)."""
LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"

SLURM_ONLY = {
    "controller": "HyperPod on EKS has no Slurm controller: the EKS control plane schedules",
    "login": "HyperPod on EKS has no login group: users reach the cluster with kubectl (admins)",
    "slurm_config_strategy": "there is no slurm.conf on HyperPod EKS",
    "partition": "Slurm partitions do not exist on Kubernetes: select a group by its labels "
                 "(sagemaker.amazonaws.com/instance-group-name) or set labels here",
}
"""Keys of HyperPod Slurm's section that mean nothing here, with why (refused, never ignored)."""


class Taint(Model):
    """A Kubernetes taint HyperPod puts on every node of the group (``KubernetesConfig.Taints``)."""

    key: str = Field(pattern=LABEL_KEY, max_length=253, description="Taint key, e.g. `nvidia.com/gpu`.")
    value: str | None = Field(default=None, pattern=LABEL_VALUE, max_length=63, description="Taint value.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        default="NoSchedule", description="NoSchedule, PreferNoSchedule or NoExecute.")


GPU_TAINT = Taint(key="nvidia.com/gpu", value="true", effect="NoSchedule")
"""The default taint of a GPU group: only pods that ask for it land there (EKS Blueprints' nvidia-gpu-efa pattern
and AWS's HyperPod EKS samples taint GPU nodes ``nvidia.com/gpu``)."""


def _refuse_slurm(value: Any) -> Any:
    if isinstance(value, dict):
        for key in value:
            if key in SLURM_ONLY:
                raise located(f"{key} is a HyperPod Slurm setting: {SLURM_ONLY[key]}", key)
    return value


class EksGroupSettings(Model):
    """HyperPod settings of one compute group (its instance group) on EKS."""

    labels: dict[str, str] = Field(
        default_factory=dict, description="Kubernetes labels on the group's nodes (KubernetesConfig.Labels), besides "
                                          "HyperPod's own.")
    taints: list[Taint] | None = Field(
        default=None, description="Taints on the group's nodes (KubernetesConfig.Taints). Default: "
                                  "`nvidia.com/gpu=true:NoSchedule`; [] for none.")
    deep_health_checks: list[DeepHealthCheck] | None = Field(
        default=None, description="Deep health checks before a node joins: InstanceStress, InstanceConnectivity. "
                                  "Default: both; [] for none.")
    threads_per_core: Literal[1, 2] = Field(default=1, description="1 turns simultaneous multithreading off, 2 on.")
    ebs_volume_gib: Int | None = Field(
        default=500, ge=1, le=16384,
        description="Extra encrypted EBS volume (GB) for container images; null for none.")
    interface_type: Literal["efa", "efa-only"] = Field(
        default="efa", description="EFA interfaces: efa (with ENA: pods take VPC CNI addresses on it) or efa-only.")
    ultraserver: UltraServerType | None = Field(
        default=None, description="GB200: the UltraServer type of the training plan (as in orchestrator.hyperpod).")

    @model_validator(mode="before")
    @classmethod
    def _slurm_only(cls, value: Any) -> Any:
        return _refuse_slurm(value)

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        for key, val in value.items():
            if not re.match(LABEL_KEY, key) or len(key) > 253:
                raise located(f"{key!r} is not a Kubernetes label key", key)
            if not re.match(LABEL_VALUE, val) or len(val) > 63:
                raise located(f"{val!r} is not a Kubernetes label value (63 letters, digits, '-', '_', '.')", key)
        return value

    @property
    def node_taints(self) -> tuple[Taint, ...]:
        return (GPU_TAINT,) if self.taints is None else tuple(self.taints)


class SystemGroup(Model):
    """The untainted instance group for CoreDNS, Kueue and the operators (no GPU pods land there)."""

    instance_type: str = Field(default=DEFAULT_SYSTEM_TYPE, pattern=ML_INSTANCE_TYPE,
                               description=f"HyperPod `ml.` type. Default: {DEFAULT_SYSTEM_TYPE}.")
    count: Int = Field(default=2, ge=1, le=16, description="Nodes (2: CoreDNS's two replicas on two nodes).")
    ebs_volume_gib: Int | None = Field(default=100, ge=1, le=16384,
                                       description="Extra encrypted EBS volume (GB); null for none.")


class HyperPodEksSettings(Model):
    """How fmcluster builds the EKS cluster and the HyperPod cluster on it (``orchestrator.type: hyperpod-eks``)."""

    cluster_name: str | None = Field(
        default=None, pattern=CLUSTER_NAME, max_length=CLUSTER_NAME_PREFIX_MAX,
        description="How the HyperPod cluster's name starts (up to 45 characters); fmcluster appends the compute "
                    "subnet's ID, as for orchestrator.hyperpod. Default: `<project>-hyperpod`.")
    kubernetes_version: Literal[KUBERNETES_VERSIONS] = Field(  # type: ignore[valid-type]
        default=DEFAULT_KUBERNETES_VERSION,
        description=f"EKS Kubernetes version, one HyperPod supports ({', '.join(KUBERNETES_VERSIONS)}). "
                    f"Default: {DEFAULT_KUBERNETES_VERSION}.")
    upgrade_policy: Literal["STANDARD", "EXTENDED"] = Field(
        default="STANDARD",
        description="EKS's upgrade policy (UpgradePolicy.SupportType). STANDARD: EKS upgrades the control plane when "
                    "the version leaves standard support, never billing extended support; EXTENDED: the cluster may "
                    "stay on it 12 more months at the extended-support rate.")
    public_endpoint: bool = Field(
        default=False, description="Open the Kubernetes API endpoint outside the VPC too, to `public_access_cidrs` "
                                   "only (IAM still authenticates). Default: private only: kubectl through a Session "
                                   "Manager port forward to a node (docs/hyperpod-eks.md).")
    public_access_cidrs: list[str] = Field(
        default_factory=list, max_length=40,
        description="With public_endpoint: the IPv4 CIDR blocks that may reach the public endpoint (your office or "
                    "VPN egress), required there; 0.0.0.0/0 is refused.")
    control_plane_zone_ids: list[Annotated[str, Field(pattern=AZ_ID)]] | None = Field(
        default=None, min_length=2, max_length=2,
        description="The two Availability Zone IDs of the EKS control plane's subnets. Default: the nodes' zone (or "
                    "its parent zone) and the Region's lowest-numbered other zone EKS accepts.")
    admins: list[str] = Field(
        default_factory=list, max_length=20,
        description="IAM role or user ARNs given cluster admin (an EKS access entry with AmazonEKSClusterAdminPolicy); "
                    "at least one: nobody else can reach the Kubernetes API.")
    system_group: SystemGroup = Field(default_factory=SystemGroup, description="The untainted system group.")
    groups: dict[str, EksGroupSettings] = Field(
        default_factory=dict, description="Compute group name -> its HyperPod settings (defaults apply to the rest).")
    node_recovery: Literal["Automatic", "None"] = Field(
        default="Automatic", description="Automatic: HyperPod replaces or reboots a faulty node; None: labels it only.")
    task_governance: bool = Field(
        default=False, description="HyperPod task governance (its EKS add-on: Kueue, a scheduler config, a compute "
                                   "quota per team). Needed for `teams`.")
    training_operator: bool = Field(
        default=False, description="HyperPod's training operator add-on (elastic and checkpointless training; "
                                   "brings cert-manager and a pod identity).")
    observability_addon: bool = Field(
        default=False, description="HyperPod's observability add-on (its own metrics into the project's Prometheus "
                                   "workspace, through a pod identity). fmcluster's exporters run either way.")
    lifecycle_bucket_name: str | None = Field(
        default=None, pattern=BUCKET_NAME,
        description="Name of the lifecycle-script bucket; must start with `sagemaker-`. Default: generated.")

    @model_validator(mode="before")
    @classmethod
    def _slurm_only(cls, value: Any) -> Any:
        return _refuse_slurm(value)

    @field_validator("admins")
    @classmethod
    def _admins(cls, value: list[str]) -> list[str]:
        for i, arn in enumerate(value):
            if not re.match(PRINCIPAL_ARN, arn):
                raise located(f"{arn!r} is not an IAM role or user ARN (arn:aws:iam::<account>:role/<name>)", i)
        if len(set(value)) != len(value):
            raise ValueError("an admin is named twice")
        return value

    @field_validator("control_plane_zone_ids")
    @classmethod
    def _zones(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and value[0] == value[1]:
            raise located("the control plane's two zones must differ (EKS needs subnets in two zones)", 1)
        return value

    @field_validator("public_access_cidrs")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        for i, cidr in enumerate(value):
            try:
                network = ipaddress.IPv4Network(cidr)
            except ValueError:
                raise located(f"{cidr!r} is not an IPv4 CIDR block (e.g. 203.0.113.0/24)", i) from None
            if network.prefixlen == 0:
                raise located("0.0.0.0/0 opens the Kubernetes API endpoint to the whole internet: name the networks "
                              "you reach it from", i)
        return value

    def control_plane_zones(self, nodes_zone_id: str) -> tuple[str, ...]:
        """The control plane's two zone IDs: ``control_plane_zone_ids``, or the nodes' zone (``nodes_zone_id``: a
        Local Zone's parent) and the Region's lowest-numbered other zone that EKS accepts (the nodes' zone itself
        only where EKS accepts it)."""
        if self.control_plane_zone_ids:
            return tuple(self.control_plane_zone_ids)
        region = nodes_zone_id.rsplit("-az", 1)[0]
        candidates = [nodes_zone_id, *(f"{region}-az{n}" for n in range(1, CONTROL_PLANE_ZONE_CANDIDATES + 1))]
        out: list[str] = []
        for zone in candidates:
            if zone not in out and zone not in EKS_UNSUPPORTED_ZONE_IDS:
                out.append(zone)
        return tuple(out[:2])

    def group(self, name: str) -> EksGroupSettings:
        """A compute group's settings; their defaults when ``groups`` does not name it."""
        return self.groups.get(name) or EksGroupSettings()
