"""The alert rules load in promtool and each alert has a test that fires it and one that does not."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml
from metrics_helpers import RULE_TESTS, RULES, alert_rules, metric_families
from realparts import require, which

from telemetry.metrics.catalogue import by_name

HOW = "apt-get install prometheus (Debian's package ships promtool)"
REQUIRED = {
    "OctelRunningLongWorker",
    "OctelDaemonDown",
    "OctelHeartbeatStale",
    "OctelCycleFailureRatioHigh",
    "OctelStuckSessionDetected",
    "OctelCostBurnHigh",
}


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    exe = which("promtool")
    require(exe is not None, "promtool", HOW)
    assert exe is not None
    return subprocess.run(
        [exe, *args], capture_output=True, text=True, timeout=120, cwd=RULES.parent, check=False
    )


@pytest.mark.prometheus
def test_promtool_check_rules() -> None:
    r = _promtool("check", "rules", RULES.name)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in r.stdout


@pytest.mark.prometheus
def test_promtool_unit_tests_pass() -> None:
    r = _promtool("test", "rules", RULE_TESTS.name)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout


def _rule_tests() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULE_TESTS.read_text())
    assert doc["rule_files"] == [RULES.name]
    cases: list[dict[str, Any]] = [c for t in doc["tests"] for c in t["alert_rule_test"]]
    return cases


def test_every_alert_is_tested_firing_and_quiet() -> None:
    cases = _rule_tests()
    for rule in alert_rules():
        mine = [c for c in cases if c["alertname"] == rule["alert"]]
        assert any(c["exp_alerts"] for c in mine), f"{rule['alert']} never fires in a test"
        assert any(not c["exp_alerts"] for c in mine), f"{rule['alert']} never stays quiet in a test"


def test_rule_tests_keep_to_the_basic_format() -> None:
    text = RULE_TESTS.read_text()
    for newer in ("start_timestamp", "fuzzy_compare"):
        assert newer not in text


def test_alerts_tell_the_operator_what_to_do() -> None:
    rules = alert_rules()
    assert {r["alert"] for r in rules} >= REQUIRED
    for r in rules:
        assert r["labels"]["severity"] in {"warning", "critical"}
        ann = r["annotations"]
        assert ann["summary"] and "\n" not in ann["summary"]
        assert len(ann["description"]) > 80, r["alert"]
        # Only catalogue metrics (and Prometheus' own `up`) in expressions.
        for name in metric_families(r["expr"]):
            by_name(name)


@pytest.mark.prometheus
def test_example_prometheus_config_is_valid() -> None:
    r = _promtool("check", "config", "prometheus.yml")
    assert r.returncode == 0, r.stdout + r.stderr
