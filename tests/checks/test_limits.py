"""The stack-limits check counts what the cluster stack really holds: compared with a synthesized one."""

from __future__ import annotations

from pathlib import Path

from fmcluster.stacks.app import synthesize
from support import BASE

from fmcluster import config
from fmcluster.checks.limits import cluster_stack_counts
from fmcluster.plan import make_plan

GROUPS = BASE + "".join(f"  - {{name: g{i}, instance_type: p5.48xlarge, count: 1, placement_group: {pg}}}\n"
                        for i, pg in enumerate(["true", "false", "true"]))


def test_the_counted_resources_and_outputs_are_the_synthesized_ones(tmp_path: Path) -> None:
    (tmp_path / "demo.yaml").write_text(GROUPS)
    template = synthesize(tmp_path / "demo.yaml", tmp_path / "out")["demo-cluster"]
    resources = [r for r in template["Resources"].values() if r["Type"] != "AWS::CDK::Metadata"]
    counted = cluster_stack_counts(make_plan(config.parse(GROUPS).project))
    assert counted == (len(resources), len(template.get("Outputs", {}))) == (12, 7)  # train, g0 and g2 with placement groups, g1 without
