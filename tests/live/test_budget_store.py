"""Budgets against the store (SQLite and PostgreSQL): the spend so far of a tree, a label, a
driver's day and the fleet's day counts archived and live spend once; the check raises each
alert once and names what octel does; `octel why` names the budget that stopped a session;
the rules file is read from TOML and JSON and a bad entry is refused naming its field."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from session_records import session_record
from sqlalchemy.engine import Engine

from archiver.redact import Redactor
from telemetry.budget_rules import budgets_of, quotas_of, read_rules
from telemetry.queries.actions import budget_action
from telemetry.queries.budget_spend import spend_so_far
from telemetry.queries.why import Signals, decide
from telemetry.services.index.indexing import index_records
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.live_models import LiveSession
from telemetry.tower.actions import record_action
from telemetry.tower.budget_watch import BudgetWatch
from tower.act import Carried
from tower.actions import Intent
from tower.alert import Alert
from tower.budgets import Budget, Used
from tower.quotas import Quota

NOW = datetime.now(UTC)
MS = NOW.timestamp() * 1000


def _seed(engine: Engine) -> None:
    """Tree ses_r: root $1.00 and child $0.50 archived (label batch-1, today); the child runs
    again (live $0.80, so $0.30 past its archive) and a new child ses_n (live $0.20, driver
    nightly) was never archived."""
    recs = [
        session_record(
            "ses_r", cost_usd=1.0, tokens_input=100, label="batch-1", created_ms=MS,
            archived_at=NOW.isoformat(),
        ),
        session_record(
            "ses_c", root_session_id="ses_r", parent_session_id="ses_r", depth=1, cost_usd=0.5,
            tokens_input=50, label="batch-1", created_ms=MS, archived_at=NOW.isoformat(),
        ),
    ]  # fmt: skip
    with session_scope(engine) as db:
        index_records(db, recs, redactor=Redactor(b"0" * 32))
        for sid, cost, tokens, driver in (("ses_c", 0.8, 80, None), ("ses_n", 0.2, 20, "nightly")):
            db.add(
                LiveSession(
                    server="http://127.0.0.1:4096",
                    session_id=sid,
                    root_session_id="ses_r",
                    state="busy",
                    state_since=NOW,
                    first_seen_at=NOW,
                    updated_at=NOW,
                    cost_usd=cost,
                    tokens_input=tokens,
                    driver=driver,
                )
            )


def _near(a: Used, usd: float, tokens: int) -> bool:
    return abs(a.usd - usd) < 1e-9 and a.tokens == tokens


def test_spend_so_far_counts_archived_and_live_spend_once(engine: Engine) -> None:
    _seed(engine)
    with session_scope(engine, write=False) as db:
        got = spend_so_far(db, NOW, labels={"ses_r": "batch-1"})
    assert _near(got.spent[("tree", "ses_r")], 2.0, 200)
    assert _near(got.spent[("label", "batch-1")], 2.0, 200)
    assert _near(got.spent[("fleet_day", "")], 2.0, 200)
    assert _near(got.spent[("driver_day", "nightly")], 0.2, 20)
    assert got.drivers == {"ses_r": "nightly"} and not got.claude_roots
    # a watcher's own newer count of a session replaces its live row, never adds to it
    newer = LiveSession(server="x", session_id="ses_n", root_session_id="ses_r", state="busy", cost_usd=0.7)
    with session_scope(engine, write=False) as db:
        fresher = spend_so_far(db, NOW, scopes=("tree", "driver_day"), fresher=[newer])
    assert abs(fresher.spent[("tree", "ses_r")].usd - 2.5) < 1e-9
    assert abs(fresher.spent[("driver_day", "nightly")].usd - 0.7) < 1e-9  # the store's link kept
    assert set(fresher.spent) == {("tree", "ses_r"), ("driver_day", "nightly")}


class Collect:
    def __init__(self) -> None:
        self.alerts: list[Alert] = []

    def emit(self, alert: Alert) -> None:
        self.alerts.append(alert)


def test_the_check_raises_each_alert_once_and_says_what_octel_does(engine: Engine) -> None:
    _seed(engine)
    sink = Collect()
    watch = BudgetWatch(
        [Budget("tree", 1.9), Budget("fleet_day", 2.4, warn_at=0.8), Budget("label", 5.0, match="batch-*")],
        sink,
        label="batch-1",
    )
    got = watch.check(engine, time.time(), roots=["ses_r"])
    watch.check(engine, time.time(), roots=["ses_r"])  # nothing new: nothing raised again
    assert [(a.labels["scope"], a.labels["level"], a.severity) for a in sink.alerts] == [
        ("tree", "breach", "critical"),
        ("fleet_day", "warning", "warning"),
    ]
    breach = sink.alerts[0]
    assert breach.kind == "budget" and breach.tree_id == "ses_r" and breach.key.startswith("budget:tree:")
    assert "tree ses_r spent $2.0000, 105% of budget tree * $1.90" in breach.summary
    assert "octel watch aborts its OpenCode sessions" in breach.summary
    assert "batch-1" not in {a.labels.get("budget") for a in sink.alerts}  # $2 of $5: under 80 %
    assert got.spent[("label", "batch-1")].usd == pytest.approx(2.0)


def test_why_names_the_budget_that_stopped_the_session(engine: Engine) -> None:
    ev = {"budget": "tree * $5.00", "scope": "tree", "used": 5.0213, "unit": "usd", "limit": 5.0}
    it = Intent("budget", "abort", "ses_r", "abort:ses_r:1.0", ev)
    with session_scope(engine) as db:
        record_action(
            db, "http://x", Carried(it, "done", "POST /session/ses_r/abort", 200, "true"),
            redactor=Redactor(b"0" * 32), at=time.time(), root_session_id="ses_r",
        )  # fmt: skip
    with session_scope(engine, write=False) as db:
        found = budget_action(db, ["ses_kid", "ses_r"])
        assert budget_action(db, ["ses_other"]) is None
    assert found is not None and found["outcome"] == "done"
    last = {"finish": "stop", "tokens": {"output": 5}, "tool_calls": 1}
    got = decide(Signals("session", "ses_r", session={"session_id": "ses_r"}, turns=[last], budget=found))
    assert got.code == "over_budget" and got.verdict == "over budget"
    said = "over budget: budget tree * $5.00 exceeded: spent $5.0213; octel watch aborted it"
    assert got.summary == said
    skipped = decide(Signals("session", "ses_r", turns=[last], budget=found | {"outcome": "skipped"}))
    assert skipped.code == "completed"  # a budget that did not stop it does not explain the stop


TOML = """
[[budgets]]
scope = "driver_day"
match = "nightly"
limit_tokens = 2_000_000
action = "notify"

