"""CDK stacks, one per file, installed as ``fmcluster.stacks``. Each takes its plan section and the
contracts of the stacks before it, never raw YAML or the whole project; :mod:`fmcluster.stacks.app`
builds a project's stacks in order."""

import os
from pathlib import Path


def _project_node() -> None:
    """jsii starts its Node process when ``aws_cdk`` is first imported, from ``JSII_NODE`` or the ``node`` on PATH.
    jsii refuses Node 20 with a page of end-of-life lines, so before any stack module imports ``aws_cdk``, the Node 22
    that ``npm ci`` put in the checkout's node_modules (package.json) goes first on PATH, for jsii and for the
    ``cdk`` the commands run."""
    for base in (Path.cwd(), Path(__file__).resolve().parents[1]):
        node_bin = base / "node_modules" / ".bin"
        if (node_bin / "node").exists():
            if str(node_bin) not in os.environ.get("PATH", "").split(os.pathsep):
                os.environ["PATH"] = f"{node_bin}{os.pathsep}{os.environ.get('PATH', '')}"
            return


_project_node()
