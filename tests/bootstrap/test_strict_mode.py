"""Every rendered script runs in strict mode: its first command is `set -Eeuo pipefail` (or `set -euo pipefail`),
in every bundle of every flavour of every project. A Jinja block glued the health check's strict mode to a
comment line in ParallelCluster and HyperPod bundles (issue 21): nothing less than the first command will do."""

from __future__ import annotations

import pytest
from fmcluster.bootstrap import context, render
from support import PROJECTS

from fmcluster.generate.hyperpod import instance_groups
from fmcluster.plan import make_plan

STRICT = ("set -Eeuo pipefail", "set -euo pipefail")


def first_command(text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return stripped
    return ""


def _scripts(project) -> dict[str, str]:
    out = {}
    for flavour in context.FLAVOURS:
        cluster = make_plan(project).cluster
        if flavour == "hyperpod":
            roles = [(g.compute_group, g.role) for g in instance_groups(cluster)] if cluster.hyperpod else []
        else:
            roles = [(g.name, "compute") for g in cluster.groups] + [(None, "head")]
        for group, role in roles:
            ctx = context.context_for(cluster, group, role, flavour)
            for path, text in render.render_files(ctx).items():
                if path.endswith(".sh") or path.startswith("files/fmcluster-"):
                    out[f"{flavour}/{group}/{role}/{path}"] = text
            out[f"{flavour}/{group}/{role}/bootstrap.sh"] = render.entry_script(ctx, "0" * 64, require_boot_env=False)
    cluster = make_plan(project).cluster
    out["parallelcluster/dispatch.sh"] = render.dispatcher_script(cluster.project, {g.instance_type: "0" * 64 for g in cluster.groups})
    out["parallelcluster/dispatch-metrics.sh"] = render.dispatcher_script(cluster.project, {"head-node": "0" * 64},
                                                                          metrics=True)
    out["parallelcluster/launch.sh"] = render.launcher_script()
    return out


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_every_rendered_script_starts_in_strict_mode(name):
    scripts = _scripts(PROJECTS[name])
    assert scripts
    loose = {path: first_command(text) for path, text in scripts.items()
             if text.startswith("#!") and first_command(text) not in STRICT}
    assert not loose, loose
