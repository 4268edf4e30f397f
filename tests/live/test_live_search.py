"""Live sessions are searchable as their messages arrive, on SQLite and a real PostgreSQL: the
watcher's stored messages feed the content index (redacted, marked live, named by the live
row), a changed message replaces its parts, a removed one and an archived tree take theirs
away, and the live table keeps the sessions a query names (`list_live(q=…)`, `/api/live?q=`)."""

from __future__ import annotations

from live_seed import store_waiting_tree
from sqlalchemy.engine import Engine

from archiver.redact import Redactor
from telemetry.queries.content_search import SearchRequest, search
from telemetry.queries.live import list_live
from telemetry.services.index.content_index import put_parts
from telemetry.store.db import session_scope
from telemetry.timeutil import utcnow
from telemetry.tower.live_messages import store_live_messages
from tower.live_messages import LiveMessage, MessageBatch

SERVER = "http://oc:4096"
SECRET = "hunter2-very-secret-value"


def _found(engine: Engine, q: str) -> list[tuple[str, bool, str | None]]:
    with session_scope(engine, write=False) as db:
        return [(h.session_id, h.live, h.title) for h in search(db, SearchRequest(q=q, limit=200)).hits]


def _live(engine: Engine, q: str) -> list[str]:
    with session_scope(engine, write=False) as db:
        return sorted(r.session_id for r in list_live(db, utcnow(), q=q).items)


def _message(sid: str, mid: str, text: str) -> LiveMessage:
    info = {"id": mid, "sessionID": sid, "role": "assistant", "time": {"created": 1_000}}
    part = {"id": "prt_" + mid, "messageID": mid, "sessionID": sid, "type": "text", "text": text}
    return LiveMessage(sid, mid, 7, "assistant", False, {"info": info, "parts": [part]})


def test_live_messages_are_found_as_they_arrive_and_go_with_them(engine: Engine) -> None:
    child, tree = store_waiting_tree(engine)
    grandchild = next(s for s in tree if s not in (child, tree[0]))
    got = _found(engine, "tool:read README")
    assert {(s, live) for s, live, _ in got} == {(grandchild, True)}
    assert got[0][2] == "Check the README (@general subagent)"  # named by its live row
    red = Redactor(b"k" * 32, [SECRET])
    with session_scope(engine) as db:
        batch = MessageBatch(upserts=[_message(child, "msg_new", f"pushing with {SECRET} ECONNRESET")])
        store_live_messages(db, SERVER, batch, redactor=red)
    assert [s for s, *_ in _found(engine, "ECONNRESET")] == [child]
    assert _found(engine, "hunter2") == []  # stored redacted, indexed redacted
    with session_scope(engine) as db:  # the catch-up writing an archive leaves the live parts be
        put_parts(db, {child: ()})
    assert [s for s, *_ in _found(engine, "ECONNRESET")] == [child]
    with session_scope(engine) as db:  # the message grows: its parts are replaced, not doubled
        batch = MessageBatch(upserts=[_message(child, "msg_new", "ECONNRESET again, retrying")])
        store_live_messages(db, SERVER, batch, redactor=red)
    assert len(_found(engine, "ECONNRESET")) == 1 and _found(engine, "pushing with") == []
    with session_scope(engine) as db:
        store_live_messages(db, SERVER, MessageBatch(deletes=[(child, "msg_new")]), redactor=red)
    assert _found(engine, "ECONNRESET") == []
    with session_scope(engine) as db:  # the tree archived: its text is the archive's from now on
        store_live_messages(db, SERVER, MessageBatch(cleared=tree), redactor=red)
    assert _found(engine, "tool:read README") == []


def test_the_live_table_keeps_the_sessions_a_query_names(engine: Engine) -> None:
    child, tree = store_waiting_tree(engine)
    root = tree[0]
    grandchild = next(s for s in tree if s not in (child, root))
    assert _live(engine, "") == sorted(tree)
    # something it said (the child's task returned it too), as a phrase
    assert _live(engine, '"tiny demo repo"') == sorted([child, grandchild])
    assert _live(engine, "tool:read") == [grandchild]  # a tool it ran
    assert _live(engine, '"Investigate with"') == [root]  # its title
    assert _live(engine, child) == [child]  # its id
    assert _live(engine, "subagent tool:task") == sorted([root, child])  # the grandchild ran no task
    assert _live(engine, "source:claude_code") == [] and _live(engine, "source:opencode") == sorted(tree)
    assert _live(engine, "nothing-says-this") == []
