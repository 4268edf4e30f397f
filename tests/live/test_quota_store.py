"""Quota windows against the store (SQLite and PostgreSQL): usage counted by provider over the
window (archived and live, once), the forecast, and the same numbers from `octel quotas
--json`, `GET /api/quotas` and `/metrics`; alerts once per window."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

from fastapi.testclient import TestClient
from metrics_helpers import parse, value
from session_records import session_record
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from archiver.redact import Redactor
from cli import app as cli_app
from telemetry.queries.quotas import quota_windows
from telemetry.services.index.indexing import index_records
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.live_models import LiveSession
from telemetry.tower.quota_watch import QuotaWatch
from tower.alert import Alert
from tower.quotas import Quota
from web.app import create_app

NOW = datetime.now(UTC)
RULES = """
[[quotas]]
provider = "anthropic"
key_label = "team-a"
reset_day = 1
limit_tokens = 1000

[[quotas]]
provider = "fake"
window = "rolling"
hours = 5
limit_usd = 10
"""


def _seed(engine: Engine) -> None:
    """Anthropic: 600 tokens archived a minute ago and 100 live; another provider's 5000 and
    $2 apart."""
    ms = NOW.timestamp() * 1000 - 60_000
    recs = [
        session_record(
            "ses_a",
            model="anthropic/claude-x",
            tokens_input=500,
            tokens_output=100,
            created_ms=ms,
            archived_at=NOW.isoformat(),
        ),
        session_record(
            "ses_f",
            model="fake/fake-model",
            tokens_input=5000,
            cost_usd=2.0,
            created_ms=ms,
            archived_at=NOW.isoformat(),
        ),
    ]
    with session_scope(engine) as db:
        index_records(db, recs, redactor=Redactor(b"0" * 32))
        db.add(
            LiveSession(
                server="http://127.0.0.1:4096",
                session_id="ses_l",
                model="claude-sonnet-4-5",
                state="busy",
                state_since=NOW,
                first_seen_at=NOW,
                updated_at=NOW,
                tokens_input=100,
                cost_usd=0.01,
            )
        )


def test_usage_and_forecast_of_each_window(engine: Engine) -> None:
    _seed(engine)
    team = Quota("anthropic", 1000, key_label="team-a")
    rolling = Quota("fake", 10, "usd", "rolling", hours=5)
    with session_scope(engine, write=False) as db:
        a, f = quota_windows(db, [team, rolling], NOW).quotas
    assert (a.provider, a.window, a.used, a.used_ratio, a.last_24h) == ("anthropic", "team-a", 700, 0.7, 700)
    # 700 in a day: the last 300 go in under 11 h, well before the month's end
    assert a.runs_out_before_reset and a.exhausted_forecast_seconds is not None
    assert abs(a.exhausted_forecast_seconds - 300 / (700 / 86400)) < 1
    assert a.reset_at is not None and a.reset_at.day == 1 and "before its reset" in a.forecast
    assert (f.used, f.unit, f.reset_at) == (2.0, "usd", None)
    # $2 a day is $0.42 in any 5 hours: a rolling $10 never runs out at that rate
    assert f.exhausted_forecast_seconds is None and not f.runs_out_before_reset

    alerts: list[Alert] = []
    sink = type("S", (), {"emit": lambda _s, a: alerts.append(a)})()
    watch = QuotaWatch([team, rolling], sink, every=0)
    watch.check(engine, time.time())
    watch.check(engine, time.time())
    assert [(x.labels["level"], x.severity) for x in alerts] == [("forecast", "warning")]
    assert alerts[0].kind == "quota" and "team-a" in alerts[0].summary


def test_cli_api_and_metrics_show_the_same_windows(
    settings: Settings, engine: Engine, tmp_path: Path
) -> None:
    _seed(engine)
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    base = ["--data-dir", str(settings.data_dir), "--database-url", settings.db_url]
    env = {"OCTEL_BUDGETS_FILE": str(rules)}
    r = CliRunner().invoke(cli_app, [*base, "quotas", "--json"], env=env)
    assert r.exit_code == 0, r.output
    cli = json.loads(r.stdout)["quotas"]
    assert [(q["provider"], q["window"], q["used"]) for q in cli] == [
        ("anthropic", "team-a", 700.0),
        ("fake", "rolling 5h", 2.0),
    ]
    r = CliRunner().invoke(cli_app, [*base, "quotas"], env=env)
    assert r.exit_code == 0 and "team-a" in r.stdout and "70%" in r.stdout
    rules.write_text('[[quotas]]\nprovider = "x"\nwindow = "weekly"\nlimit_tokens = 1\n')
    r = CliRunner().invoke(cli_app, [*base, "quotas"], env=env)
    assert r.exit_code == 2 and "quotas[0]: window must be monthly or rolling" in r.output
    rules.write_text(RULES)
    with TestClient(create_app(settings.model_copy(update={"budgets_file": rules}))) as client:
        api = client.get("/api/quotas").json()["quotas"]
        assert [(q["window"], q["used_ratio"]) for q in api] == [("team-a", 0.7), ("rolling 5h", 0.2)]
        text = client.get("/metrics").text
    fams, _ = parse(text)
    team, fake = {"provider": "anthropic", "window": "team-a"}, {"provider": "fake", "window": "rolling 5h"}
    assert value(fams, "octel_quota_used_ratio", **team) == 0.7
    assert value(fams, "octel_quota_used_ratio", **fake) == 0.2
    assert 0 < value(fams, "octel_quota_exhausted_forecast_seconds", **team) < 86400
    assert ("octel_quota_exhausted_forecast_seconds", frozenset(fake.items())) not in fams  # never runs out
    reset = value(fams, "octel_quota_reset_timestamp_seconds", **team)
    assert datetime.fromtimestamp(reset, UTC).day == 1
