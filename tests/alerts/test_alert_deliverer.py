"""The deliverer against a loopback receiver: retries with backoff, refusals not repeated,
grouping per tree, signed Slack payloads, drops of a full queue, and every delivery recorded in
the store (redacted, counted) and shown by `octel alerts list --json` and `/api/v1/alerts`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from alert_receiver import Receiver
from sqlalchemy.engine import Engine
from sqlmodel import Session

from archiver.redact import Redactor
from telemetry.alerting import record_deliveries, start_alerts
from telemetry.queries.alerts import list_alert_deliveries
from telemetry.settings import Settings
from telemetry.store.aggregates import read_all
from telemetry.store.db import session_scope
from tower.alert import Alert
from tower.alert_delivery import AlertmanagerChannel, Deliverer, Delivery, QueueSink, WebhookChannel
from tower.alert_payloads import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify

SECRET = "sk-live-0123456789abcdefghij"


def _alert(key: str, tree: str | None, state: str = "firing", summary: str = "stuck") -> Alert:
    return Alert(key, "stuck", "warning", summary, state, tree, key.split(":")[1], path=f"/#/session/{key}")  # type: ignore[arg-type]


class Recorded:
    def __init__(self) -> None:
        self.done: list[Delivery] = []
        self.dropped = 0

    def __call__(self, done: list[Delivery], dropped: int) -> None:
        self.done += done
        self.dropped += dropped


def test_a_failing_receiver_is_tried_again_with_backoff_then_sent() -> None:
    rec = Recorded()
    with Receiver((503, 500, 200)) as rx:
        waits: list[float] = []
        d = Deliverer(
            QueueSink(), [AlertmanagerChannel(rx.url, "", 60)], rec, pause=lambda s: bool(waits.append(s))
        )
        (done,) = d.step([_alert("stuck:s1:doom_loop", "t1")])
        assert (done.outcome, done.status, done.attempts, done.channel) == ("sent", 200, 3, "alertmanager")
        assert [p.path for p in rx.posts] == ["/api/v2/alerts"] * 3
        assert waits == [0.5, 1.0]  # the wait doubles after each failure
    assert rec.done == [done]


def test_a_receiver_that_never_answers_well_fails_after_the_tries() -> None:
    with Receiver((502,)) as rx:
        d = Deliverer(
            QueueSink(), [AlertmanagerChannel(rx.url, "", 60)], Recorded(), retries=3, pause=lambda _s: False
        )
        (done,) = d.step([_alert("stuck:s1:doom_loop", "t1")])
        assert (done.outcome, done.status, done.attempts) == ("failed", 502, 3) and len(rx.posts) == 3


def test_a_refusal_is_final_and_recorded_as_failed() -> None:
    rec = Recorded()
    with Receiver((400,)) as rx:
        d = Deliverer(QueueSink(), [AlertmanagerChannel(rx.url, "", 60)], rec, pause=lambda _s: False)
        (done,) = d.step([_alert("stuck:s1:doom_loop", "t1")])
        assert (done.outcome, done.status, done.attempts) == ("failed", 400, 1) and "refused" in done.answer
        assert len(rx.posts) == 1


def test_slack_webhooks_group_per_tree_and_are_signed() -> None:
    rec = Recorded()
    with Receiver() as rx:
        ch = WebhookChannel(rx.url + "/hook", "http://console", fmt="slack", secret=b"shh")
        d = Deliverer(QueueSink(), [ch], rec)
        batch = [
            _alert("stuck:a:doom_loop", "t1"),
            _alert("stuck:b:doom_loop", "t2"),
            _alert("stuck:c:x", "t1"),
        ]
        assert len(d.step(batch)) == 3
        assert len(rx.posts) == 2  # one payload per tree
        for p in rx.posts:
            assert verify(
                b"shh", int(p.headers[TIMESTAMP_HEADER.lower()]), p.body, p.headers[SIGNATURE_HEADER.lower()]
            )
        first = rx.posts[0].json()
        assert (
            set(first) == {"text", "blocks"}
            and "tree t1" in first["text"]
            and first["text"].count("firing") == 2
        )
        assert d.step(batch) == []  # the same states again: not within the repeat interval
        assert len(rx.posts) == 2
        d.step([_alert("stuck:a:doom_loop", "t1", "resolved")])
        assert "resolved" in rx.posts[-1].json()["text"]


def test_a_full_queue_drops_and_counts_without_blocking() -> None:
    sink = QueueSink(maxsize=2)
    for i in range(5):
        sink.emit(_alert(f"stuck:s{i}:d", None))
    assert sink.queue.qsize() == 2 and sink.take_dropped() == 3 and sink.take_dropped() == 0


def test_deliveries_are_stored_redacted_counted_and_listed(engine: Engine, tmp_path: Path) -> None:
    redactor = Redactor(b"k" * 32, [SECRET])
    a = _alert("stuck:s1:doom_loop", "t1", summary=f"ran curl -H 'Authorization: {SECRET}'")
    d = Delivery(a, "webhook_json", "failed", 502, f"echo {SECRET}", 4, 1_700_000_000.0)
    with Session(engine) as db:
        record_deliveries(db, [d], 7, redactor=redactor, console="http://c")
        db.commit()
    with session_scope(engine, write=False) as db:
        (row,) = list_alert_deliveries(db, session_id="t1").items
        counters = {(m, tuple(sorted(lb.items()))): v for m, lb, v in read_all(db)}
    assert SECRET not in row.summary and SECRET not in (row.answer or "") and "[REDACTED" in row.summary
    assert (row.attempts, row.status_code, row.outcome, row.link) == (
        4,
        502,
        "failed",
        "http://c/#/session/stuck:s1:doom_loop",
    )
    assert counters[("alert_deliveries_total", (("channel", "webhook_json"), ("outcome", "failed")))] == 1
    assert counters[("alert_deliveries_dropped_total", ())] == 7


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_start_alerts_delivers_and_the_cli_and_api_show_it(settings: Settings, engine: Engine) -> None:
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from cli import app
    from web.app import create_app

    with Receiver() as rx:
        s = settings.model_copy(update={"alert_webhook_url": rx.url, "console_url": "http://c:1"})
        alerts = start_alerts(s, engine, Redactor(b"k" * 32, []), group_wait_s=0.05)
        assert alerts.channels == ["webhook_json"]
        alerts.sink.emit(_alert("stuck:s1:doom_loop", "t1"))
        alerts.close()  # sends what is queued first
        assert rx.posts[0].json()["alerts"][0]["url"] == "http://c:1/#/session/stuck:s1:doom_loop"
    out = CliRunner().invoke(app, ["--database-url", s.db_url, "alerts", "list", "--json"])
    assert out.exit_code == 0, out.output
    (item,) = json.loads(out.output)["items"]
    assert (item["alert_key"], item["channel"], item["outcome"], item["status_code"]) == (
        "stuck:s1:doom_loop",
        "webhook_json",
        "sent",
        200,
    )
    with TestClient(create_app(s)) as client:
        got = client.get("/api/v1/alerts", params={"key": "stuck:s1:doom_loop"}).json()
        assert [i["id"] for i in got["items"]] == [item["id"]]
        assert client.get("/api/v1/alerts", params={"limit": 0}).status_code == 422
