"""The catalogue, the docs, the dashboard and the rules name the same metrics and alerts."""

from __future__ import annotations

import re

from metrics_helpers import DASHBOARDS, REPO, alert_rules, dashboard_exprs, metric_families

from telemetry.metrics.catalogue import CATALOGUE

DOC = REPO / "docs" / "metrics.md"
_ROW = re.compile(r"^\| `(octel_[a-z0-9_]+)` \| (\w+) \| ([^|]*) \| (.*) \|$", re.M)


def test_docs_list_every_metric_with_its_help_text() -> None:
    rows = {m.group(1): (m.group(2), m.group(3), m.group(4)) for m in _ROW.finditer(DOC.read_text())}
    expected = {m.name: (m.kind, ", ".join(m.labels) if m.labels else "—", m.help) for m in CATALOGUE}
    assert rows == expected


def test_docs_and_readme_name_every_alert() -> None:
    doc = DOC.read_text()
    readme = (DASHBOARDS / "README.md").read_text()
    for rule in alert_rules():
        assert f"`{rule['alert']}`" in doc, rule["alert"]
    assert "long-running worker" in readme and "promtool test rules" in readme


def test_dashboard_and_rules_read_only_catalogue_metrics() -> None:
    known = {m.name for m in CATALOGUE}
    for expr in [*dashboard_exprs(), *(r["expr"] for r in alert_rules())]:
        assert metric_families(expr) <= known, expr


def test_failed_states_agree_between_rule_and_dashboard() -> None:
    states = re.compile(r'terminal_state=~"([^"]+)"')
    (rule,) = [r for r in alert_rules() if r["alert"] == "OctelCycleFailureRatioHigh"]
    in_rule = set(states.findall(rule["expr"]))
    in_dashboard = {s for e in dashboard_exprs() for s in states.findall(e)}
    assert in_rule == in_dashboard and len(in_rule) == 1
    documented = set(re.findall(r"`(\w+)`", DOC.read_text().split("counts as failed")[1].split(";")[0]))
    assert documented == set(next(iter(in_rule)).split("|"))
