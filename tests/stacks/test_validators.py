"""Real validators over every synthesized template: cfn-lint and cdk-nag (AwsSolutions)."""

from __future__ import annotations

import json

from cfnlint.api import ManualArgs, lint
from support import ALL_FILES, Synthesized

from fmcluster import config

DEFAULT_LINT_REGION = "us-east-1"
"""Templates of projects that name no Region are checked against this one."""

IGNORED_WHEN: dict[str, tuple[str, str]] = {
    # rule id -> (only for templates containing this text, why)
    "E3628": ("p6e-gb200.36xlarge", "cfn-lint 1.58's per-Region instance-type lists lack p6e-gb200.36xlarge, which is "
                                    "sold only as UltraServer capacity blocks; every other instance type is checked"),
}

REGIONS = {p.name: p.region or DEFAULT_LINT_REGION for p in (config.parse(f.read_text()).project for f in ALL_FILES)}


def _lint_regions(stack: str) -> list[str]:
    project = stack.rsplit("-", 1)[0]
    return [REGIONS[project]]


def test_cfn_lint_clean(synthesized: Synthesized) -> None:
    """Zero errors and zero warnings, each template checked in its project's Region."""
    assert synthesized.templates
    findings = []
    for name, template in sorted(synthesized.templates.items()):
        text = json.dumps(template)
        ignored = [rule for rule, (needle, _) in IGNORED_WHEN.items() if needle in text]
        matches = lint(text, config=ManualArgs(regions=_lint_regions(name), ignore_checks=ignored))
        findings += [f"{name}: {m.rule.id} {m.message[:300]} ({'/'.join(map(str, m.path))})" for m in matches]
    assert not findings, "\n".join(findings)


def test_cfn_lint_would_catch_a_bad_template() -> None:
    bad = {"Resources": {"Lt": {"Type": "AWS::EC2::LaunchTemplate", "Properties": {
        "LaunchTemplateData": {"NetworkInterfaces": [{"InterfaceType": 7, "DeviceIndex": "zero"}]}}}}}
    assert lint(json.dumps(bad), config=ManualArgs(regions=["us-east-1"]))


def test_cdk_nag_no_unacknowledged_findings(synthesized: Synthesized) -> None:
    reports = synthesized.validation_report.get("pluginReports", [])
    assert [r["pluginName"] for r in reports] == ["AwsSolutions"], synthesized.error
    report = reports[0]
    violations = [f"{v['ruleName']}: {[c['constructPath'] for c in v['violatingConstructs']]}" for v in report["violations"]]
    assert not violations and report["conclusion"] == "success", "\n".join(violations)
    assert synthesized.error is None


def test_cdk_nag_acknowledgements_have_reasons(synthesized: Synthesized) -> None:
    for suppressed in synthesized.validation_report["pluginReports"][0]["suppressedViolations"]:
        assert len(suppressed.get("reason", "")) > 30, suppressed["ruleName"]
