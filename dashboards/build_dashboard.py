"""Write grafana/octel-fleet.json, octel's Grafana dashboard, from the panel list below.

Run `python dashboards/build_dashboard.py` after editing; a test fails when the JSON and this
file disagree. Classic dashboard JSON with a pinned schemaVersion, a `datasource` variable on
every panel (file provisioning does not fill `__inputs`), React panels only, counters under
`rate(…[$__rate_interval])`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["OUT", "build", "main"]

OUT = Path(__file__).parent / "grafana" / "octel-fleet.json"
SCHEMA_VERSION = 39
DS = {"type": "prometheus", "uid": "${datasource}"}
RI = "[$__rate_interval]"
FAILED = 'terminal_state=~"failed|error|errored|crashed|timeout|timed_out|aborted"'
# The session metrics' `source` (which agent wrote the session), chosen by the `source` variable.
SRC = 'source=~"$source"'

Panel = dict[str, Any]


def _targets(queries: list[tuple[str, str]], instant: bool = False) -> list[dict[str, Any]]:
    out = []
    for i, (expr, legend) in enumerate(queries):
        t: dict[str, Any] = {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": "ABCDEFGH"[i]}
        if instant:
            t |= {"instant": True, "range": False, "format": "table"}
        out.append(t)
    return out


def _stat(title: str, desc: str, expr: str, unit: str = "none", red_at: float | None = None) -> Panel:
    steps: list[dict[str, Any]] = [{"color": "green", "value": None}]
    if red_at is not None:
        steps.append({"color": "red", "value": red_at})
    return {
        "type": "stat",
        "title": title,
        "description": desc,
        "targets": _targets([(expr, "")]),
        "fieldConfig": {
            "defaults": {"unit": unit, "thresholds": {"mode": "absolute", "steps": steps}},
            "overrides": [],
        },
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}},
        "w": 4,
    }


def _series(title: str, desc: str, unit: str, *queries: tuple[str, str], w: int = 12) -> Panel:
    return {
        "type": "timeseries",
        "title": title,
        "description": desc,
        "targets": _targets(list(queries)),
        "fieldConfig": {"defaults": {"unit": unit, "min": 0}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}, "tooltip": {"mode": "multi"}},
        "w": w,
    }


def _rate(metric: str, selector: str = "") -> str:
    return f"rate({metric}{selector}{RI})"


def _quantile(q: float, bucket: str, by: str) -> str:
    return f"histogram_quantile({q}, sum by ({by}, le) ({_rate(bucket)}))"


def _cache_ratio(tokens: str, extra: str = "") -> str:
    """Cache reads over every prompt token: input excludes cache reads and writes."""
    hits = "sum by (agent) (" + _rate(tokens, '{kind="cache_read"' + extra + "}") + ")"
    prompt = "sum by (agent) (" + _rate(tokens, '{kind=~"input|cache_read|cache_write"' + extra + "}") + ")"
    return f"{hits} / {prompt}"


def _row(title: str) -> Panel:
    return {"type": "row", "title": title, "collapsed": False, "panels": [], "w": 24}


def _panels() -> list[Panel]:
    return [
        _row("Fleet health"),
        _stat(
            "Daemons up",
            "Dispatcher processes not known to have exited (octel_daemon_up).",
            "sum(max by (driver, host) (octel_daemon_up)) or vector(0)",
        ),
        _stat(
            "Daemons down",
            "Dispatcher processes whose pid is gone. Restart them; see the OctelDaemonDown alert.",
            "sum(1 - min by (driver, host) (octel_daemon_up)) or vector(0)",
            red_at=1,
        ),
        _stat(
            "Running long workers",
            "Daemons with a cycle in flight, a stale heartbeat and a live process.",
            "sum(max by (driver, host) (octel_running_long_worker)) or vector(0)",
            red_at=1,
        ),
        _stat(
            "Daemons busy",
            "Daemons that report a cycle in flight right now.",
            "sum(max by (driver, host) (octel_daemon_cycle_in_flight)) or vector(0)",
        ),
        _stat(
            "Cycles in flight",
            "Cycles begun and not yet finished, over all drivers.",
            "sum(max by (driver) (octel_cycles_in_flight)) or vector(0)",
        ),
        _stat(
            "Store reachable",
            "1 when octel could read its store at the last scrape; 0 means every store metric is missing.",
            "min(octel_store_up)",
        ),
        {
            "type": "table",
            "title": "Daemon states",
            "description": "Each dispatcher's state: ok, running_long_worker, down or unknown.",
            "targets": _targets(
                [("max by (driver, host, state) (octel_daemon_state == 1)", "")], instant=True
            ),
            "fieldConfig": {"defaults": {"unit": "none"}, "overrides": []},
            "options": {"showHeader": True},
            "transformations": [
                {"id": "organize", "options": {"excludeByName": {"Time": True, "Value": True}}}
            ],
            "w": 12,
        },
        _series(
            "Heartbeat age",
            "Seconds since each daemon's last heartbeat, against the long-worker threshold.",
            "s",
            (
                "time() - max by (driver, host) (octel_daemon_heartbeat_timestamp_seconds)",
                "{{driver}} {{host}}",
            ),
            ("max(octel_long_worker_threshold_seconds)", "long-worker threshold"),
        ),
        _row("Running now"),
        _stat(
            "Asks unanswered",
            "Sessions waiting on a permission ask nobody answered (octel watch); see OctelAskUnanswered.",
            'sum(max by (server) (octel_live_sessions{state="waiting_permission"})) or vector(0)',
            red_at=1,
        ),
        _stat(
            "Oldest ask",
            "How long the oldest unanswered permission ask has waited.",
            "time() - min(octel_live_ask_oldest_timestamp_seconds)",
            unit="s",
            red_at=600,
        ),
        _stat(
            "Busy, quiet the longest",
            "Seconds since the last activity of the busy session quiet the longest; see OctelBusyInactive.",
            "time() - min(octel_live_busy_oldest_activity_timestamp_seconds)",
            unit="s",
            red_at=900,
        ),
        _stat(
            "Highest retry attempt",
            "Highest provider retry attempt of a session retrying now; see OctelRetryStorm.",
            "max(octel_live_retry_attempt_max) or vector(0)",
            red_at=5,
        ),
        _stat(
            "Retrying for",
            "How long the session retrying the longest has been retrying.",
            "time() - min(octel_live_retry_oldest_timestamp_seconds)",
            unit="s",
            red_at=600,
        ),
        _stat(
            "Live stuck findings",
            "Running sessions a detector judges stuck now; see OctelLiveSessionStuck.",
            'sum(max by (detector) (octel_live_findings{verdict="stuck"})) or vector(0)',
            red_at=1,
        ),
        _series(
            "Live sessions by state",
            "Sessions octel watch follows now, by state (busy, retrying, waiting_permission, …).",
            "short",
            ("sum by (state) (max by (server, state) (octel_live_sessions))", "{{state}}"),
        ),
        _series(
            "Live sessions by OpenCode generation",
            "Sessions octel watch follows now, by the generation (1, 2) of the OpenCode their server runs.",
            "short",
            (
                "sum by (generation) (sum by (server) (max by (server, state) (octel_live_sessions))"
                " * on (server) group_left (generation)"
                " max by (server, generation) (octel_live_server_info))",
                "generation {{generation}}",
            ),
        ),
        _series(
            "Live findings by detector and verdict",
            "Running sessions with a suspect or stuck finding now, by detector.",
            "short",
            ("max by (detector, verdict) (octel_live_findings)", "{{detector}} {{verdict}}"),
        ),
        _row("Cycles and outcomes"),
        _series(
            "Cycles finished by terminal state",
            "Cycles finished per minute, by driver and terminal state.",
            "opm",
            (
                f"60 * sum by (driver, terminal_state) (rate(octel_cycles_total{RI}))",
                "{{driver}} {{terminal_state}}",
            ),
        ),
        _series(
            "Cycles finished by worker outcome",
            "Cycles finished per minute, by driver and worker outcome.",
            "opm",
            (
                f"60 * sum by (driver, worker_outcome) (rate(octel_cycles_total{RI}))",
                "{{driver}} {{worker_outcome}}",
            ),
        ),
        _series(
            "Cycle failure ratio",
            "Share of finished cycles whose terminal state is a failure, per driver (alert above 25%).",
            "percentunit",
            (
                f"sum by (driver) (rate(octel_cycles_total{{{FAILED}}}{RI}))"
                f" / sum by (driver) (rate(octel_cycles_total{RI}))",
                "{{driver}}",
            ),
        ),
        _series(
            "Cycle duration",
            "Median and 95th percentile of cycle duration, per driver.",
            "s",
            (
                _quantile(0.5, "octel_cycle_duration_seconds_bucket", "driver"),
                "{{driver}} p50",
            ),
            (
                _quantile(0.95, "octel_cycle_duration_seconds_bucket", "driver"),
                "{{driver}} p95",
            ),
        ),
        _row("Long workers"),
        _series(
            "Running long workers",
            "1 while a daemon runs a long worker: cycle in flight, stale heartbeat, live process.",
            "bool",
            ("max by (driver, host) (octel_running_long_worker)", "{{driver}} {{host}}"),
            w=8,
        ),
        _series(
            "Oldest cycle in flight",
            "Age of each driver's oldest unfinished cycle.",
            "s",
            (
                "time() - min by (driver) (octel_cycle_in_flight_oldest_start_timestamp_seconds)",
                "{{driver}}",
            ),
            w=8,
        ),
        _series(
            "Cycles in flight per driver",
            "Cycles begun and not yet finished, per driver.",
            "short",
            ("max by (driver) (octel_cycles_in_flight)", "{{driver}}"),
            w=8,
        ),
        _row("Cost and tokens"),
        _series(
            "Cost burn by agent and model",
            "US dollars per hour of archived sessions of the chosen sources (opencode, claude_code), "
            "and of Claude Code CLI runs (alert above the budget).",
            "currencyUSD",
            (
                f"3600 * sum by (agent, model, source) (rate(octel_session_cost_usd_total{{{SRC}}}{RI}))",
                "{{agent}} {{model}} {{source}}",
            ),
            (
                f"3600 * sum by (agent, model) (rate(octel_agent_run_cost_usd_total{RI}))",
                "{{agent}} {{model}} (claude run)",
            ),
        ),
        _series(
            "Cost burn by source",
            "US dollars per hour of archived sessions by source, and of Claude Code CLI runs. A run "
            "whose conversation was kept is in both its run and its claude_code sessions.",
            "currencyUSD",
            (
                f"3600 * sum by (source) (rate(octel_session_cost_usd_total{{{SRC}}}{RI}))",
                "{{source}} sessions",
            ),
            (f"3600 * sum(rate(octel_agent_run_cost_usd_total{RI}))", "claude_code runs"),
        ),
        _series(
            "Tokens by kind",
            "Tokens per second by kind (input, output, reasoning, cache_read, cache_write) and source.",
            "suffix: tok/s",
            (f"sum by (kind, source) (rate(octel_session_tokens_total{{{SRC}}}{RI}))", "{{kind}} {{source}}"),
            (f"sum by (kind) (rate(octel_agent_run_tokens_total{RI}))", "{{kind}} (claude run)"),
        ),
        _series(
            "Tokens by agent and model",
            "Tokens per second of every kind, by agent and model.",
            "suffix: tok/s",
            (f"sum by (agent, model) (rate(octel_session_tokens_total{{{SRC}}}{RI}))", "{{agent}} {{model}}"),
            (
                f"sum by (agent, model) (rate(octel_agent_run_tokens_total{RI}))",
                "{{agent}} {{model}} (claude)",
            ),
        ),
        _series(
            "Claude Code runs",
            "Claude Code CLI runs reported per minute, by agent and outcome.",
            "opm",
            (f"60 * sum by (agent, outcome) (rate(octel_agent_runs_total{RI}))", "{{agent}} {{outcome}}"),
        ),
        _row("Cache"),
        _series(
            "Cache hit ratio",
            "Cache-read tokens over all prompt tokens (input + cache read + cache write), by agent.",
            "percentunit",
            (
                _cache_ratio("octel_session_tokens_total", "," + SRC),
                "{{agent}}",
            ),
            (
                _cache_ratio("octel_agent_run_tokens_total"),
                "{{agent}} (claude)",
            ),
            w=24,
        ),
        _row("Detector findings and archiving"),
        _series(
            "Findings by detector and verdict",
            "Detector findings per minute; stuck ones raise OctelStuckSessionDetected.",
            "opm",
            (f"60 * sum by (detector, verdict) (rate(octel_findings_total{RI}))", "{{detector}} {{verdict}}"),
            w=8,
        ),
        _series(
            "Sessions archived",
            "Sessions archived for the first time per minute, by agent and source.",
            "opm",
            (
                f"60 * sum by (agent, source) (rate(octel_sessions_archived_total{{{SRC}}}{RI}))",
                "{{agent}} {{source}}",
            ),
            w=8,
        ),
        _series(
            "Archive failures",
            "Sessions an archive run could not write, by error kind, and session trees not archived "
            "in full (`octel lost`), by reason; per minute.",
            "opm",
            (f"60 * sum by (error_kind) (rate(octel_archive_failures_total{RI}))", "{{error_kind}}"),
            (f"60 * sum by (reason) (rate(octel_trees_lost_total{RI}))", "trees lost {{reason}}"),
            w=8,
        ),
        _series(
            "Trace export",
            "Spans of session trees sent to the OTLP endpoint, and spans or trees given up on, per minute.",
            "opm",
            (f"60 * sum(rate(octel_otel_spans_exported_total{RI}))", "spans exported"),
            (f"60 * sum(rate(octel_otel_spans_dropped_total{RI}))", "spans dropped"),
            (f"60 * sum by (reason) (rate(octel_otel_trees_dropped_total{RI}))", "trees dropped {{reason}}"),
            w=12,
        ),
        _series(
            "Watch actions",
            "Actions of octel watch's opt-in rules per minute (asks rejected, sessions aborted, notices), "
            "by rule and outcome; skipped ones found the session had moved on.",
            "opm",
            (f"60 * sum by (rule, outcome) (rate(octel_actions_total{RI}))", "{{rule}} {{outcome}}"),
            w=12,
        ),
        _series(
            "Alert deliveries",
            "Alerts delivered to Alertmanager and webhooks per minute, by channel and outcome, and "
            "alerts dropped because the delivery queue was full.",
            "opm",
            (
                f"60 * sum by (channel, outcome) (rate(octel_alert_deliveries_total{RI}))",
                "{{channel}} {{outcome}}",
            ),
            (f"60 * sum(rate(octel_alert_deliveries_dropped_total{RI}))", "dropped"),
            w=12,
        ),
        _series(
            "Provider quotas",
            "Share of each declared quota window used (OCTEL_BUDGETS_FILE), and the hours until it runs "
            "out at the last 24 hours' rate or until a monthly window renews.",
            "none",
            ("max by (provider, window) (octel_quota_used_ratio)", "{{provider}} {{window}} used"),
            (
                "min by (provider, window) (octel_quota_exhausted_forecast_seconds) / 3600",
                "{{provider}} {{window}} hours left",
            ),
            (
                "(max by (provider, window) (octel_quota_reset_timestamp_seconds) - time()) / 3600",
                "{{provider}} {{window}} hours to reset",
            ),
            w=12,
        ),
        _series(
            "Sessions archived by OpenCode generation",
            "OpenCode sessions archived per minute, by the server's API generation (1 or 2).",
            "opm",
            (
                f"60 * sum by (generation) (rate(octel_opencode_sessions_archived_total{RI}))",
                "generation {{generation}}",
            ),
            w=12,
        ),
        _row("octel service"),
        _series(
            "HTTP requests",
            "Requests octel answered per second, by route template and status.",
            "reqps",
            (f"sum by (route, status) (rate(octel_http_requests_total{RI}))", "{{route}} {{status}}"),
        ),
        _series(
            "HTTP latency (p95)",
            "95th percentile of octel's response time, by route template.",
            "s",
            (
                _quantile(0.95, "octel_http_request_duration_seconds_bucket", "route"),
                "{{route}}",
            ),
        ),
    ]


def _layout(panels: list[Panel]) -> list[Panel]:
    x = y = row_h = 0
    out = []
    for i, p in enumerate(panels, start=1):
        w = p.pop("w")
        h = 1 if p["type"] == "row" else (4 if p["type"] == "stat" else 8)
        if x + w > 24 or p["type"] == "row":
            x, y, row_h = 0, y + row_h, 0
        out.append({"id": i, "datasource": DS, "gridPos": {"h": h, "w": w, "x": x, "y": y}, **p})
        x, row_h = x + w, max(row_h, h)
        if p["type"] == "row":
            x, y, row_h = 0, y + h, 0
    return out


def build() -> dict[str, Any]:
    return {
        "id": None,
        "uid": "octel-fleet",
        "title": "octel fleet",
        "description": "Fleet health, running now, cycles, long workers, cost, tokens, cache, findings.",
        "tags": ["octel"],
        "timezone": "browser",
        "editable": True,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "label": "Prometheus",
                    "type": "datasource",
                    "query": "prometheus",
                    "current": {},
                    "hide": 0,
                    "refresh": 1,
                    "regex": "",
                    "options": [],
                },
                {
                    # a fixed set (archiver.record.SOURCE_KINDS); All also keeps series counted
                    # before the label existed (source="")
                    "name": "source",
                    "label": "Source",
                    "type": "custom",
                    "query": "opencode,claude_code",
                    "multi": True,
                    "includeAll": True,
                    "allValue": ".*",
                    "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
                    "hide": 0,
                    "options": [],
                },
            ]
        },
        "annotations": {"list": []},
        "links": [],
        "panels": _layout(_panels()),
    }


def main() -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(build(), indent=2) + "\n")


if __name__ == "__main__":
    main()
