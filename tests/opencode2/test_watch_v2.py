"""`octel watch` on an OpenCode 2 server (the project's fake): the live rows from ``/api/event``
(busy, retrying with attempt and next time, waiting on an ask or a form, compacting, running a
tool, idle, interrupted), Basic auth per server, trees archived when they go quiet, a root deleted
the instant it goes idle archived whole from the mirror, and a re-sweep after a reconnect."""

from __future__ import annotations

import json
from pathlib import Path

from fake_server import FakeOpenCode2
from pydantic import SecretStr
from scenarios import doom_loop, subagent_tree
from watch_v2 import new_store, until, watching


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
        oc2.route("DELETE", f"/api/session/{ids['root']}", {}, None)  # V2 removes the whole tree
        rows = until(lambda: len(got := st.indexed()) >= 3 and got, what="the tree archived")  # type: ignore[attr-defined]
    assert set(rows) >= set(ids.values())
    root = rows[ids["root"]]
    assert root.opencode_version == oc2.version and root.message_count >= 4
    assert (root.title, root.directory) == ("Investigate with subagents", "/work/project")
    assert not [x for x in st.lost() if not x.archived]  # type: ignore[attr-defined]


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
