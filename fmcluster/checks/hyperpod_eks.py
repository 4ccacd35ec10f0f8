"""Checks for ``orchestrator.type: hyperpod-eks``: what SageMaker's CreateCluster or EKS would refuse, and the settings
that mean nothing on Kubernetes, reported with the file and line of the field to change. The instance-type, capacity
and UltraServer rules are HyperPod Slurm's (:mod:`fmcluster.checks.hyperpod`)."""

from __future__ import annotations

from collections.abc import Iterator

from fmcluster import eks_versions
from fmcluster.checks.hyperpod import (
    MAX_INSTANCE_GROUPS,
    capacity_findings,
    instance_type_findings,
    ultraserver_findings,
)
from fmcluster.checks.registry import Finding, check
from fmcluster.config.hyperpod import BUCKET_PREFIX
from fmcluster.config.hyperpod_eks import (
    DEFAULT_KUBERNETES_VERSION,
    EKS_UNSUPPORTED_ZONE_IDS,
    SYSTEM,
)
from fmcluster.config.loader import LoadedProject
from fmcluster.flavours import FLAVOURS
from fmcluster.plan import Plan
from fmcluster.plan.hyperpod_eks import node_addresses

EKS = ("orchestrator", "hyperpod_eks")


def _active(loaded: LoadedProject) -> bool:
    return loaded.project.orchestrator.type == "hyperpod-eks"


