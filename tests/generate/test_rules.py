"""Alert rules: promtool checks and unit tests, and that every alert is tested both ways.

The promtool test files under ``rules/`` name ``rules.yaml``: the harness writes the combined rule
file (shipped files + the catalog group) next to copies of them. Expected alerts give their labels
and ``summary``; the harness adds each rule's static annotations (``runbook``) so the runbook text
lives in one place. To run promtool by hand: ``write_promtool_suite(DIR)``, then
``promtool test rules DIR/*.test.yaml``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from support.promql import metric_names

from fmcluster import catalog
from fmcluster.generate import metrics, rules

HERE = Path(__file__).parent
TEST_FILES = sorted((HERE / "rules").glob("*.test.yaml"))


def _static_annotations() -> dict[str, dict[str, str]]:
    return {
        rule["alert"]: {k: v for k, v in rule["annotations"].items() if "{{" not in v}
        for rule in rules.alert_rules()
    }


def write_promtool_suite(directory: Path) -> list[Path]:
    """Write ``rules.yaml`` and the completed test files into ``directory``; return the test files."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "rules.yaml").write_text(rules.rules_yaml(), encoding="utf-8")
    static = _static_annotations()
    written = []
    for source in TEST_FILES:
        suite = yaml.safe_load(source.read_text(encoding="utf-8"))
        for case in suite["tests"]:
            for check in case.get("alert_rule_test", []):
                for alert in check.get("exp_alerts") or []:
                    annotations = alert.setdefault("exp_annotations", {})
                    for key, value in static.get(check["alertname"], {}).items():
                        annotations.setdefault(key, value)
        target = directory / source.name
        target.write_text(yaml.safe_dump(suite, sort_keys=False, width=200), encoding="utf-8")
        written.append(target)
    return written


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def test_rules_pass_promtool_check(promtool: str, tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(rules.rules_yaml(), encoding="utf-8")
    result = _run([promtool, "check", "rules", str(path)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_each_shipped_rule_file_passes_promtool_check(promtool: str) -> None:
    result = _run([promtool, "check", "rules", *map(str, rules.rule_files())])
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_unit_tests_pass(promtool: str, tmp_path: Path) -> None:
    files = write_promtool_suite(tmp_path)
    result = _run([promtool, "test", "rules", *map(str, files)])
    assert result.returncode == 0, result.stdout + result.stderr


def _checks() -> list[dict]:
    out = []
    for source in TEST_FILES:
        suite = yaml.safe_load(source.read_text(encoding="utf-8"))
        assert suite.get("rule_files") == ["rules.yaml"], f"{source.name}: rule_files must be [rules.yaml]"
        for case in suite["tests"]:
            out.extend(case.get("alert_rule_test", []))
    return out


def test_every_alert_has_a_case_that_fires_it_and_one_that_must_not() -> None:
    checks = _checks()
    fires = {c["alertname"] for c in checks if c.get("exp_alerts")}
    quiet = {c["alertname"] for c in checks if not c.get("exp_alerts")}
    alerts = set(rules.alert_names())
    assert not alerts - fires, f"alerts with no test case that fires them: {sorted(alerts - fires)}"
    assert not alerts - quiet, f"alerts with no test case where they must stay quiet: {sorted(alerts - quiet)}"
    assert not (fires | quiet) - alerts, f"tests name unknown alerts: {sorted((fires | quiet) - alerts)}"


def test_every_alert_has_severity_summary_naming_the_node_and_a_runbook() -> None:
    for rule in rules.alert_rules():
        name = rule["alert"]
        assert rule.get("labels", {}).get("severity") in rules.SEVERITIES, name
        summary = rule.get("annotations", {}).get("summary", "")
        runbook = rule.get("annotations", {}).get("runbook", "")
        assert "{{ $labels.node }}" in summary or "{{ $labels.device }}" in summary, f"{name}: summary names no node"
        if "{{ $labels.gpu }}" not in summary and name.startswith("GpuXid"):
            pytest.fail(f"{name}: an XID summary must name the GPU")
        assert len(runbook) > 60 and "{{" not in runbook, f"{name}: runbook must be plain text saying what to do"


def test_xid_alerts_cover_the_xids_facts_names() -> None:
    xids = {rule["labels"].get("xid") for rule in rules.alert_rules() if "xid" in rule.get("labels", {})}
    assert xids == {"48", "63", "64", "74", "79", "94", "95"}


def test_catalog_group_states_every_catalog_gpu_count() -> None:
    group = rules.catalog_rule_group()
    recorded = {r["labels"]["instance_type"]: r for r in group["rules"]}
    assert set(recorded) == set(catalog.CATALOG)
    for name, entry in catalog.CATALOG.items():
        assert recorded[name]["expr"] == f"vector({entry.gpus})"
        assert recorded[name]["labels"]["expected_gpus"] == str(entry.gpus)


def test_rule_files_hard_code_no_gpu_count() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in rules.rule_files())
    assert not re.search(r"<\s*8\b|==\s*8\b|vector\(\s*[48]\s*\)", text), "take GPU counts from the catalog group"


def test_dcgm_fields_the_rules_read_are_in_the_counters_file() -> None:
    used = {n for rule in rules.alert_rules() for n in metric_names(rule["expr"]) if n.startswith("DCGM_")}
    assert used <= metrics.dcgm_metrics()
    for field in ("DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
                  "DCGM_FI_DEV_THERMAL_VIOLATION", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
                  "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_PROF_SM_ACTIVE"):
        assert field in metrics.dcgm_fields(), field


def test_optional_groups_can_be_left_out(tmp_path: Path) -> None:
    names = {g["name"] for g in rules.rule_groups(fsx=False, slurm=False)}
    assert rules.FSX_GROUP not in names and not [n for n in names if "slurm" in n]
    assert "fmcluster-gpu-xid" in names and rules.CATALOG_GROUP in names
    assert rules.SLURM_GROUP in {g["name"] for g in rules.rule_groups()}


def test_extra_rule_files_are_appended_and_checked(tmp_path: Path) -> None:
    extra = tmp_path / "mine.yaml"
    extra.write_text("groups:\n  - name: mine\n    rules:\n      - record: job:up:sum\n        expr: sum(up)\n")
    names = [g["name"] for g in rules.rule_groups(extra_files=[extra])]
    assert names[-1] == "mine"
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: []\n")
    with pytest.raises(rules.RuleFileError, match="groups"):
        rules.rule_groups(extra_files=[bad])
    clash = tmp_path / "clash.yaml"
    clash.write_text("groups:\n  - name: fmcluster-efa\n    rules: []\n")
    with pytest.raises(rules.RuleFileError, match="unique"):
        rules.rule_groups(extra_files=[clash])


def test_alertmanager_definition_routes_to_sns(tmp_path: Path) -> None:
    text = rules.alertmanager_definition("arn:aws:sns:us-east-1:123456789012:alerts", "us-east-1")
    config = yaml.safe_load(yaml.safe_load(text)["alertmanager_config"])
    sns = config["receivers"][0]["sns_configs"][0]
    assert sns["topic_arn"] == "arn:aws:sns:us-east-1:123456789012:alerts"
    assert sns["sigv4"] == {"region": "us-east-1"}
    assert config["route"]["receiver"] == "sns"


