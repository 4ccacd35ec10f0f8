"""The picture of a project, as a graph: what ``fmcluster diagram`` draws, built from the plan alone.

Pure: nodes, nested clusters (VPC, zones, subnets, placement groups) and edges, with no drawing library.
The command renders this model with ``diagrams`` (graphviz); the tests assert on the model, not pixels.
One node per compute group, one edge per data repository association. An association to a bucket that
is not the project's (a team's datasets, allowed by ``storage.external_buckets``) points at that bucket,
drawn as itself. HyperPod draws its controller and login groups; a group of UltraServers (GB200) draws
each UltraServer as its own box: one NVLink domain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from fmcluster.config.storage import S3_URI
from fmcluster.generate import hyperpod, schedulers
from fmcluster.plan import GroupPlan, Plan

Kind = Literal["compute-group", "head-node", "login", "nvlink-domain", "nat", "fsx", "s3", "prometheus", "grafana",
               "endpoints"]


@dataclass(frozen=True)
class Node:
    id: str
    kind: Kind
    label: str


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    kind: Literal["mount", "association", "metrics", "dashboards", "slurm"]
    label: str = ""


@dataclass(frozen=True)
class Cluster:
    """A box: the VPC, a zone, a subnet, a placement group. Holds node IDs and boxes inside it."""

    label: str
    nodes: tuple[str, ...] = ()
    clusters: tuple[Cluster, ...] = ()


@dataclass(frozen=True)
class Graph:
    title: str
    nodes: tuple[Node, ...]
    clusters: tuple[Cluster, ...]
    edges: tuple[Edge, ...]
    outside: tuple[str, ...] = field(default=())
    """Node IDs drawn outside every box (Regional services: S3, Prometheus, Grafana)."""

    def of_kind(self, kind: str) -> list[Node]:
        return [n for n in self.nodes if n.kind == kind]

    def edges_of_kind(self, kind: str) -> list[Edge]:
        return [e for e in self.edges if e.kind == kind]


def group_label(g: GroupPlan) -> str:
    per_node = g.gpus // g.count
    return (f"{g.name}: {g.count} x {g.instance_type}\n{g.gpus:,} GPUs ({per_node} x {g.gpu_model} per node)\n"
            f"{g.efa_interfaces} EFA per node, {g.efa_gbps_exposed:,.0f} Gbps")


def _placement(g: GroupPlan) -> str:
    if g.capacity == "capacity-block":
        return f"capacity block {g.reservation_id}"
    if g.existing_placement_group:
        return f"placement group {g.existing_placement_group} (reservation {g.reservation_id})"
    if g.placement_group:
        return f"cluster placement group {g.name}"
    return f"{g.capacity} {g.reservation_id or ''}".strip()


def build(plan: Plan) -> Graph:
    """The graph of ``plan``: VPC and subnets by zone, groups in their placement, storage, monitoring."""
    net, st = plan.network, plan.storage
    nodes: list[Node] = []
    edges: list[Edge] = []
    outside: list[str] = []
    groups = []
    for g in plan.groups:
        nodes.append(Node(f"group:{g.name}", "compute-group", group_label(g)))
        groups.append(Cluster(_placement(g), (f"group:{g.name}",), _nvlink_domains(plan, g, nodes)))

    services: list[str] = []  # what sits in the services zone's subnet (the compute subnet in a regular zone)
    part = schedulers.scheduler(plan.cluster).diagram(plan)
    nodes += [Node(*n) for n in part.nodes]  # type: ignore[arg-type]
    edges += [Edge(*e) for e in part.edges]  # type: ignore[arg-type]
    services += part.services
    if net.spec.interface_endpoints:
        nodes.append(Node("endpoints", "endpoints", "interface endpoints\n" + ", ".join(net.spec.interface_endpoints)))
        services.append("endpoints")
    if st.fsx:
        existing = st.spec.fsx.existing
        label = (f"FSx for Lustre {existing.file_system_id}\n(existing)" if existing else
                 f"FSx for Lustre\n{st.capacity_gib:,} GiB {st.deployment_type}"
                 + (f"\n{st.throughput_per_tib} MB/s per TiB" if st.throughput_per_tib else ""))
        nodes.append(Node("fsx", "fsx", label))
        services.append("fsx")
        edges += [Edge(f"group:{g.name}", "fsx", "mount", st.spec.fsx.mount_path) for g in plan.groups]
    bucket = st.spec.bucket.existing_name or f"{plan.project} bucket"
    nodes.append(Node("s3", "s3", f"S3\n{bucket}\n(the project's bucket)"))
    outside.append("s3")
    if st.fsx and st.created:
        for a in st.spec.fsx.associations:
            target = a.data_repository_path or f"s3://{bucket}{a.file_system_path}/"
            edges.append(Edge("fsx", _bucket_node(a.data_repository_path, st.spec.bucket.existing_name, nodes, outside),
                              "association", f"{a.file_system_path} <-> {target}"))
    obs = plan.observability
    if obs.enabled:
        nodes.append(Node("amp", "prometheus", "Amazon Managed\nPrometheus"))
        outside.append("amp")
        edges += [Edge(f"group:{g.name}", "amp", "metrics", "GPU, EFA, node") for g in plan.groups]
    if obs.spec.grafana.enabled:
        nodes.append(Node("grafana", "grafana", f"Amazon Managed Grafana\n({obs.spec.grafana.authentication})"))
        outside.append("grafana")
        if obs.enabled:
            edges.append(Edge("amp", "grafana", "dashboards"))

    compute_zone = plan.availability_zone_id
    local = net.local_zone
    compute_subnet = Cluster(f"compute subnet {net.compute_subnet_cidr or net.existing_subnet_id or ''}".strip(),
                             () if local else tuple(services), tuple(groups))
    zones: list[Cluster] = []
    if local:
        nat = _nat(nodes, net.public_subnet_cidr, net.existing)
        parent = (Cluster(f"public subnet {net.public_subnet_cidr}", nat),) if nat else ()
        parent += (Cluster(f"services subnet {net.services_subnet_cidr}", tuple(services)),)
        zones.append(Cluster(f"{net.services_zone_id} (parent zone)", (), parent))
        zones.append(Cluster(f"{compute_zone} (Local Zone {local.name})", (), (compute_subnet,)))
    else:
        nat = _nat(nodes, net.public_subnet_cidr, net.existing)
        inner = ((Cluster(f"public subnet {net.public_subnet_cidr}", nat),) if nat else ()) + (compute_subnet,)
        zones.append(Cluster(compute_zone, (), inner))
    vpc = Cluster(f"VPC {net.vpc_cidr}" if not net.existing else f"VPC {net.vpc_id} (existing)", (), tuple(zones))
    return Graph(f"{plan.project}: {plan.nodes:,} nodes, {plan.gpus:,} GPUs", tuple(nodes), (vpc,), tuple(edges),
                 tuple(outside))


def _bucket_node(path: str | None, own: str | None, nodes: list[Node], outside: list[str]) -> str:
    """The node an association points at: the project's bucket, or another bucket drawn as itself."""
    match = S3_URI.match(path) if path else None
    if match is None or match.group("bucket") == own:
        return "s3"
    name = match.group("bucket")
    node_id = f"s3:{name}"
    if node_id not in outside:
        nodes.append(Node(node_id, "s3", f"S3\n{name}\n(external bucket)"))
        outside.append(node_id)
    return node_id


def _nvlink_domains(plan: Plan, g: GroupPlan, nodes: list[Node]) -> tuple[Cluster, ...]:
    """A group of UltraServers: one box per UltraServer, each one NVLink domain (with its own IMEX domain)."""
    u = hyperpod.ultraserver(plan.cluster, g)
    if u is None:
        return ()
    per_server = g.gpus // u.servers
    domains = []
    for i in range(1, u.servers + 1):
        node_id = f"nvlink:{g.name}:{i}"
        nodes.append(Node(node_id, "nvlink-domain", f"{u.instances_per_server} x {g.instance_type}\n"
                                                    f"{per_server} GPUs on one NVLink fabric"))
        domains.append(Cluster(f"NVLink domain: {u.type} {i} of {u.servers}", (node_id,)))
    return tuple(domains)


def _nat(nodes: list[Node], public_cidr: str | None, existing: bool) -> tuple[str, ...]:
    if existing or not public_cidr:
        return ()
    nodes.append(Node("nat", "nat", "NAT gateway"))
    return ("nat",)
