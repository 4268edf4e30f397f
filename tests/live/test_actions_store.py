"""The audit trail of the watch rules (SQLite and PostgreSQL): rows written redacted, counted in
/metrics, listed by `octel actions list` and `GET /api/v1/actions`; and the server leases that
let several watchers share a store."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from archiver.redact import Redactor
from cli import app as cli_app
from telemetry.queries.actions import list_actions
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.tower.actions import record_action
from telemetry.tower.lease import claim_lease, release_lease, renew_lease
from tower.act import Carried
from tower.actions import Intent, Rules, SessionView, decide
from web.app import create_app

SECRET = "sk-live-0123456789abcdef"
SERVER = "http://127.0.0.1:4096"


def _seed(engine: Engine) -> None:
    deny = Intent(
        "deny_asks_after",
        "reject_ask",
        "ses_b",
        "ask:per_1",
        {"request_id": "per_1", "patterns": [f"curl -H 'key: {SECRET}'"], "waited_s": 301.0},
        "per_1",
    )
    abort = Intent("abort_retries_after", "abort", "ses_c", "retry:ses_c:1", {"attempt": 3})
    red = Redactor(b"k" * 32, [SECRET])
    with session_scope(engine) as db:
        record_action(
            db,
            SERVER,
            Carried(deny, "done", "POST /permission/per_1/reply reject", 200, "true"),
            redactor=red,
            at=time.time() - 7200,
            root_session_id="ses_a",
            watcher="h:1:x",
        )
        record_action(
            db,
            SERVER,
            Carried(abort, "skipped", "the server shows it busy, no longer retrying"),
            redactor=red,
            at=time.time(),
            root_session_id="ses_a",
        )


def test_actions_are_stored_redacted_and_listed_newest_first(engine: Engine) -> None:
    _seed(engine)
    with session_scope(engine, write=False) as db:
        page = list_actions(db)
        assert [a.outcome for a in page.items] == ["skipped", "done"]
        done = page.items[1]
        assert SECRET not in json.dumps(done.evidence) and done.answer_status == 200
        assert done.evidence["request_id"] == "per_1" and done.root_session_id == "ses_a"
        assert [a.session_id for a in list_actions(db, session_id="ses_c").items] == ["ses_c"]
        assert len(list_actions(db, session_id="ses_a").items) == 2  # by root too
        recent = list_actions(db, since=datetime.now(UTC) - timedelta(hours=1)).items
        assert [a.rule for a in recent] == ["abort_retries_after"]


def test_cli_api_and_metrics_show_the_same_actions(settings: Settings, engine: Engine) -> None:
    _seed(engine)
    base = ["--data-dir", str(settings.data_dir), "--database-url", settings.db_url]
    r = CliRunner().invoke(cli_app, [*base, "actions", "list", "--json", "--since", "1h"])
    assert r.exit_code == 0, r.output
    cli = json.loads(r.stdout)
    assert [a["outcome"] for a in cli["items"]] == ["skipped"]
    r = CliRunner().invoke(cli_app, [*base, "actions", "list", "--since", "soon"])
    assert r.exit_code == 2 and "--since" in r.output
    with TestClient(create_app(settings)) as client:
        api = client.get("/api/v1/actions", params={"since": "1h"}).json()
        assert api == cli
        assert client.get("/api/v1/actions", params={"limit": 0}).status_code == 422
        bad = client.get("/api/v1/actions", params={"since": "yesterday-ish"})
        assert bad.status_code == 422 and bad.json()["error"]["fields"][0]["field"] == "query.since"
        text = client.get("/metrics").text
    assert 'octel_actions_total{outcome="done",rule="deny_asks_after"} 1.0' in text
    assert 'octel_actions_total{outcome="skipped",rule="abort_retries_after"} 1.0' in text
    assert 'octel_actions_total{outcome="failed",rule="deny_asks_after"} 0.0' in text


def test_one_holder_per_server_and_a_takeover_once_the_lease_runs_out(engine: Engine) -> None:
    with session_scope(engine) as db:
        assert claim_lease(db, SERVER, "a", 0.5).held
    with session_scope(engine) as db:
        other = claim_lease(db, SERVER, "b", 0.5)
        assert not other.held and other.holder == "a"
    with session_scope(engine) as db:
        assert claim_lease(db, "http://other:1", "b", 0.5).held  # other servers never wait
        assert renew_lease(db, SERVER, "a", 0.5)
    time.sleep(0.8)  # a stops renewing (kill -9)
    with session_scope(engine) as db:
        took = claim_lease(db, SERVER, "b", 5)
        assert took.held and took.taken_from == "a" and took.previous_start is not None
    with session_scope(engine) as db:
        assert not renew_lease(db, SERVER, "a", 5)  # a, back from a pause, learns it lost
        assert not claim_lease(db, SERVER, "a", 5).held
        release_lease(db, SERVER, "b")  # a clean stop hands over at once
    with session_scope(engine) as db:
        assert claim_lease(db, SERVER, "a", 5).taken_from == "b"


def test_evidence_is_redacted_before_it_is_cut(engine: Engine) -> None:
    # the retry message is cut at 300 characters; the URL's password straddles the cut
    password = "hunter2-retry-password"
    message = "x" * 280 + f" postgres://admin:{password}@db.internal:5432/app failed"
    view = SessionView("ses_r", "retrying", retry_attempt=5, retry_message=message, run_since=1.0)
    (intent,) = decide([view], Rules(abort_retries_after=3), 10.0)
    with session_scope(engine) as db:
        record_action(
            db,
            SERVER,
            Carried(intent, "done", "aborted", 200, "true"),
            redactor=Redactor(b"k" * 32),
            at=time.time(),
        )
    with session_scope(engine, write=False) as db:
        (got,) = list_actions(db).items
    kept = got.evidence["message"]
    assert password[:6] not in kept and kept.startswith("x" * 280) and len(kept) <= 300
    assert kept.endswith("…")
