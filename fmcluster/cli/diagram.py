"""``fmcluster diagram PROJECT``: draw the project (from the plan, no AWS) with ``diagrams`` and graphviz's ``dot``.

The graph itself is :func:`fmcluster.generate.diagram.build`; this module only renders it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import typer
from diagrams import Cluster, Diagram, Edge, Node
from diagrams.aws.compute import EC2Instance, EC2Instances
from diagrams.aws.management import AmazonManagedGrafana, AmazonManagedPrometheus
from diagrams.aws.network import Endpoint, NATGateway
from diagrams.aws.storage import FsxForLustre, SimpleStorageServiceS3Bucket
from rich.console import Console

from fmcluster.cli.outdir import default_out
from fmcluster.cli.project import PROJECT_ARG, Output, _load
from fmcluster.generate import diagram as model

err = Console(stderr=True)
out = Console()

ICONS: dict[str, type[Node]] = {
    "compute-group": EC2Instances, "head-node": EC2Instance, "nat": NATGateway, "endpoints": Endpoint,
    "fsx": FsxForLustre, "s3": SimpleStorageServiceS3Bucket, "prometheus": AmazonManagedPrometheus,
    "grafana": AmazonManagedGrafana, "login": EC2Instance, "nvlink-domain": EC2Instances,
}
STYLE = {"mount": "darkgreen", "association": "darkorange", "metrics": "steelblue", "dashboards": "steelblue",
         "slurm": "gray40"}


def render(graph: model.Graph, target: Path) -> Path:
    """Draw ``graph`` into ``target`` (.png or .svg); returns the file written."""
    fmt = target.suffix.lstrip(".").lower()
    drawn: dict[str, Node] = {}
    by_id = {n.id: n for n in graph.nodes}
    attrs = {"fontsize": "16", "pad": "0.4", "splines": "spline", "nodesep": "0.7", "ranksep": "1.0"}
    with Diagram(graph.title, filename=str(target.with_suffix("")), outformat=fmt, show=False, direction="LR",
                 graph_attr=attrs, node_attr={"fontsize": "11"}):

        def box(cluster: model.Cluster) -> None:
            with Cluster(cluster.label):
                for node_id in cluster.nodes:
                    drawn[node_id] = ICONS[by_id[node_id].kind](by_id[node_id].label)
                for inner in cluster.clusters:
                    box(inner)

        for cluster in graph.clusters:
            box(cluster)
        for node_id in graph.outside:
            drawn[node_id] = ICONS[by_id[node_id].kind](by_id[node_id].label)
        for e in graph.edges:
            drawn[e.source] >> Edge(label=e.label, color=STYLE[e.kind], fontsize="10") >> drawn[e.target]
    return target


def diagram(
    project: str = PROJECT_ARG,
    out_file: Path = typer.Option(None, "--out", help="A .png or .svg file. Default: out/PROJECT/diagram.png."),
    optional: bool = typer.Option(False, "--optional", help="Without graphviz's `dot`: say how to get it and exit 0 "
                                  "(`make synth` draws the diagram only where graphviz is installed)."),
) -> None:
    """Draw the project: VPC and subnets by zone, placement groups and nodes per group (GPUs, EFA), each UltraServer's
    NVLink domain, FSx and its S3 associations (a team's bucket drawn as itself), the Slurm head node or HyperPod's
    controller and login group, Prometheus and Grafana. Needs graphviz's `dot`; calls no AWS.

    Example: fmcluster diagram default --out docs/default.png
    """
    _, plan, _ = _load(project, Output.text)
    target = out_file or default_out(plan.project, "diagram.png")
    if target.suffix.lower() not in (".png", ".svg"):
        err.print(f"error: {target} must end in .png or .svg", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(2)
    if shutil.which("dot") is None:
        if optional:
            err.print(f"diagram skipped: graphviz's `dot` is not installed (apt-get install graphviz, or brew install "
                      f"graphviz; then fmcluster diagram {project})", highlight=False, markup=False, soft_wrap=True)
            return
        err.print("error: graphviz's `dot` is not installed (hint: apt-get install graphviz, or brew install graphviz)",
                  highlight=False, markup=False)
        raise typer.Exit(1)
    target.parent.mkdir(parents=True, exist_ok=True)
    render(model.build(plan), target)
    out.print(f"wrote {target}", highlight=False, markup=False)
