"""`octel watch` on an OpenCode 2 server (the project's fake): the live rows from ``/api/event``
(busy, retrying with attempt and next time, waiting on an ask or a form, compacting, running a
tool, idle, interrupted), Basic auth per server, trees archived when they go quiet, a root deleted
the instant it goes idle archived whole from the mirror, and a re-sweep after a reconnect."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
from fake_server import FakeOpenCode2
from pydantic import SecretStr
from scenarios import doom_loop, subagent_tree
from watch_v2 import new_store, until, watching

from archiver.files import read_archive
from archiver.versions import opencode_generation
from tower.act import carry_out, views_of
from tower.actions import Rules, decide
from tower.events_v2 import V2Decoder
from tower.live_board import LiveBoard


def _store(tmp_path: Path, oc2: FakeOpenCode2) -> object:
    # the password per server (OCTEL_OPENCODE_PASSWORDS); the one default is wrong on purpose
    return new_store(
        tmp_path / "data",
        opencode_passwords=SecretStr(json.dumps({oc2.url: oc2.password})),
        opencode_password=SecretStr("not-this-one"),
        redact_values="",
    )


def test_live_rows_say_what_each_v2_session_is_doing(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    store = _store(tmp_path, oc2)
    with watching(store, oc2.url) as st:  # type: ignore[arg-type]
        until(lambda: oc2._subs, what="the watcher on /api/event")
        busy = oc2.session(title="busy")
        oc2.user(busy, "go")
        compacting = oc2.session(title="compacting")
        oc2.user(compacting, "go")
        oc2.compaction(compacting, "so far", ended=False)
        asking = oc2.session(title="asking")
        oc2.user(asking, "go")
        rid = oc2.ask(asking, "shell", ("rm -rf build",))
        questioned = oc2.session(title="questioned")
        oc2.user(questioned, "go")
        fid = oc2.form(questioned, "Which database?")
        retrying = oc2.session(title="retrying")
        oc2.user(retrying, "go")
        err = {"type": "provider.rate-limit", "message": "429 slow down"}
        oc2.step(retrying, [], finish="error", retry={"attempt": 2, "at": 4_102_444_800_000, "error": err})
        tooling = oc2.session(title="tooling")
        oc2.user(tooling, "go")
        base = {"sessionID": tooling, "assistantMessageID": "msg_999999999999", "id": "call_1"}
        oc2.publish("session.tool.input.started", {**base, "name": "shell"})
        oc2.publish("session.tool.called", {**base, "input": {"command": "sleep 60"}, "executed": True})
        stopped = oc2.session(title="stopped")
        oc2.user(stopped, "go")
        oc2.idle(stopped, "interrupted", reason="user")
        done = oc2.session(title="done")
        oc2.user(done, "go")
        oc2.step(done, [{"type": "text", "text": "finished"}])
        oc2.idle(done)

        def state(sid: str) -> str | None:
            row = st.live(sid)  # type: ignore[attr-defined]
            return row.state if row is not None else None

        want = {
            busy: "busy",
            compacting: "compacting",
            asking: "waiting_permission",
            questioned: "waiting_permission",
            retrying: "retrying",
            tooling: "running_tool",
            stopped: "interrupted",
            done: "idle",
        }
        try:
            until(lambda: all(state(s) == w for s, w in want.items()), what="every live state")
        except AssertionError:
            raise AssertionError({want[s]: state(s) for s in want}, st.logs[-10:]) from None  # type: ignore[attr-defined]
        ask, form, retry, tool = (st.live(s) for s in (asking, questioned, retrying, tooling))  # type: ignore[attr-defined]
        assert (ask.permission, ask.permission_patterns, ask.permission_request_id) == (
            "shell",
            ["rm -rf build"],
            rid,
        )
        assert (form.permission, form.permission_request_id) == ("form", fid)
        assert retry.retry_attempt == 2 and retry.retry_next_at is not None
        assert retry.retry_next_at.year == 2100 and "429" in (retry.state_reason or "")
        assert tool.tool == "shell"
        assert st.live(done).title == "done"  # type: ignore[attr-defined]
        until(lambda: done in st.indexed(), what="the finished tree archived")  # type: ignore[attr-defined]
    # every request carried the per-server password: not one was refused
    assert ("GET", "/api/event") in oc2.requests


def test_a_tree_deleted_the_instant_it_goes_idle_is_archived_whole(
    oc2: FakeOpenCode2, tmp_path: Path
) -> None:
    store = _store(tmp_path, oc2)
    with watching(store, oc2.url, settle=5.0) as st:  # type: ignore[arg-type]
        until(lambda: oc2._subs, what="the watcher on /api/event")
        ids = subagent_tree(oc2)
        served = {sid: json.loads(json.dumps(oc2.messages[sid])) for sid in ids.values()}
        oc2.route("DELETE", f"/api/session/{ids['root']}", {}, None)  # V2 removes the whole tree
        rows = until(lambda: len(got := st.indexed()) >= 3 and got, what="the tree archived")  # type: ignore[attr-defined]
    assert set(rows) >= set(ids.values())
    root = rows[ids["root"]]
    assert root.opencode_version == oc2.version and root.message_count >= 4
    assert (root.title, root.directory) == ("Investigate with subagents", "/work/project")
    # rescued from the mirror in V2's own shapes (v4), as a read from the server would be
    assert root.schema_version == 4 and opencode_generation(root.source, 4, root.opencode_version) == 2
    assert not [x for x in st.lost() if not x.archived]  # type: ignore[attr-defined]
    for role, sid in ids.items():
        doc = read_archive(store.settings.archives / rows[sid].archive_path)  # type: ignore[attr-defined]
        assert doc["source"]["origin"] == "mirror" and doc["source"]["opencode_generation"] == 2, role
        assert "directory" not in doc["session"] and doc["session"]["location"] == {
            "directory": "/work/project"
        }
        # every message the stream tells (user input, each step, each execution's idle marker)
        # is the server's own, field for field; stored shells and compactions carry no message
        # id on the stream
        told = [m for m in served[sid] if m["type"] in ("user", "assistant", "idle")]
        assert [m["type"] for m in doc["messages"]] == [m["type"] for m in told], role
        for got, want in zip(doc["messages"], told, strict=True):
            assert got == want, (role, json.dumps(got, sort_keys=True), json.dumps(want, sort_keys=True))
    assert read_archive(store.settings.archives / root.archive_path)["execution"]["outcome"] == "succeeded"


def test_a_doom_loop_is_archived_with_its_finding(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    store = _store(tmp_path, oc2)
    with watching(store, oc2.url) as st:  # type: ignore[arg-type]
        until(lambda: oc2._subs, what="the watcher on /api/event")
        sid = doom_loop(oc2)
        oc2.idle(sid, "failed", error={"type": "tool.execution", "message": "gave up"})
        until(lambda: sid in st.indexed(), what="the doom loop archived")  # type: ignore[attr-defined]
        assert st.live(sid).state == "errored"  # type: ignore[attr-defined]
    assert st.indexed()[sid].verdict != "healthy"  # type: ignore[attr-defined]


def test_a_reconnect_sweeps_what_the_stream_missed(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    store = _store(tmp_path, oc2)
    with watching(store, oc2.url) as st:  # type: ignore[arg-type]
        until(lambda: oc2._subs, what="the watcher on /api/event")
        sid = oc2.session(title="missed")
        oc2.user(sid, "go")
        until(lambda: (r := st.live(sid)) and r.state == "busy", what="busy")  # type: ignore[attr-defined]
        for q in list(oc2._subs):  # the stream drops; meanwhile the run asks (no replay on V2)
            q.put(None)
        oc2._subs.clear()
        oc2.permissions["per_000000777777"] = {
            "id": "per_000000777777",
            "sessionID": sid,
            "action": "edit",
            "resources": ["a.py"],
        }
        row = until(
            lambda: (r := st.live(sid)) and r.state == "waiting_permission" and r, what="the ask re-swept"
        )
        assert row.permission_request_id == "per_000000777777"


def test_rules_reject_a_stale_ask_and_interrupt_a_retry_storm(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    store = _store(tmp_path, oc2)
    rules = Rules(deny_asks_after=0.5, abort_retries_after=3)
    with watching(store, oc2.url, rules=rules) as st:  # type: ignore[arg-type]
        until(lambda: oc2._subs, what="the watcher on /api/event")
        asking = oc2.session(title="left unanswered")
        oc2.user(asking, "go")
        rid = oc2.ask(asking)
        storm = oc2.session(title="retry storm")
        oc2.user(storm, "go")
        err = {"type": "provider.internal", "message": "503"}
        for attempt in (1, 2, 3):
            oc2.step(
                storm, [], finish="error", retry={"attempt": attempt, "at": 4_102_444_800_000, "error": err}
            )
        # each action's audit row is written before its request leaves: wait for both outcomes
        acts = until(
            lambda: len(a := st.actions()) >= 2 and all(x.outcome != "sending" for x in a) and a,  # type: ignore[attr-defined]
            what="two actions done",
        )
        until(lambda: (r := st.live(storm)) and r.state == "interrupted", what="interrupted")  # type: ignore[attr-defined]
    by = {a.session_id: a for a in acts}
    assert (by[asking].rule, by[asking].action, by[asking].outcome) == (
        "deny_asks_after",
        "reject_ask",
        "done",
    )
    assert by[asking].detail == f"POST /api/session/{asking}/permission/{rid}/reply reject"
    (reply,) = [body for sid, r, body in oc2.replies if r == rid]
    assert reply["decision"] == "reject" and "deny_asks_after" in reply["message"]
    assert (by[storm].rule, by[storm].outcome) == ("abort_retries_after", "done")
    assert by[storm].detail == f"POST /api/session/{storm}/interrupt" and by[storm].answer_status == 200


def test_a_stale_form_is_cancelled(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    store = _store(tmp_path, oc2)
    with watching(store, oc2.url, rules=Rules(deny_asks_after=0.5)) as st:  # type: ignore[arg-type]
        until(lambda: oc2._subs, what="the watcher on /api/event")
        sid = oc2.session(title="a question")
        oc2.user(sid, "go")
        fid = oc2.form(sid)
        # the audit row is written before the request leaves: wait for its outcome
        (act,) = until(
            lambda: [a for a in st.actions() if a.outcome != "sending"],  # type: ignore[attr-defined]
            what="the form cancelled",
        )
    assert act.outcome == "done" and act.detail.startswith(f"DELETE /api/session/{sid}/form/{fid}?message=")
    assert fid not in oc2.forms and any(r == fid for _s, r, _b in oc2.replies)


def test_retries_exhausted_and_failed_is_an_outcome_not_a_storm(oc2: FakeOpenCode2) -> None:
    """The board still says retrying (the failure not seen yet); the server says the execution
    ended with outcome failed: nothing is sent."""
    sid = oc2.session(title="gave up")
    oc2.user(sid, "go")
    board, dec = LiveBoard(oc2.url), V2Decoder()
    err = {"type": "provider.rate-limit", "message": "429"}
    retry = {
        "id": "evt_1",
        "type": "session.retry.scheduled",
        "data": {
            "sessionID": sid,
            "assistantMessageID": "msg_000000000001",
            "attempt": 4,
            "at": 1,
            "error": err,
        },
    }
    for ev in dec.decode(
        {"id": "evt_0", "type": "session.execution.started", "data": {"sessionID": sid}}
    ) + dec.decode(retry):
        board.on_event(ev, 100.0)
    board.snapshot(100.0)  # the watcher's tick: the board's active sessions
    (view,) = views_of(board, 100.0, findings=False)
    (it,) = decide([view], Rules(abort_retries_after=3), 100.0)
    oc2.idle(sid, "failed", error=err)  # the server's bounded retries ran out
    before = list(oc2.requests)

    async def go() -> object:
        async with httpx.AsyncClient() as http:
            return await carry_out(http, oc2.url, board, it, v2=True, auth=("opencode", oc2.password))

    done = asyncio.run(go())
    assert done.outcome == "skipped" and done.detail == "the execution ended: outcome failed"  # type: ignore[attr-defined]
    assert not [r for r in oc2.requests[len(before) :] if r[0] == "POST"]
