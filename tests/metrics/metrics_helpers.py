"""Shared by the metrics tests: parse a scrape, seed the store, a Claude CLI result."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.engine import Engine
from sqlmodel import select

from telemetry.metrics.catalogue import CATALOGUE
from telemetry.store import aggregates
from telemetry.store.db import session_scope
from telemetry.store.models import Finding, SessionIndex
from telemetry.timeutil import utcnow

REPO = Path(__file__).resolve().parents[2]
DASHBOARDS = REPO / "dashboards"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> tuple[Samples, dict[str, tuple[str, str]]]:
    """(samples by (name, labels), {family: (type, help)}) of a text-format scrape."""
    samples: Samples = {}
    families: dict[str, tuple[str, str]] = {}
    for fam in text_string_to_metric_families(text):
        families[fam.name] = (fam.type, fam.documentation)
        for s in fam.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples, families


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def claude_result(uuid: str, model: str, cost: float, tokens: Mapping[str, int]) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "uuid": uuid,
        "is_error": False,
        "num_turns": 3,
        "total_cost_usd": cost,
        "usage": dict(tokens),
        "modelUsage": {model: {"costUSD": cost}},
    }


def seed_session(
    engine: Engine,
    session_id: str,
    *,
    agent: str,
    model: str,
    tokens: Mapping[str, int],
    cost: float,
    findings: Mapping[str, str] = {},
) -> None:
    """What the archiver's indexing writes for a new session: the row, its findings, the counters."""
    now = utcnow()
    with session_scope(engine) as db:
        db.add(
            SessionIndex(
                session_id=session_id,
                root_session_id=session_id,
                agent=agent,
                model=model,
                archived_at=now,
                archive_path=f"archives/{session_id}.json",
                content_hash="0" * 64,
                cost_usd=cost,
            )
        )
        row = db.exec(select(SessionIndex).where(SessionIndex.session_id == session_id)).one()
        for kind, n in tokens.items():
            setattr(row, f"tokens_{kind}", n)
        src = {"source": "opencode"}
        aggregates.bump(db, "sessions_archived_total", {"agent": agent, **src}, 1)
        for kind, n in tokens.items():
            aggregates.bump(
                db, "session_tokens_total", {"agent": agent, "model": model, "kind": kind, **src}, n
            )
        aggregates.bump(db, "session_cost_usd_total", {"agent": agent, "model": model, **src}, cost)
        for detector, verdict in findings.items():
            db.add(Finding(session_id=session_id, detector=detector, verdict=verdict, detected_at=now))
            aggregates.bump(db, "findings_total", {"detector": detector, "verdict": verdict}, 1)


def bump(engine: Engine, metric: str, labels: Mapping[str, str], delta: float) -> None:
    with session_scope(engine) as db:
        aggregates.bump(db, metric, labels, delta)


RULES = DASHBOARDS / "prometheus" / "octel-alerts.yml"
RULE_TESTS = DASHBOARDS / "prometheus" / "octel-alerts.test.yml"
_SERIES = re.compile(r"\b(octel_[a-z0-9_]+)")


def metric_families(expr: str) -> set[str]:
    """The catalogue names a PromQL expression reads (histogram series map to their family)."""
    hist = {m.name for m in CATALOGUE if m.kind == "histogram"}
    out = set()
    for name in _SERIES.findall(expr):
        stem = re.sub(r"_(bucket|sum|count)$", "", name)
        out.add(stem if stem in hist else name)
    return out


def alert_rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    return [r for g in doc["groups"] for r in g["rules"] if "alert" in r]


DASHBOARD = DASHBOARDS / "grafana" / "octel-fleet.json"


def dashboard_exprs() -> list[str]:
    """Every query of every panel of the dashboard."""
    doc = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in doc["panels"] if p["type"] != "row" for t in p["targets"]]


def dashboard_variables() -> dict[str, str]:
    """Each query variable of the dashboard (not the data source) and the value Grafana puts
    in a query when "All" is chosen."""
    doc = json.loads(DASHBOARD.read_text())
    return {v["name"]: v["allValue"] for v in doc["templating"]["list"] if v["type"] != "datasource"}


def grafana_expr(expr: str, interval: str = "1m") -> str:
    """A dashboard query as Grafana sends it with every variable at "All"."""
    for name, value in dashboard_variables().items():
        expr = expr.replace(f"${name}", value)
    return expr.replace("$__rate_interval", interval)


def seed_live(engine: Engine, server: str = "http://oc:4096", minutes_ago: float = 20.0) -> None:
    """Live rows for every `octel_live_*` metric: an ask, a quiet busy session and a retry storm
    that began ``minutes_ago``, and a stuck live finding."""
    from datetime import timedelta

    from telemetry.store.live_models import LiveSession

    now = utcnow()
    then = now - timedelta(minutes=minutes_ago)
    stuck = [{"detector": "permission_deadlock", "verdict": "stuck", "score": 1.0, "evidence": {}}]
    rows = [
        LiveSession(
            server=server,
            session_id="ses_ask",
            state="waiting_permission",
            state_since=then,
            permission="bash",
            permission_patterns=["git push *"],
            permission_asked_at=then,
            verdict="stuck",
            worst_detector="permission_deadlock",
            findings=stuck,
        ),
        LiveSession(
            server=server, session_id="ses_busy", state="busy", state_since=then, last_activity_at=then
        ),
        LiveSession(
            server=server, session_id="ses_retry", state="retrying", state_since=then, retry_attempt=6
        ),
        LiveSession(server=server, session_id="ses_idle", state="idle", state_since=then),
    ]
    with session_scope(engine) as db:
        for r in rows:
            r.first_seen_at = r.updated_at = now
            r.generation, r.server_version = 1, "1.18.33"  # what the server runs (octel_live_server_info)
            db.add(r)
