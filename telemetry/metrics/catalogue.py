"""Every metric `/metrics` exposes, declared once as data (docs/metrics.md lists the same).

Names follow Prometheus conventions: the `octel_` prefix, base units (`_seconds`, `_usd` for
money), `_total` only on counters, `_timestamp_seconds` rather than an age. Labels are bounded
sets (driver, host, agent, model, kind, state, detector, verdict, route template, source), never ids,
paths or free text.

`source` says where a metric comes from: `aggregate` (a write-time counter; this entry is its
only declaration, `telemetry.store.aggregates.COUNTERS` is derived from it, `octel_` stripped),
`store` (a gauge read from the daemon and open-cycle rows at scrape time) or `process` (this
process's own request metrics, prometheus-client's Counter and Histogram).
"""

from __future__ import annotations

from typing import get_args

from archiver.metrics import TOKEN_KINDS
from telemetry.metrics.counters import AGGREGATE_METRICS
from telemetry.metrics.metric import Metric
from telemetry.queries.fleet_models import DaemonState

__all__ = [
    "CATALOGUE",
    "DAEMON_STATES",
    "HTTP_LATENCY_BUCKETS",
    "TOKEN_KINDS",
    "Metric",
    "by_name",
]


DAEMON_STATES: tuple[str, ...] = get_args(DaemonState)
# Seconds; octel's own handlers answer in milliseconds, a slow store in seconds.
HTTP_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


_D = ("driver", "host")

CATALOGUE: tuple[Metric, ...] = (
    # Fleet health, from the daemon rows at scrape time.
    Metric(
        "octel_daemon_up",
        "gauge",
        "1 unless the daemon's process is known to have exited (state down).",
        _D,
        "store",
    ),
    Metric(
        "octel_daemon_state",
        "gauge",
        "1 for the daemon's current state (ok, running_long_worker, down, unknown), 0 for the others.",
        (*_D, "state"),
        "store",
    ),
    Metric(
        "octel_daemon_heartbeat_timestamp_seconds",
        "gauge",
        "Unix time of the daemon's last heartbeat (HTTP or heartbeat file).",
        _D,
        "store",
    ),
    Metric(
        "octel_running_long_worker",
        "gauge",
        "1 when the daemon has a cycle in flight, a heartbeat older than the threshold and a live "
        "process: a long-running worker.",
        _D,
        "store",
    ),
    Metric(
        "octel_daemon_cycle_in_flight",
        "gauge",
        "1 when the daemon has a cycle in flight.",
        _D,
        "store",
    ),
    Metric(
        "octel_cycles_in_flight",
        "gauge",
        "Cycles begun and not yet finished, per driver.",
        ("driver",),
        "store",
    ),
    Metric(
        "octel_cycle_in_flight_oldest_start_timestamp_seconds",
        "gauge",
        "Unix time the oldest unfinished cycle of the driver began.",
        ("driver",),
        "store",
    ),
    Metric(
        "octel_long_worker_threshold_seconds",
        "gauge",
        "Heartbeat age past which a daemon with a cycle in flight counts as a long-running worker.",
        (),
        "store",
    ),
    Metric(
        "octel_store_up",
        "gauge",
        "1 when this scrape could read the store, 0 when it could not (store metrics then missing).",
        (),
        "store",
    ),
    # The live view (`live_session` rows that `octel watch` keeps), at scrape time.
    Metric(
        "octel_live_sessions",
        "gauge",
        "Sessions octel watch follows now, by server and state (busy, retrying, waiting_permission, "
        "compacting, running_tool, idle, interrupted, errored, deleted, unknown); every session of a "
        "server whose watcher's lease ran out is unknown, and out of the other live gauges. Claude Code "
        "sessions followed by `octel watch --claude-dir DIR` have the server `claude-code:DIR` (one "
        "needing input is `waiting_permission`).",
        ("server", "state"),
        "store",
    ),
    Metric(
        "octel_live_server_info",
        "gauge",
        "1 for each server octel watch follows, naming the OpenCode it runs: generation (1, 2) and "
        "version as the server's probe said; join the other live series on server.",
        ("server", "generation", "version"),
        "store",
    ),
    Metric(
        "octel_live_ask_oldest_timestamp_seconds",
        "gauge",
        "Unix time the oldest permission ask still unanswered was asked, by server.",
        ("server",),
        "store",
    ),
    Metric(
        "octel_live_busy_oldest_activity_timestamp_seconds",
        "gauge",
        "Unix time of the last activity of the busy session quiet the longest, by server.",
        ("server",),
        "store",
    ),
    Metric(
        "octel_live_retry_attempt_max",
        "gauge",
        "Highest provider retry attempt of a session retrying now, by server.",
        ("server",),
        "store",
    ),
    Metric(
        "octel_live_retry_oldest_timestamp_seconds",
        "gauge",
        "Unix time the session retrying the longest began retrying, by server.",
        ("server",),
        "store",
    ),
    Metric(
        "octel_live_findings",
        "gauge",
        "Live sessions with a finding now, by detector and verdict (suspect, stuck).",
        ("detector", "verdict"),
        "store",
    ),
    # Quota windows declared in OCTEL_BUDGETS_FILE, from the spend they count at scrape time.
    Metric(
        "octel_quota_used_ratio",
        "gauge",
        "Share of a declared quota window used so far, by provider and window (the key's label, "
        "or the window).",
        ("provider", "window"),
        "store",
    ),
    Metric(
        "octel_quota_exhausted_forecast_seconds",
        "gauge",
        "Seconds until the quota window runs out at the last 24 hours' rate (0: run out); absent "
        "when it does not run out at that rate.",
        ("provider", "window"),
        "store",
    ),
    Metric(
        "octel_quota_reset_timestamp_seconds",
        "gauge",
        "Unix time a monthly quota window renews; with the forecast, a rule fires when it runs out first.",
        ("provider", "window"),
        "store",
    ),
    # Write-time counters: telemetry/metrics/counters.py.
    *AGGREGATE_METRICS,
    # This process's own requests (reset when the process restarts, as process metrics do).
    Metric(
        "octel_http_requests_total",
        "counter",
        "HTTP requests this octel process answered, by method, route template and status code.",
        ("method", "route", "status"),
        "process",
    ),
    Metric(
        "octel_http_request_duration_seconds",
        "histogram",
        "Time this octel process took to answer HTTP requests, by method and route template.",
        ("method", "route"),
        "process",
    ),
)


def by_name(name: str) -> Metric:
    """The catalogue entry called `name`; KeyError if there is none."""
    for m in CATALOGUE:
        if m.name == name:
            return m
    raise KeyError(name)
