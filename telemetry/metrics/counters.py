"""The write-time counters of the catalogue (`telemetry.store.aggregates` derives its `COUNTERS`),
kept in the store, never lowered by restarts or pruning: `source` is `aggregate` for each."""

from __future__ import annotations

from detectors.findings import VERDICTS
from telemetry.metrics.metric import Metric
from tower.actions import OUTCOMES

__all__ = ["AGGREGATE_METRICS"]

AGGREGATE_METRICS: tuple[Metric, ...] = (
    Metric(
        "octel_cycles_total",
        "counter",
        "Dispatcher cycles finished, by driver, terminal state and worker outcome.",
        ("driver", "terminal_state", "worker_outcome"),
        "aggregate",
    ),
    Metric(
        "octel_cycle_duration_seconds",
        "histogram",
        "Duration of finished dispatcher cycles, from begin to finish.",
        ("driver",),
        "aggregate",
    ),
    Metric(
        "octel_agent_runs_total",
        "counter",
        "Claude Code CLI runs reported, by agent, model and outcome (success or error).",
        ("agent", "model", "outcome"),
        "aggregate",
    ),
    Metric(
        "octel_agent_run_cost_usd_total",
        "counter",
        "Cost in US dollars of Claude Code CLI runs, by agent and model.",
        ("agent", "model"),
        "aggregate",
    ),
    Metric(
        "octel_agent_run_tokens_total",
        "counter",
        "Tokens of Claude Code CLI runs, by agent, model and kind (input, output, cache_read, cache_write).",
        ("agent", "model", "kind"),
        "aggregate",
    ),
    Metric(
        "octel_sessions_archived_total",
        "counter",
        "Sessions archived for the first time, by agent and source (opencode, claude_code).",
        ("agent", "source"),
        "aggregate",
    ),
    Metric(
        "octel_opencode_sessions_archived_total",
        "counter",
        "OpenCode sessions archived for the first time, by the server's API generation (1, 2).",
        ("generation",),
        "aggregate",
    ),
    Metric(
        "octel_archive_failures_total",
        "counter",
        "Sessions an archive run could not write, by error kind.",
        ("error_kind",),
        "aggregate",
    ),
    Metric(
        "octel_trees_lost_total",
        "counter",
        "Session trees octel could not archive in full, by reason (incomplete: archived from the "
        "watcher's mirror with something missing, or before its last turns; not_written; unseen: "
        "deleted before any event).",
        ("reason",),
        "aggregate",
        fill=("reason", ("incomplete", "not_written", "unseen")),
    ),
    Metric(
        "octel_session_tokens_total",
        "counter",
        "Tokens of archived sessions, by agent, model, kind "
        "(input, output, reasoning, cache_read, cache_write) and source (opencode, claude_code).",
        ("agent", "model", "kind", "source"),
        "aggregate",
    ),
    Metric(
        "octel_session_cost_usd_total",
        "counter",
        "Cost in US dollars of archived sessions (own cost, children counted once), "
        "by agent, model and source (opencode, claude_code).",
        ("agent", "model", "source"),
        "aggregate",
    ),
    Metric(
        "octel_findings_total",
        "counter",
        "Detector findings recorded, by detector and verdict (healthy, suspect, stuck).",
        ("detector", "verdict"),
        "aggregate",
        fill=("verdict", VERDICTS),
    ),
    Metric(
        "octel_actions_total",
        "counter",
        "Actions of `octel watch` rules on live sessions, by rule (deny_asks_after, "
        "abort_retries_after, on_stuck, budget, and the janitor's delete_archived_after; person: "
        "an ask answered by hand) and outcome (done, skipped, gone, failed, notified).",
        ("rule", "outcome"),
        "aggregate",
        fill=("outcome", OUTCOMES),
    ),
    Metric(
        "octel_otel_spans_exported_total",
        "counter",
        "Spans of session trees an OTLP endpoint accepted (octel export otel, or continuous export).",
        (),
        "aggregate",
    ),
    Metric(
        "octel_otel_spans_dropped_total",
        "counter",
        "Spans of session trees given up on after the retries (the OTLP endpoint down or refusing).",
        (),
        "aggregate",
    ),
    Metric(
        "octel_otel_trees_dropped_total",
        "counter",
        "Session trees not exported because the background export queue was full, by reason.",
        ("reason",),
        "aggregate",
    ),
    Metric(
        "octel_alert_deliveries_total",
        "counter",
        "Alert deliveries after their last try, by channel (alertmanager, webhook_json, webhook_slack) "
        "and outcome (sent, failed).",
        ("channel", "outcome"),
        "aggregate",
        fill=("outcome", ("sent", "failed")),
    ),
    Metric(
        "octel_alert_deliveries_dropped_total",
        "counter",
        "Alerts not delivered because the delivery queue was full.",
        (),
        "aggregate",
    ),
)
