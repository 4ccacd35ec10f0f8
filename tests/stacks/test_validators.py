"""Real validators over every synthesized template: cfn-lint (errors and warnings) and cdk-nag (AwsSolutions)."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

import pytest
from cfnlint.api import ManualArgs, lint
from cfnlint.config import ConfigMixIn
from cfnlint.decode.decode import decode_str
from cfnlint.runner import Runner
from cfnlint.version import __version__ as cfnlint_version
from support import ALL_FILES, ROOT, Synthesized
from support.cleancache import clean_dir, digest

from fmcluster import config

DEFAULT_LINT_REGION = "us-east-1"
"""Templates of projects that name no Region are checked against this one."""

LINT_LEVELS = ["E", "W"]
"""Errors and warnings (cfn-lint's default, stated so a config change cannot drop warnings); not informational."""

IGNORED_WHEN: dict[str, tuple[str, str]] = {
    # rule id -> (only for templates containing this text, why)
    "E3628": ("p6e-gb200.36xlarge", ("cfn-lint 1.58's per-Region instance-type lists lack p6e-gb200.36xlarge, which "
                                     "is sold only as UltraServer capacity blocks; every other instance type is checked")),
    "E3644": ("ml.p6e-gb200.36xlarge", ("cfn-lint 1.58's AWS::SageMaker::Cluster instance-type list lacks "
                                        "ml.p6e-gb200.36xlarge, which boto3's ClusterInstanceType enum (the API's own "
                                        "list) has; the deployability layer checks it against that enum")),
}

KNOWN_WARNINGS: dict[tuple[str, str, str], str] = {
    # (stack, logical id, rule id) -> the defect; each becomes a strict xfail below, so the fix that
    # removes it turns into a failure that asks for the entry's removal.
}

REGIONS = {p.name: p.region or DEFAULT_LINT_REGION for p in (config.parse(f.read_text()).project for f in ALL_FILES)}


def _lint_regions(stack: str) -> list[str]:
    project = stack.rsplit("-", 1)[0]
    return [REGIONS[project]]


@functools.cache
def _runner(regions: tuple[str, ...], ignored: tuple[str, ...]) -> Runner:
    """One cfn-lint runner per configuration: building one loads every rule (most of a lint's time), and a runner
    validates any number of templates, as the cfn-lint CLI does with several files."""
    return Runner(ConfigMixIn(regions=list(regions), ignore_checks=list(ignored), include_checks=LINT_LEVELS))


def _lint(stack: str, template: dict) -> list[tuple[tuple[str, str, str], str]]:
    """cfn-lint's matches as ((stack, logical id, rule id), text), in the project's Region."""
    text = json.dumps(template)
    ignored = [rule for rule, (needle, _) in IGNORED_WHEN.items() if needle in text]
    decoded, errors = decode_str(text)
    assert not errors and decoded is not None, errors
    matches = list(_runner(tuple(_lint_regions(stack)), tuple(ignored)).validate_template(decoded))
    out = []
    for m in matches:
        logical_id = str(m.path[1]) if len(m.path) > 1 and m.path[0] == "Resources" else "/".join(map(str, m.path))
        out.append(((stack, logical_id, m.rule.id), f"{stack}: {m.rule.id} {m.message[:300]} ({'/'.join(map(str, m.path))})"))
    return out


@pytest.fixture(scope="session")
def lint_matches(synthesized: Synthesized) -> list[tuple[tuple[str, str, str], str]]:
    """cfn-lint's matches over every template. A template this cfn-lint version found clean (no match at all) with the
    same Region, levels and ignored rules is not linted again (support/cleancache.py: only clean results are kept, so
    a changed template is always linted; FMC_LINT_CACHE=off for a cold run)."""
    assert synthesized.templates
    cache = clean_dir("cfn-lint", cfnlint_version)
    found = []
    for name, template in sorted(synthesized.templates.items()):
        text = json.dumps(template)
        key = digest(name, *_lint_regions(name), *LINT_LEVELS, *(f"{rule}:{needle}" for rule, (needle, _) in
                                                               sorted(IGNORED_WHEN.items())), text)
        if cache is not None and (cache / key).exists():
            continue
        matches = _lint(name, template)
        found += matches
        if not matches and cache is not None:
            cache.mkdir(parents=True, exist_ok=True)
            (cache / key).touch()
    return found


def test_cfn_lint_clean(lint_matches: list) -> None:
    """Zero errors and zero warnings, each template checked in its project's Region."""
    unexpected = [text for key, text in lint_matches if key not in KNOWN_WARNINGS]
    assert not unexpected, "\n".join(unexpected)


if KNOWN_WARNINGS:  # an empty parametrization would be reported as a skip
    @pytest.mark.parametrize("key", [
        pytest.param(key, id="/".join(key), marks=pytest.mark.xfail(strict=True, reason=f"{why} (issue 10)"))
        for key, why in KNOWN_WARNINGS.items()])
    def test_known_lint_warning(lint_matches: list, key: tuple[str, str, str]) -> None:
        assert not [text for k, text in lint_matches if k == key]


@pytest.mark.synth
def test_cfn_lint_clean_without_cdk_json_context(tmp_path: Path) -> None:
    """The default project built in-process with no cdk.json feature flags (as ``synthesize`` does for
    the replacement guard): a default that the flags hide (the LogDeliveryWrite ACL, W3045) shows here."""
    from fmcluster.stacks.app import synthesize  # starts jsii: only for this test

    templates = synthesize(ROOT / "projects" / "default.yaml", tmp_path)
    found = [text for name, template in sorted(templates.items()) for key, text in _lint(name, template)
             if key not in KNOWN_WARNINGS]
    assert not found, "\n".join(found)


BAD_LAUNCH_TEMPLATE = {"Type": "AWS::EC2::LaunchTemplate", "Properties": {
    "LaunchTemplateData": {"NetworkInterfaces": [{"InterfaceType": 7, "DeviceIndex": "zero"}]}}}


def test_cfn_lint_would_catch_a_bad_template() -> None:
    bad = {"Resources": {"Lt": BAD_LAUNCH_TEMPLATE}}
    assert lint(json.dumps(bad), config=ManualArgs(regions=["us-east-1"]))


def test_the_shared_runner_finds_what_a_fresh_one_finds(synthesized: Synthesized) -> None:
    """Reusing a cfn-lint runner across templates changes nothing: real templates with a bad launch template planted
    (a GB200 one, whose instance-type rules are ignored, and two others), linted by runners that have seen other
    templates, give what cfn-lint's own one-shot API gives them."""
    names = [n for n in sorted(synthesized.templates) if "gb200" in json.dumps(synthesized.templates[n])][:1]
    names += ["default-cluster", "default-observability"]
    for name in names:
        planted = copy.deepcopy(synthesized.templates[name])
        planted["Resources"]["PlantedLt"] = BAD_LAUNCH_TEMPLATE
        text = json.dumps(planted)
        ignored = [rule for rule, (needle, _) in IGNORED_WHEN.items() if needle in text]
        fresh = lint(text, config=ManualArgs(regions=_lint_regions(name), ignore_checks=ignored,
                                             include_checks=LINT_LEVELS))
        shared = [text for _, text in _lint(name, planted)]
        assert shared and any("PlantedLt" in line for line in shared)
        assert shared == [f"{name}: {m.rule.id} {m.message[:300]} ({'/'.join(map(str, m.path))})" for m in fresh]


def test_cfn_lint_reports_warnings_too(synthesized: Synthesized) -> None:
    """A warning planted in a real template (the legacy LogDeliveryWrite ACL, W3045) is reported."""
    stack = "default-storage"
    template = copy.deepcopy(synthesized.template(stack))
    bucket = next(lid for lid, r in template["Resources"].items() if r["Type"] == "AWS::S3::Bucket")
    assert (stack, bucket, "W3045") not in [key for key, _ in _lint(stack, template)]
    template["Resources"][bucket]["Properties"]["AccessControl"] = "LogDeliveryWrite"
    assert (stack, bucket, "W3045") in [key for key, _ in _lint(stack, template)]


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