@check("hyperpod-eks-instance-type", "error")
def instance_types(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if _active(loaded):
        yield from instance_type_findings(loaded)


@check("hyperpod-eks-capacity", "error")
def capacity(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if _active(loaded):
        yield from capacity_findings(loaded)


@check("hyperpod-eks-ultraserver", "error")
def ultraservers(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if _active(loaded):
        yield from ultraserver_findings(loaded, plan, loaded.project.orchestrator.eks, EKS)


@check("hyperpod-eks-os", "error")
def operating_system(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """HyperPod's AMI for EKS is Amazon Linux 2023 only (bootstrap/profiles/hyperpod-eks-al2023.yaml: "Each DLAMI is
    built on AL2023", SageMaker developer guide, HyperPod AMI releases for Amazon EKS); a bundle rendered for another
    OS would stop at its preflight on every node."""
    project = loaded.project
    systems = FLAVOURS["hyperpod-eks"].operating_systems
    if _active(loaded) and project.os not in systems:
        written = "os" in project.model_fields_set
        yield Finding(("os",) if written else ("orchestrator", "type"),
                      f"HyperPod EKS nodes boot HyperPod's AMI for EKS, which is built on Amazon Linux 2023 only, "
                      f"not {project.os}" + ("" if written else " (the default os)"),
                      f"set os: {systems[0]}")


@check("hyperpod-eks-addresses", "warning")
def addresses(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """The compute subnet's size counts the VPC CNI's pod addresses per node; where EC2's addresses per interface of
    a type are unknown to fmcluster, they are not counted, and the subnet may be too small."""
    if not _active(loaded):
        return
    for a in node_addresses(plan.cluster):
        if a.pods is None:
            where = EKS + ("system_group", "instance_type") if a.group == SYSTEM else next(
                ("compute_groups", i, "instance_type") for i, g in enumerate(loaded.project.compute_groups)
                if g.name == a.group)
            yield Finding(where, f"the addresses the VPC CNI holds for pods on {a.group}'s nodes are not counted in "
                                 "the compute subnet's size: fmcluster does not know the type's IPv4 addresses per "
                                 "network interface",
                          "add headroom (network.ip_headroom_percent) for two interfaces' addresses per node "
                          "(aws ec2 describe-instance-types: NetworkInfo.Ipv4AddressesPerInterface)")


@check("hyperpod-eks-groups", "error")
def groups(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Settings for compute groups that exist; no compute group named like the system group; at most 100 instance
    groups (the system group and one per compute group; botocore sagemaker ``ClusterInstanceGroupSpecifications``)."""
    if not _active(loaded):
        return
    project = loaded.project
    names = [g.name for g in project.compute_groups]
    for name in project.orchestrator.eks.groups:
        if name not in names:
            yield Finding(EKS + ("groups", name), f"{name!r} is not a compute group",
                          f"compute groups: {', '.join(names)}")
    for i, name in enumerate(names):
        if name == SYSTEM:
            yield Finding(("compute_groups", i, "name"),
                          f"compute group name {name!r} is the name of the system instance group",
                          "rename the compute group")
    if 1 + len(names) > MAX_INSTANCE_GROUPS:
        yield Finding(("compute_groups",), f"{1 + len(names)} HyperPod instance groups (the system group and one per "
                                           f"compute group); CreateCluster takes at most {MAX_INSTANCE_GROUPS}",
                      "use fewer, larger compute groups")


@check("hyperpod-eks-network", "error")
def network(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """The EKS control plane's two /28 subnets (two Availability Zones) are carved from the VPC fmcluster makes."""
    if not _active(loaded) or plan.cluster.control_plane_subnet_cidrs:
        return
    if loaded.project.network.existing is not None:
        yield Finding(("network", "existing"), "an existing network has no subnets fmcluster can carve for the EKS "
                                               "control plane (two /28s in two Availability Zones)",
                      "let fmcluster create the VPC (remove network.existing)")
    else:
        yield Finding(("network", "vpc_cidr"), "the VPC has no room for the EKS control plane's two /28 subnets at "
                                               "its end beside the other subnets",
                      "use a larger vpc_cidr, or a smaller network.compute_subnet_prefix")


@check("hyperpod-eks-control-plane-zones", "error")
def control_plane_zones(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """The control plane's two zones are zones of the project's Region that EKS accepts, never a Local Zone."""
    if not _active(loaded):
        return
    settings = loaded.project.orchestrator.eks
    where = EKS + ("control_plane_zone_ids",) if settings.control_plane_zone_ids else ("availability_zone_id",)
    region = plan.network.services_zone_id.rsplit("-az", 1)[0]
    for i, zone in enumerate(plan.cluster.control_plane_zone_ids):
        field = where + (i,) if settings.control_plane_zone_ids else where
        if zone in EKS_UNSUPPORTED_ZONE_IDS:
            yield Finding(field, f"EKS does not accept {zone} for a cluster's subnets (EKS user guide, VPC and subnet "
                                 "requirements: UnsupportedAvailabilityZoneException)",
                          "set orchestrator.hyperpod_eks.control_plane_zone_ids to two other zones of the Region")
        elif zone.count("-") != 1 or zone.rsplit("-az", 1)[0] != region:
            yield Finding(field, f"{zone} is not an Availability Zone of the nodes' Region ({region}-az...)",
                          f"name two zone IDs of the form {region}-azN")
    if len(plan.cluster.control_plane_zone_ids) < 2:
        yield Finding(where, "no second zone EKS accepts was found for the control plane",
                      "set orchestrator.hyperpod_eks.control_plane_zone_ids")


@check("hyperpod-eks-admins", "error")
def admins(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """At least one admin: the cluster's creator gets no access (API authentication, no creator admin), so without
    one nobody could reach the Kubernetes API (issue 41)."""
    if _active(loaded) and not loaded.project.orchestrator.eks.admins:
        yield Finding(EKS + ("admins",) if loaded.project.orchestrator.hyperpod_eks is not None else ("orchestrator",),
                      "orchestrator.hyperpod_eks.admins names nobody: the EKS cluster gives its creator no access, "
                      "so nobody could use kubectl on it",
                      "add the IAM role you work as: admins: [arn:aws:iam::<account>:role/<name>] "
                      "(`aws sts get-caller-identity` shows it)")


@check("hyperpod-eks-endpoint", "error")
def endpoint(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """A public endpoint is open to the networks the project names, never to everyone; CIDRs mean nothing without
    it."""
    if not _active(loaded):
        return
    settings = loaded.project.orchestrator.eks
    if settings.public_endpoint and not settings.public_access_cidrs:
        yield Finding(EKS + ("public_endpoint",), "a public Kubernetes API endpoint needs public_access_cidrs: the "
                                                  "networks allowed to reach it",
                      "add public_access_cidrs: [<your egress CIDR>], or leave the endpoint private")
    if settings.public_access_cidrs and not settings.public_endpoint:
        yield Finding(EKS + ("public_access_cidrs",), "public_access_cidrs is set but the endpoint is private",
                      "set public_endpoint: true, or remove public_access_cidrs")


@check("hyperpod-eks-slurm-settings", "error")
def slurm_settings(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """HyperPod Slurm's section (controller, login, partitions, slurm.conf strategy) is refused, never ignored."""
    if _active(loaded) and loaded.project.orchestrator.hyperpod is not None:
        yield Finding(("orchestrator", "hyperpod"),
                      "orchestrator.hyperpod holds HyperPod Slurm's settings (controller, login, partitions, "
                      "slurm_config_strategy), which Kubernetes has none of",
                      "move node recovery, deep health checks and group settings to orchestrator.hyperpod_eks, and "
                      "remove orchestrator.hyperpod")


@check("hyperpod-eks-teams", "error")
def teams(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """Teams are enforced by task governance (a ComputeQuota per team): without it they would be ignored."""
    if _active(loaded) and loaded.project.teams and not loaded.project.orchestrator.eks.task_governance:
        yield Finding(("teams",), "teams are enforced on HyperPod EKS by task governance, which is off",
                      "set orchestrator.hyperpod_eks.task_governance: true, or remove `teams`")


@check("hyperpod-eks-lifecycle-bucket", "error")
def lifecycle_bucket(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    name = loaded.project.orchestrator.eks.lifecycle_bucket_name
    if _active(loaded) and name is not None and not name.startswith(BUCKET_PREFIX):
        yield Finding(EKS + ("lifecycle_bucket_name",),
                      f"lifecycle bucket {name!r} does not start with {BUCKET_PREFIX!r}: the cluster's managed policy "
                      "(AmazonSageMakerClusterInstanceRolePolicy) reaches only sagemaker-* buckets",
                      f"name it {BUCKET_PREFIX}{name}, or leave lifecycle_bucket_name out for the default")


KUBECTL_LAYER_VERSION = "1.35"
"""The kubectl and Helm the deploy-time handler runs (the ``aws-cdk.lambda-layer-kubectl-v35`` package); kubectl
supports a cluster one minor version either side (Kubernetes version skew policy), as CDK's layer docs say."""


@check("hyperpod-eks-kubectl-skew", "warning")
def kubectl_skew(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    version = loaded.project.orchestrator.eks.kubernetes_version
    minor, layer = int(version.split(".")[1]), int(KUBECTL_LAYER_VERSION.split(".")[1])
    if _active(loaded) and abs(minor - layer) > 1:
        yield Finding(EKS + ("kubernetes_version",),
                      f"Kubernetes {version} is more than one minor version from the deploy-time kubectl "
                      f"{KUBECTL_LAYER_VERSION} (CDK's kubectl layer), outside kubectl's supported skew",
                      f"use Kubernetes 1.{layer - 1} to 1.{layer + 1}, or accept that the chart install is untested "
                      "there")


def _version_field(loaded: LoadedProject) -> tuple:
    eks = loaded.project.orchestrator.hyperpod_eks
    return EKS + ("kubernetes_version",) if eks is not None and "kubernetes_version" in eks.model_fields_set else \
        (EKS if eks is not None else ("orchestrator",))


@check("hyperpod-eks-kubernetes-ended", "error")
def kubernetes_ended(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """EKS creates no cluster on a version past its end of extended support (EKS's calendar:
    :mod:`fmcluster.eks_versions`)."""
    version = loaded.project.orchestrator.eks.kubernetes_version
    if _active(loaded) and eks_versions.support(version) == "ended":
        end = eks_versions.CALENDAR[version].end_of_extended
        yield Finding(_version_field(loaded), f"EKS's extended support for Kubernetes {version} ended on {end}: EKS "
                                              "creates no cluster on it",
                      f"use Kubernetes {DEFAULT_KUBERNETES_VERSION} (standard support; {eks_versions.CALENDAR_URL})")


@check("hyperpod-eks-kubernetes-support", "warning")
def kubernetes_support(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    """A version in EKS extended support (billed at the extended rate), near its end of standard support, or whose
    dates the calendar lacks."""
    if not _active(loaded):
        return
    settings = loaded.project.orchestrator.eks
    version = settings.kubernetes_version
    state = eks_versions.support(version)
    left = eks_versions.days_of_standard_left(version)
    field = _version_field(loaded)
    newer = f"use Kubernetes {DEFAULT_KUBERNETES_VERSION} (standard support; {eks_versions.CALENDAR_URL})"
    if state == "extended":
        end = eks_versions.CALENDAR[version].end_of_standard
        what = ("EKS upgrades the control plane to the next version (upgrade_policy STANDARD)"
                if settings.upgrade_policy == "STANDARD" else "the control plane bills the extended-support rate")
        yield Finding(field, f"Kubernetes {version} left EKS standard support on {end}: {what}; the plan's cost "
                             "counts the extended-support rate", newer)
    elif state == "standard" and left is not None and left <= eks_versions.NEAR_DAYS:
        end = eks_versions.CALENDAR[version].end_of_standard
        yield Finding(field, f"Kubernetes {version} leaves EKS standard support on {end}, in {left} days: then EKS "
                             + ("upgrades the control plane" if settings.upgrade_policy == "STANDARD" else
                                "bills the extended-support rate"), newer)
    elif state == "unknown":
        yield Finding(field, f"fmcluster's EKS calendar has no dates for Kubernetes {version}: its support and rate "
                             "are unknown here", "check `aws eks describe-cluster-versions`")


@check("hyperpod-eks-settings-unused", "warning")
def settings_unused(loaded: LoadedProject, plan: Plan) -> Iterator[Finding]:
    if loaded.project.orchestrator.hyperpod_eks is not None and not _active(loaded):
        yield Finding(EKS, f"orchestrator.hyperpod_eks is ignored with orchestrator.type: "
                           f"{loaded.project.orchestrator.type}",
                      "set orchestrator.type: hyperpod-eks, or remove the section")
