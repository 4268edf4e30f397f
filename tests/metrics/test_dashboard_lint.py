"""The Grafana dashboard and provisioning files, linted (no Grafana runs in the tests)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from metrics_helpers import (
    DASHBOARD,
    DASHBOARDS,
    dashboard_exprs,
    dashboard_variables,
    grafana_expr,
    metric_families,
)
from realparts import require, which
from script_modules import load_script

from archiver.record import SOURCE_KINDS
from telemetry.metrics.catalogue import CATALOGUE, by_name

PROVISIONING = DASHBOARDS / "grafana" / "provisioning"
DS = {"type": "prometheus", "uid": "${datasource}"}
# React panels; the Angular ones (graph, singlestat, table-old, …) are gone from Grafana 11.
REACT_PANELS = {"row", "timeseries", "stat", "table", "bargauge", "gauge", "text", "barchart", "piechart"}
_RATED = re.compile(r"\brate\(\s*(octel_[a-z0-9_]+)(\{[^}]*\})?\[\$__rate_interval\]\s*\)")
_ANY = re.compile(r"\b(octel_[a-z0-9_]+)")


def _dashboard() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return doc


def _panels() -> list[dict[str, Any]]:
    return [p for p in _dashboard()["panels"] if p["type"] != "row"]


def _exprs() -> list[str]:
    return dashboard_exprs()


def _counter_series() -> set[str]:
    out = {m.name for m in CATALOGUE if m.kind == "counter"}
    out |= {f"{m.name}_bucket" for m in CATALOGUE if m.kind == "histogram"}
    return out


def test_json_is_what_the_builder_writes() -> None:
    mod = load_script(DASHBOARDS / "build_dashboard.py")
    assert _dashboard() == json.loads(json.dumps(mod.build())), "run python dashboards/build_dashboard.py"


def test_classic_model_with_a_pinned_schema_and_a_datasource_variable() -> None:
    d = _dashboard()
    assert isinstance(d["schemaVersion"], int) and d["schemaVersion"] <= 41
    assert "__inputs" not in d and "__requires" not in d
    assert d["uid"] == "octel-fleet" and d["id"] is None
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"


def test_source_variable_offers_exactly_the_source_kinds() -> None:
    """The session metrics' `source` label is a fixed set: the variable lists it, "All" also
    keeps series counted before the label existed (`source=""`), and every query that reads a
    session metric filters by it."""
    (source,) = [v for v in _dashboard()["templating"]["list"] if v["name"] == "source"]
    assert tuple(source["query"].split(",")) == SOURCE_KINDS and source["includeAll"] and source["multi"]
    assert dashboard_variables() == {"source": ".*"}
    for expr in dashboard_exprs():
        assert set(re.findall(r"\$(\w+)", expr)) <= {"__rate_interval", *dashboard_variables()}, expr
        if "octel_session_" in expr or "octel_sessions_" in expr:
            assert 'source=~"$source"' in expr, expr


def test_every_panel_uses_the_datasource_variable() -> None:
    for p in _dashboard()["panels"]:
        assert p["datasource"] == DS, p["title"]
        for t in p.get("targets", []):
            assert t["datasource"] == DS, p["title"]
        for inner in p.get("panels", []):  # panels of a collapsed row
            assert inner["datasource"] == DS


def test_panels_are_react_with_units_and_descriptions() -> None:
    ids = [p["id"] for p in _dashboard()["panels"]]
    assert len(ids) == len(set(ids))
    for p in _dashboard()["panels"]:
        assert p["type"] in REACT_PANELS, p["type"]
        assert "angular" not in json.dumps(p).lower()
    for p in _panels():
        assert p["fieldConfig"]["defaults"].get("unit"), p["title"]
        assert len(p.get("description", "")) > 10, p["title"]
        assert p["targets"], p["title"]


def test_no_two_panels_overlap() -> None:
    cells: dict[tuple[int, int], str] = {}
    for p in _dashboard()["panels"]:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = p["title"]


@pytest.mark.parametrize("expr", _exprs())
def test_counters_only_under_rate_over_the_rate_interval(expr: str) -> None:
    counters = _counter_series()
    rated = [m.group(1) for m in _RATED.finditer(expr)]
    named = [n for n in _ANY.findall(expr) if n in counters]
    assert sorted(rated) == sorted(named), expr
    assert not re.search(r"\b(irate|increase|delta|deriv)\(", expr)


def test_every_metric_a_query_names_is_in_the_catalogue_and_every_one_is_shown() -> None:
    used: set[str] = set()
    for expr in _exprs():
        used |= metric_families(expr)
    for name in used:
        by_name(name)
    assert used == {m.name for m in CATALOGUE}


def test_provisioning_files() -> None:
    ds = yaml.safe_load((PROVISIONING / "datasources" / "octel-prometheus.yaml").read_text())
    assert ds["apiVersion"] == 1
    (source,) = ds["datasources"]
    assert source["type"] == "prometheus" and source["url"].startswith("http")
    dash = yaml.safe_load((PROVISIONING / "dashboards" / "octel.yaml").read_text())
    (provider,) = dash["providers"]
    assert provider["type"] == "file" and provider["options"]["path"].startswith("/")


@pytest.mark.prometheus
def test_every_query_parses_in_promtool(tmp_path: Path) -> None:
    exe = which("promtool")
    require(exe is not None, "promtool", "apt-get install prometheus")
    assert exe is not None
    rules = [
        {"record": f"octel_dashboard:query_{i}", "expr": grafana_expr(e)} for i, e in enumerate(_exprs())
    ]
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    r = subprocess.run([exe, "check", "rules", str(path)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
