"""Live state from captured OpenCode event streams, and the state derivation's properties under
bad input (events late, repeated, out of order, unknown, replies twice)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from tower.live import STATES, Facts, apply, derive, id_time
from tower.live_board import LiveBoard, LiveRow

FIXTURES = Path(__file__).parents[1] / "fixtures" / "opencode"


def _fixture(name: str) -> dict[str, Any]:
    return orjson.loads((FIXTURES / f"{name}.json").read_bytes())


def _replay(name: str, *, until: str | None = None) -> tuple[LiveBoard, dict[str, Any], float]:
    fx = _fixture(name)
    board = LiveBoard("http://oc")
    last = 0.0
    for e in fx["events"]:
        last = e["received"] / 1000.0
        board.on_event(e["event"], last)
        if until is not None and e["event"]["type"] == until:
            break
    return board, fx, last


def _row(board: LiveBoard, sid: str, now: float) -> LiveRow:
    rows = {r.session_id: r for r in board.snapshot(now)}
    return rows[sid]


def test_an_unanswered_ask_is_a_wait_measured_from_the_asks_own_time() -> None:
    board, fx, t = _replay("permission_deadlock", until="permission.asked")
    root = fx["root_id"]
    row = _row(board, root, t + 600)
    assert row.state == "waiting_permission"
    assert row.permission == "bash" and row.permission_patterns == ("ls -la",)
    assert row.permission_asked_at is not None and abs(row.permission_asked_at - t) < 0.01
    assert row.state_since == row.permission_asked_at
    dead = next(f for f in row.findings if f["detector"] == "permission_deadlock")
    assert dead["verdict"] == "stuck" and dead["evidence"]["waited_s"] >= 599
    assert row.verdict == "stuck" and root in board.active


def test_a_watcher_that_starts_late_still_measures_the_wait_from_the_ask() -> None:
    fx = _fixture("permission_deadlock")
    ask = next(e for e in fx["events"] if e["event"]["type"] == "permission.asked")
    board = LiveBoard("http://oc")
    seen_late = ask["received"] / 1000.0 + 300  # a watcher started five minutes after the ask
    board.on_status_poll({fx["root_id"]: {"type": "busy"}}, seen_late)
    board.on_permissions_poll([ask["event"]["properties"]], seen_late)
    row = _row(board, fx["root_id"], seen_late + 1)
    assert row.state == "waiting_permission" and seen_late - row.state_since >= 299


def test_retries_show_attempt_and_next_try() -> None:
    fx = _fixture("retry_cascade")
    board = LiveBoard("x")
    for e in fx["events"]:
        t = e["received"] / 1000.0
        board.on_event(e["event"], t)
        if e["event"]["properties"].get("status", {}).get("attempt") == 3:
            break
    row = _row(board, fx["root_id"], t)
    assert row.state == "retrying" and row.retry_attempt == 3 and row.retry_next_at
    assert "overloaded" in row.reason
    retry = next(f for f in row.findings if f["detector"] == "retry_cascade")
    assert retry["verdict"] == "suspect" and retry["evidence"]["attempt"] == 3
    done, _, t = _replay("retry_cascade")
    assert _row(done, fx["root_id"], t).state == "idle"


def test_an_aborted_run_reads_interrupted_with_the_reason() -> None:
    board, fx, t = _replay("aborted")
    row = _row(board, fx["root_id"], t)
    assert row.state == "interrupted" and "MessageAbortedError" in row.reason


def test_usage_counts_each_message_once_however_often_it_is_updated() -> None:
    board, fx, t = _replay("subagent_tree")
    root = _row(board, fx["root_id"], t)
    msgs = fx["messages"][fx["root_id"]]
    assistant = [m["info"] for m in msgs if m["info"]["role"] == "assistant"]
    assert root.turns == len(assistant)
    assert abs(root.cost_usd - sum(m.get("cost", 0) for m in assistant)) < 1e-9
    assert root.tokens["input"] == sum(m["tokens"]["input"] for m in assistant)
    assert root.state == "idle" and root.title


def test_a_lost_server_turns_busy_rows_unknown_and_a_poll_brings_them_back() -> None:
    board, fx, t = _replay("permission_deadlock", until="permission.asked")
    board.snapshot(t)
    board.lost("event stream closed", t + 1)
    row = _row(board, fx["root_id"], t + 1)
    assert row.state == "unknown" and row.reason == "event stream closed"
    board.on_status_poll({}, t + 2)
    assert _row(board, fx["root_id"], t + 2).state == "idle"


def test_a_running_session_the_server_no_longer_lists_is_unknown_with_the_reason() -> None:
    board, fx, t = _replay("permission_deadlock", until="permission.asked")
    board.snapshot(t)
    board.on_session_list([], t + 1)  # a restarted server on a fresh store
    row = _row(board, fx["root_id"], t + 1)
    assert row.state == "unknown" and "no longer listed" in row.reason


def test_id_time_decodes_ascending_ids_and_refuses_others() -> None:
    assert abs(id_time("per_2289eded8001OYTQmKmFt7vZzn", 1795977830.105) - 1795977830.104) < 1e-6
    assert id_time("ses_dd76128d9ffeq48hhstUkzlCJX", 1795977830.105) is None  # descending id
    assert id_time("garbage", 1.0) is None


# -- properties of the pure derivation ----------------------------------------------------------
_RIDS = st.sampled_from(["per_2289eded8001a", "per_2289eded9001b", "bad"])
_EVENT = st.one_of(
    st.builds(
        lambda k, a, i: {
            "type": "session.status",
            "id": i,
            "properties": {"sessionID": "s", "status": {"type": k, "attempt": a}},
        },
        st.sampled_from(["busy", "retry", "idle", "weird", None]),
        st.integers(-1, 9),
        st.sampled_from(["", "evt_1", "evt_2", "evt_3"]),
    ),
    st.builds(
        lambda i: {"type": "session.idle", "id": i, "properties": {"sessionID": "s"}},
        st.sampled_from(["", "evt_4"]),
    ),
    st.builds(
        lambda r: {
            "type": "permission.asked",
            "properties": {"id": r, "sessionID": "s", "permission": "bash", "patterns": ["git push *"]},
        },
        _RIDS,
    ),
    st.builds(
        lambda r: {
            "type": "permission.replied",
            "properties": {"requestID": r, "sessionID": "s", "reply": "once"},
        },
        _RIDS,
    ),
    st.builds(
        lambda p, s: {
            "type": "message.part.updated",
            "properties": {
                "sessionID": "s",
                "part": {"id": p, "type": "tool", "tool": "bash", "state": {"status": s}},
            },
        },
        st.sampled_from(["prt_1", "prt_2"]),
        st.sampled_from(["pending", "running", "completed", "error", 7]),
    ),
    st.just({"type": "session.compacted", "properties": {"sessionID": "s"}}),
    st.just(
        {"type": "message.updated", "properties": {"sessionID": "s", "info": {"id": "m", "summary": True}}}
    ),
    st.just({"type": "session.error", "properties": {"sessionID": "s", "error": {"name": "APIError"}}}),
    st.just({"type": "no.such.event", "properties": {"sessionID": "s"}}),
    st.just({"type": None, "properties": "not a map"}),
)


def _run(events: list[dict[str, Any]], twice: bool = False) -> Facts:
    f = Facts()
    for i, e in enumerate(events):
        for _ in range(2 if twice else 1):
            apply(f, e, 1_795_977_830.0 + i)
    return f


@given(st.lists(_EVENT, max_size=40))
def test_any_stream_gives_one_known_state(events: list[dict[str, Any]]) -> None:
    assert derive(_run(events)).state in STATES


@given(st.lists(_EVENT, max_size=40))
def test_a_repeated_event_changes_nothing(events: list[dict[str, Any]]) -> None:
    assert derive(_run(events, twice=True)) == derive(_run(events))


@given(st.lists(_EVENT, max_size=30), _RIDS)
def test_a_pending_ask_always_shows_as_the_wait(events: list[dict[str, Any]], rid: str) -> None:
    f = _run(events)
    ask = {"type": "permission.asked", "properties": {"id": rid, "sessionID": "s", "permission": "bash"}}
    apply(f, ask, 2e9)
    state = derive(f)
    if rid in f.replied:  # answered before the ask arrived: it never waits
        assert rid not in f.asks
    else:
        assert state.state == "waiting_permission" and state.ask is not None


@given(st.lists(_EVENT, max_size=30), st.lists(_EVENT, max_size=10))
def test_deleted_is_final(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
    f = _run(before)
    apply(f, {"type": "session.deleted", "properties": {"sessionID": "s"}}, 2e9)
    for e in after:
        apply(f, e, 2e9 + 1)
    assert derive(f).state == "deleted"


@given(st.lists(_EVENT, max_size=30))
def test_a_reply_twice_or_for_nothing_never_breaks_the_state(events: list[dict[str, Any]]) -> None:
    f = _run(events)
    for _ in range(2):
        apply(f, {"type": "permission.replied", "properties": {"requestID": "per_x", "sessionID": "s"}}, 2e9)
    assert derive(f).state in STATES and "per_x" not in f.asks


def test_a_stale_status_event_does_not_undo_a_newer_one() -> None:
    f = Facts()
    apply(f, {"type": "session.status", "id": "evt_2", "properties": {"status": {"type": "busy"}}}, 1.0)
    apply(f, {"type": "session.idle", "id": "evt_3", "properties": {}}, 2.0)
    apply(f, {"type": "session.status", "id": "evt_2", "properties": {"status": {"type": "busy"}}}, 3.0)
    assert derive(f).state == "idle"


def test_a_cost_the_server_did_not_record_is_priced_live_as_the_archive_prices_it() -> None:
    from archiver.claude.prices import Usage, cost_of

    fx = _fixture("subagent_tree")
    board = LiveBoard("http://oc")
    last = 0.0
    for e in fx["events"]:
        info = e["event"].get("properties", {}).get("info")
        if e["event"]["type"] == "message.updated" and info.get("role") == "assistant":
            info.update(cost=0, providerID="anthropic", modelID="claude-sonnet-4-5")
        last = e["received"] / 1000.0
        board.on_event(e["event"], last)
    root = _row(board, fx["root_id"], last)
    final = {
        m["info"]["id"]: m["info"] for m in fx["messages"][fx["root_id"]] if m["info"]["role"] == "assistant"
    }
    expected = 0.0
    for info in final.values():
        t = info["tokens"]
        u = Usage(t["input"], t["output"] + t["reasoning"], t["cache"]["read"], t["cache"]["write"])
        expected += cost_of("claude-sonnet-4-5", u, at_ms=info["time"]["created"]) or 0.0
    assert expected > 0 and abs(root.cost_usd - expected) < 1e-9
