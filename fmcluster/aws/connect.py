"""``fmcluster connect``: the node a Session Manager session starts on, and the ``aws ssm start-session`` command.

Which nodes an orchestrator has is its trait (:attr:`fmcluster.orchestrators.Orchestrator.nodes`); how each finds
one is in its own module, named in :data:`TARGETS`, the aws stage's table of orchestrators. The session itself is
the AWS CLI's: ``aws ssm start-session --target TARGET`` calls ``ssm:StartSession`` and hands the answer to the
Session Manager plugin (AWS Systems Manager user guide, "Start a session", AWS CLI; "Install the Session Manager
plugin for the AWS CLI").
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from typing import Any

from fmcluster.aws import hyperpod, hyperpod_eks, parallelcluster, pcs, selfmanaged
from fmcluster.aws.nodes import Target
from fmcluster.aws.stackstate import StackState
from fmcluster.plan import Plan

TargetFinder = Callable[[Callable[[str], Any], Plan, Callable[[], StackState], str, "str | None"], Target]
"""(clients, the plan, a reader of the ``NAME-cluster`` stack, the node (a trait's :attr:`~fmcluster.orchestrators.
Orchestrator.nodes`), a compute group or None) -> where the session starts. A finder refuses a node the project
does not have (:class:`~fmcluster.aws.nodes.NodeNotInProject`) before it reads the stack or calls AWS."""

TARGETS: dict[str, TargetFinder] = {
    "none": selfmanaged.target,
    "parallelcluster": parallelcluster.target,
    "hyperpod": hyperpod.target,
    "pcs": pcs.target,
    "hyperpod-eks": hyperpod_eks.target,
}
"""The aws stage's table of orchestrators (:mod:`fmcluster.orchestrators`): how each finds the node to connect to."""

PLUGIN = "session-manager-plugin"
PLUGIN_DOCS = ("https://docs.aws.amazon.com/systems-manager/latest/userguide/"
               "session-manager-working-with-install-plugin.html")
ACTION = "ssm:StartSession"
"""What the AWS CLI calls to start the session (its permission, not one fmcluster's own code calls)."""


def session_command(target: str, region: str, profile: str | None = None) -> list[str]:
    """``aws ssm start-session --target TARGET --region REGION [--profile PROFILE]``."""
    return ["aws", "ssm", "start-session", "--target", target, "--region", region,
            *(["--profile", profile] if profile else [])]


def missing_tools() -> Sequence[str]:
    """What the session needs and PATH lacks: the AWS CLI, the Session Manager plugin."""
    return [tool for tool in ("aws", PLUGIN) if shutil.which(tool) is None]
