"""End to end with real parts: a real `opencode serve` with the scripted fake LLM loops on the
same failing command; `watch_server` with `--on-stuck doom_loop=notify` finds it stuck live
and delivers the alert to a real Alertmanager, whose webhook receiver (the test's capture
server) gets it grouped by tree, then resolved once the run ends. The same alert reaches a
Slack-shaped webhook signed with the shared secret, and every delivery is in the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from alert_receiver import Posted, Receiver
from alertmanager_harness import alertmanager
from driver import idle, start
from fakellm import FakeLLM
from opencode_harness import OpenCode
from pydantic import SecretStr
from watch_thread import Store, Watch

from archiver.redact import Redactor
from telemetry.alerting import start_alerts
from telemetry.queries.actions import list_actions
from telemetry.queries.alerts import list_alert_deliveries
from telemetry.store.db import session_scope
from tower.actions import Rules
from tower.alert_payloads import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify

pytestmark = [pytest.mark.opencode, pytest.mark.alertmanager]

LOOP_CALL = {"name": "read", "arguments": {"filePath": "{dir}/README.md"}}
# the same call over and over, a second apart: stuck by the doom-loop rule (4 in a row) while
# the run goes on, then the run ends and the alert resolves
DOOM = {
    "title": "Loop",
    "turns": [{"text": "Reading.", "tool_calls": [LOOP_CALL], "delay": 1.0}] * 7 + [{"text": "Giving up."}],
}


def _doom(opencode: OpenCode) -> dict[str, Any]:
    script: dict[str, Any] = orjson.loads(
        orjson.dumps(DOOM).replace(b"{dir}", str(opencode.project).encode())
    )
    return script


SECRET = b"webhook-secret-0123456789"


def _am_posts(posts: list[Posted], status: str, root: str) -> list[dict[str, Any]]:
    out = []
    for p in posts:
        body = p.json()
        if p.path == "/am" and body.get("status") == status and body["groupLabels"].get("tree") == root:
            out.append(body)
    return out


def test_a_stuck_session_alerts_through_alertmanager_grouped_then_resolved(
    opencode: OpenCode, fake_llm: FakeLLM, watch: Watch, octel_store: Store, tmp_path: Path
) -> None:
    fake_llm.load(_doom(opencode))
    with Receiver() as rx, alertmanager(tmp_path / "am", rx.url + "/am") as am:
        settings = octel_store.settings.model_copy(
            update={
                "alertmanager_url": am,
                "alert_webhook_url": rx.url + "/slack",
                "alert_webhook_format": "slack",
                "alert_webhook_secret": SecretStr(SECRET.decode()),
                "console_url": "http://octel.test:8765",
            }
        )
        alerts = start_alerts(settings, octel_store.engine, Redactor(b"k" * 32, []))
        rules = Rules(on_stuck=(("doom_loop", "notify"),))
        try:
            with (
                watch(rules=rules, sink=alerts.sink, alerts_to=alerts.describe()),
                httpx.Client(base_url=opencode.url, timeout=15) as http,
            ):
                root = start(http, "Read the file until it is there.")
                (fired,) = rx.wait(lambda ps: _am_posts(ps, "firing", root), timeout=240)[:1]
                (alert,) = [a for a in fired["alerts"] if a["labels"]["session"] == root]
                assert (
                    alert["labels"]["alertname"] == "octel_stuck"
                    and alert["labels"]["detector"] == "doom_loop"
                )
                assert alert["labels"]["tree"] == root and alert["status"] == "firing"
                assert alert["generatorURL"] == f"http://octel.test:8765/#/session/{root}"
                assert alert["annotations"]["console"] == alert["generatorURL"]
                assert fired["groupLabels"] == {"tree": root}
                idle(http, root, timeout=240)
                (resolved,) = rx.wait(lambda ps: _am_posts(ps, "resolved", root), timeout=120)[:1]
                assert [a["status"] for a in resolved["alerts"]] == ["resolved"]
        finally:
            alerts.close()
        slack = [p for p in rx.posts if p.path == "/slack"]
        assert len(slack) >= 2  # fired, then resolved
        for p in slack:
            ts = int(p.headers[TIMESTAMP_HEADER.lower()])
            assert verify(SECRET, ts, p.body, p.headers[SIGNATURE_HEADER.lower()])
            assert set(p.json()) == {"text", "blocks"}
        assert "firing" in slack[0].json()["text"] and "resolved" in slack[-1].json()["text"]
    with session_scope(octel_store.engine, write=False) as db:
        sent = list_alert_deliveries(db, session_id=root).items
        (notice,) = [a for a in list_actions(db).items if a.session_id == root]
    states = {(d.channel, d.state, d.outcome, d.status_code) for d in sent}
    assert {("alertmanager", "firing", "sent", 200), ("alertmanager", "resolved", "sent", 200)} <= states
    assert {("webhook_slack", "firing", "sent", 200), ("webhook_slack", "resolved", "sent", 200)} <= states
    assert (
        notice.outcome == "notified" and "queued for delivery to alertmanager, webhook_slack" in notice.detail
    )


def test_a_watcher_that_stops_first_resolves_its_stuck_alert_through_alertmanager(
    opencode: OpenCode, fake_llm: FakeLLM, watch: Watch, octel_store: Store, tmp_path: Path
) -> None:
    looping = {**DOOM, "turns": [DOOM["turns"][0]] * 40}  # still looping when the watcher stops
    fake_llm.load(orjson.loads(orjson.dumps(looping).replace(b"{dir}", str(opencode.project).encode())))
    with Receiver() as rx, alertmanager(tmp_path / "am", rx.url + "/am") as am:
        settings = octel_store.settings.model_copy(update={"alertmanager_url": am})
        alerts = start_alerts(settings, octel_store.engine, Redactor(b"k" * 32, []))
        rules = Rules(on_stuck=(("doom_loop", "notify"),))
        with httpx.Client(base_url=opencode.url, timeout=15) as http:
            try:
                with watch(rules=rules, sink=alerts.sink, alerts_to=alerts.describe()):
                    root = start(http, "Read the file until it is there.")
                    rx.wait(lambda ps: _am_posts(ps, "firing", root), timeout=240)
                alerts.close()  # the watcher stopped while the session still loops
                (resolved,) = rx.wait(lambda ps: _am_posts(ps, "resolved", root), timeout=120)[:1]
                assert http.get("/session/status").json().get(root) is not None  # still running
            finally:
                alerts.close()
                http.post(f"/session/{root}/abort")
    (a,) = [a for a in resolved["alerts"] if a["labels"]["session"] == root]
    assert a["status"] == "resolved"
    assert a["annotations"]["summary"].endswith("(resolved: octel watch stopped following it)")
