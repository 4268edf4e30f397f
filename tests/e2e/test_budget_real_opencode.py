"""End to end on a real `opencode serve` with the scripted fake LLM: a loop of one failing test
command is aborted once its tree passes its budget, in the act loop's tick that saw the breach
(the audit row's ``acted_tick`` is the tick the breach was first seen: the turn's cost wakes
the loop); the audit row and the alerts name the budget, and `octel why` says the budget
stopped it. The seconds from the breach (the turn whose cost crossed the limit completing) to
the abort, and the turns after it, are printed (`pytest -s`)."""

from __future__ import annotations

import time

import httpx
import pytest
from driver import idle, start, wait_for
from fakellm import FakeLLM
from opencode_harness import OpenCode
from sqlmodel import select
from watch_thread import Watch

from telemetry.archive_store import archive_store
from telemetry.queries.actions import ActionOut, list_actions
from telemetry.queries.why import why
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex
from telemetry.tower.budget_watch import BudgetWatch
from tower.alert import Alert
from tower.budgets import Budget

pytestmark = pytest.mark.opencode

LIMIT = 0.005  # US dollars: about six turns of the fake model at its configured prices
# the failing test run, spelt three ways in turn: OpenCode's own guard asks after three
# identical calls in a row (a real pytest would only make the test slower)
FAIL = "echo 'FAILED test_calc.py::test_add - assert 3 == 4'; exit 1"
FORMS = [FAIL, FAIL.replace("; ", ";  "), FAIL.replace("echo ", "echo  ")]
LOOP = {
    "title": "Fix the tests",
    "turns": [
        {
            "text": "The tests fail; running them again.",
            "tool_calls": [
                {"name": "bash", "arguments": {"command": FORMS[i % 3], "description": "run the tests"}}
            ],
        }
        for i in range(300)
    ],
}


class Collect:
    def __init__(self) -> None:
        self.alerts: list[Alert] = []

    def emit(self, alert: Alert) -> None:
        self.alerts.append(alert)


def _breached_at(http: httpx.Client, root: str) -> tuple[float, int, int]:
    """When the turn that took the tree past the limit completed (s), its number, and turns."""
    msgs = [
        m["info"] for m in http.get(f"/session/{root}/message").json() if m["info"]["role"] == "assistant"
    ]
    total = 0.0
    for n, info in enumerate(msgs, 1):
        total += float(info.get("cost") or 0)
        if total >= LIMIT:
            return info["time"]["completed"] / 1000, n, len(msgs)
    raise AssertionError(f"the tree spent {total}, under its limit")


def test_a_loop_is_aborted_when_its_tree_passes_its_budget(
    opencode: OpenCode, fake_llm: FakeLLM, watch: Watch
) -> None:
    fake_llm.load(LOOP)
    sink = Collect()
    budgets = BudgetWatch([Budget("tree", LIMIT, warn_at=0.5)], sink)
    with (
        watch(budgets=budgets, lease_seconds=6.0) as watched,
        httpx.Client(base_url=opencode.url, timeout=15) as http,
    ):
        engine = watched.engine
        root = start(http, "Make the tests pass.")

        def acted() -> list[ActionOut]:
            with session_scope(engine, write=False) as db:
                return [
                    a
                    for a in list_actions(db).items
                    if a.session_id == root and a.rule == "budget" and a.outcome != "sending"
                ]

        (row,) = wait_for(acted, timeout=150)  # a cold server takes a while to start the first turn
        assert (row.action, row.outcome, row.answer) == ("abort", "done", "true")
        assert row.evidence["budget"] == "tree * $0.005" and row.evidence["used"] >= LIMIT
        assert row.evidence["acted_tick"] == row.evidence["breach_tick"], row.evidence
        idle(http, root, timeout=30)
        calls = len(fake_llm.requests)
        breach, turn, turns = _breached_at(http, root)
        seen, done = row.evidence["seen_at"] - breach, row.at.timestamp() - row.evidence["seen_at"]
        print(
            f"\nbudget breach to abort: {seen + done:.2f} s (seen after {seen:.2f} s, with the act loop's "
            f"tick of 1 s; acted {done:.2f} s later, tick {row.evidence['acted_tick']}); crossed at "
            f"turn {turn}, {turns - turn} turns after it"
        )
        time.sleep(3.0)  # an aborted loop calls the provider no more
        assert len(fake_llm.requests) == calls
        levels = [(a.labels["level"], a.severity) for a in sink.alerts]
        assert levels == [("warning", "warning"), ("breach", "critical")]
        assert sink.alerts[1].tree_id == root and "octel watch aborts" in sink.alerts[1].summary

        def archived() -> bool:
            with session_scope(engine, write=False) as db:
                return (
                    db.exec(select(SessionIndex).where(SessionIndex.session_id == root)).first() is not None
                )

        wait_for(archived, timeout=30)
        with session_scope(engine, write=False) as db:
            got = why(db, root, archive_store(watched.settings, engine))
        assert got is not None and got.code == "over_budget", got
        assert "budget tree * $0.005 exceeded" in got.summary and "aborted it" in got.summary
