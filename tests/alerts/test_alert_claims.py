"""One delivery per firing across processes (SQLite and PostgreSQL): two delivery queues on one
store, each with its deliverer thread, facing one loopback receiver, as two watchers raising the
same fleet-day budget alert; a watcher restarted while its alert fires; the claim chain itself
(repeats, resolves, two processes that read the same last claim); and delivery going on when
the store cannot be asked."""

from __future__ import annotations

from typing import Any

import pytest
from alert_receiver import Posted, Receiver
from hypothesis import HealthCheck, given
from hypothesis import settings as settings_
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from sqlmodel import select

import telemetry.alert_claim as alert_claim
from archiver.redact import Redactor
from telemetry.alert_claim import claim_alerts, claim_key
from telemetry.alerting import start_alerts
from telemetry.settings import Settings
from telemetry.store.alert_models import AlertDelivery
from telemetry.store.db import session_scope
from telemetry.timeutil import as_utc
from tower.alert import Alert
from tower.alert_delivery import Deliverer, QueueSink, WebhookChannel

RED = Redactor(b"k" * 32, [])
KEY = "budget:fleet_day:fleet $200:2026-12-02:breach"
FLEET = Alert(KEY, "budget", "critical", "the fleet on 2026-12-02 spent $201.0000", path="/costs")
T0 = 1_796_000_000.0


def _keys(posts: list[Posted]) -> list[str]:
    return [a["key"] for p in posts for a in p.json()["alerts"]]


def _rows(engine: Engine) -> list[AlertDelivery]:
    with session_scope(engine, write=False) as db:
        return list(db.exec(select(AlertDelivery).order_by(AlertDelivery.id)))  # type: ignore[arg-type]


def _claim(engine: Engine, alert: Alert, now: float) -> dict[str, int]:
    return claim_alerts(engine, [alert], now, channel="webhook_json", repeat_s=300.0, redactor=RED)


def test_two_watchers_raising_one_alert_send_it_once(settings: Settings, engine: Engine) -> None:
    with Receiver() as rx:
        s = settings.model_copy(update={"alert_webhook_url": rx.url})
        one, two = (start_alerts(s, engine, RED, group_wait_s=0.05) for _ in range(2))
        one.sink.emit(FLEET)
        two.sink.emit(FLEET)
        one.close()
        two.close()
        assert _keys(rx.posts) == [KEY]
    (row,) = _rows(engine)
    assert (row.outcome, row.state, row.status_code, row.attempts) == ("sent", "firing", 200, 1)
    assert row.claim_key == claim_key(KEY, 0)


def test_a_restarted_watcher_does_not_send_a_firing_alert_again_and_sends_its_resolve(
    settings: Settings, engine: Engine
) -> None:
    with Receiver() as rx:
        s = settings.model_copy(update={"alert_webhook_url": rx.url})
        first = start_alerts(s, engine, RED, group_wait_s=0.05)
        first.sink.emit(FLEET)
        first.close()
        again = start_alerts(s, engine, RED, group_wait_s=0.05)  # the watcher restarted
        again.sink.emit(FLEET)
        again.sink.emit(FLEET.resolved())
        again.close()
        states = [a["state"] for p in rx.posts for a in p.json()["alerts"]]
    assert states == ["firing", "resolved"]
    assert [(r.state, r.outcome) for r in _rows(engine)] == [("firing", "sent"), ("resolved", "sent")]


def test_the_claims_of_one_alert_form_a_chain(engine: Engine) -> None:
    assert _claim(engine, FLEET.resolved(), T0) == {}  # nobody was told it fired
    (first,) = _claim(engine, FLEET, T0).values()
    assert _claim(engine, FLEET, T0 + 10) == {}  # sent, by whichever process
    (reminder,) = _claim(engine, FLEET, T0 + 300).values()
    (resolve,) = _claim(engine, FLEET.resolved(), T0 + 301).values()
    assert _claim(engine, FLEET.resolved(), T0 + 302) == {}
    assert [(r.id, r.state, r.outcome) for r in _rows(engine)] == [
        (first, "firing", "sending"),
        (reminder, "firing", "sending"),
        (resolve, "resolved", "sending"),
    ]
    assert [r.claim_key for r in _rows(engine)] == [
        claim_key(KEY, 0),
        claim_key(KEY, first),
        claim_key(KEY, reminder),
    ]


def test_of_two_processes_that_read_the_same_last_claim_one_sends(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    due = alert_claim._due
    other: dict[str, int] = {}

    def raced(*a: Any) -> bool:  # the other process claims between this one's read and write
        monkeypatch.setattr(alert_claim, "_due", due)
        other.update(_claim(engine, FLEET, T0))
        return due(*a)

    monkeypatch.setattr(alert_claim, "_due", raced)
    assert _claim(engine, FLEET, T0) == {}
    (row,) = _rows(engine)
    assert other == {KEY: row.id}


def test_a_store_that_cannot_be_asked_does_not_stop_delivery() -> None:
    def down(_alerts: Any, _now: float) -> dict[str, int]:
        raise OSError("the store is down")

    with Receiver() as rx:
        d = Deliverer(
            QueueSink(), [WebhookChannel(rx.url, "", fmt="json", secret=b"")], lambda *_: None, claim=down
        )
        (sent,) = d.step([FLEET])
        assert (sent.outcome, sent.claim_id, _keys(rx.posts)) == ("sent", None, [KEY])


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
@settings_(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(looks=st.lists(st.tuples(st.sampled_from(["firing", "resolved"]), st.integers(0, 400)), max_size=12))
def test_whoever_looks_the_claims_follow_the_dedup_rule(engine: Engine, looks: list[tuple[str, int]]) -> None:
    """Looks at one alert in any order (by any process: the claim reads only the store): a
    delivery is claimed exactly when the dedup rule says, against the last claim."""
    with session_scope(engine) as db:
        for r in db.exec(select(AlertDelivery)):
            db.delete(r)
    now, want, last = T0, [], None
    for state, dt in looks:
        now += dt
        _claim(engine, FLEET if state == "firing" else FLEET.resolved(), now)
        if (last is None and state == "firing") or (
            last is not None and (last[0] != state or now - last[1] >= 300.0)
        ):
            last = (state, now)
            want.append((state, round(now, 3)))
    assert [(r.state, round(as_utc(r.sent_at).timestamp(), 3)) for r in _rows(engine)] == want
