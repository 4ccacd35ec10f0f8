"""No speed-up may lint less: the real linters' subjects are at least as many as on the day this was written.

Each lint test takes its subjects from one place, and this file counts them there:

- cfn-lint: every stack template of the shared synthesis of every project and example (``synthesized``), which
  tests/stacks/test_validators.py's ``lint_matches`` lints one by one;
- cdk-nag: the same templates, each checked by the AwsSolutions pack (a CDK validation plugin: CDK hands it every
  template of the assembly), whose report the shared synthesis keeps;
- shellcheck: every distinct script of the bootstrap matrix's representatives (tests/bootstrap/test_lint.py), each of
  which the lint plan must cover in full (``support.shellcheck.plan``);
- promtool: the shipped rule files (``promtool check rules``) and the unit-test files (``promtool test rules``) of
  tests/generate/test_rules.py.

A lever that drops subjects (a smaller synthesis, fewer representatives, a rule file left out) fails here; one that
adds examples or steps raises a count, which is fine: raise the floor with it.
"""

from __future__ import annotations

from pathlib import Path

from support import Synthesized, bootstrap_matrix
from support import shellcheck as sc

from fmcluster.generate import rules

FLOORS = {
    "cfn-lint templates": 77,
    "cdk-nag stacks": 77,
    "shellcheck distinct bootstrap scripts": 285,
    "promtool rule files": 6,
    "promtool unit-test files": 6,
}
"""The counts of 2026-12-02 (issue 44), measured on main at 3b39a3d."""

PROMTOOL_TESTS = Path(__file__).parent / "generate" / "rules"


def test_cfn_lint_and_cdk_nag_see_every_stack_of_the_shared_synthesis(synthesized: Synthesized) -> None:
    assert len(synthesized.templates) >= FLOORS["cfn-lint templates"]
    plugins = [r["pluginName"] for r in synthesized.validation_report.get("pluginReports", [])]
    assert plugins == ["AwsSolutions"], "cdk-nag did not run on the shared synthesis"
    assert len(synthesized.templates) >= FLOORS["cdk-nag stacks"]
    acknowledged = {c["constructPath"].split("/", 1)[0]
                    for r in synthesized.validation_report["pluginReports"]
                    for v in r["suppressedViolations"] for c in v["violatingConstructs"]}
    assert acknowledged <= set(synthesized.templates), acknowledged - set(synthesized.templates)


def test_shellcheck_covers_every_distinct_bootstrap_script() -> None:
    subjects = bootstrap_matrix.representative_subjects()
    assert len(subjects) == len(bootstrap_matrix.representative_scripts())
    assert len(subjects) >= FLOORS["shellcheck distinct bootstrap scripts"]
    assert not sc.plan(subjects).covers(subjects)


def test_promtool_checks_every_rule_file_and_unit_test() -> None:
    assert len(rules.rule_files()) >= FLOORS["promtool rule files"]
    assert len(sorted(PROMTOOL_TESTS.glob("*.test.yaml"))) >= FLOORS["promtool unit-test files"]