[[quotas]]
provider = "anthropic"
key_label = "team-a"
window = "monthly"
reset_day = 5
limit_tokens = 50_000_000
"""


def test_the_rules_file_is_read_from_toml_and_json(tmp_path: Path) -> None:
    toml = tmp_path / "budgets.toml"
    toml.write_text(TOML)
    s = Settings(data_dir=tmp_path, budgets_file=toml, budget_tree_usd=5, _env_file=None)  # type: ignore[call-arg]
    assert budgets_of(s) == (
        Budget("tree", 5.0),
        Budget("driver_day", 2_000_000.0, "tokens", "nightly", 0.8, "notify"),
    )
    assert quotas_of(s) == (Quota("anthropic", 50_000_000.0, "tokens", "monthly", 5, 24.0, "team-a"),)
    js = tmp_path / "budgets.json"
    js.write_text('[{"scope": "fleet_day", "limit_usd": 200}]')
    assert read_rules(js) == ([Budget("fleet_day", 200.0)], [])
    js.write_text('{"budgets": [{"scope": "tree", "limit_usd": 1}, {"scope": "tree", "limit_usd": "1"}]}')
    with pytest.raises(ValueError, match=r"budgets\.json: budgets\[1\]: limit_usd must be a number"):
        read_rules(js)
    js.write_text('{"budget": []}')
    with pytest.raises(ValueError, match="unknown section 'budget'"):
        read_rules(js)
