"""A store holding live rows: a captured subagent tree whose child waits on a `git push *` ask
for ten minutes, in cycle impl-2003 of driver implementer."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
from sqlalchemy.engine import Engine

from archiver.redact import Redactor
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import Cycle, SessionIndex
from telemetry.tower.live import store_live_rows
from telemetry.tower.live_messages import store_live_messages
from tower.live_board import LiveBoard
from tower.live_messages import LiveMessages
from tower.mirror import Mirror

__all__ = ["seed_interleaved_archives", "seed_waiting_tree", "store_waiting_tree", "waiting_root"]

FIXTURES = Path(__file__).parent / "fixtures" / "opencode"


def waiting_root() -> str:
    """The root of the captured subagent tree the live seeds use."""
    return str(orjson.loads((FIXTURES / "subagent_tree.json").read_bytes())["root_id"])


def store_waiting_tree(engine: Engine) -> tuple[str, list[str]]:
    """Live rows of the captured subagent tree, its child waiting on a `git push *` ask for ten
    minutes; a cycle naming the root (stored before) is linked to them, and their messages so
    far as the watcher stores them. Returns the child and every session id of the tree."""
    fx = orjson.loads((FIXTURES / "subagent_tree.json").read_bytes())
    root = fx["root_id"]
    child = next(s["id"] for s in fx["sessions"] if s.get("parentID") == root)
    shift = time.time() - fx["events"][-1]["received"] / 1000.0 - 600  # the run ends ten minutes ago
    board = LiveBoard("http://oc:4096", lambda s: root)
    board.about(1, "1.18.33")  # what the captured tree's server ran
    mirror = Mirror()
    messages = LiveMessages(mirror)
    for e in fx["events"]:
        board.on_event(e["event"], e["received"] / 1000.0 + shift)
        mirror.on_event(e["event"], e["received"] / 1000.0 + shift)
    t = fx["events"][-1]["received"] / 1000.0 + shift
    board.on_event(
        {"type": "session.status", "properties": {"sessionID": child, "status": {"type": "busy"}}}, t
    )
    ask_id = "per_" + format((int(t * 1000) % (1 << 36)) << 12 | 1, "012x") + "abc"
    ask = {"id": ask_id, "sessionID": child, "permission": "bash", "patterns": ["git push *"]}
    board.on_event({"type": "permission.asked", "properties": ask}, t)
    redactor = Redactor(b"k" * 32, [])
    with session_scope(engine) as db:
        store_live_rows(db, board.snapshot(time.time()), redactor=redactor)
        store_live_messages(db, "http://oc:4096", messages.take(time.time()), redactor=redactor)
    return child, [s["id"] for s in fx["sessions"]]


def seed_waiting_tree(url: str) -> tuple[str, list[str]]:
    """A tree with a child waiting on a `git push *` ask for ten minutes, named by cycle
    impl-2003 of driver implementer."""
    engine = make_engine(url)
    upgrade(engine)
    with session_scope(engine) as db:
        now = datetime.now(UTC)
        db.add(
            Cycle(
                cycle_id="impl-2003",
                driver="implementer",
                session_id=waiting_root(),
                started_at=now,
                updated_at=now,
            )
        )
    out = store_waiting_tree(engine)
    engine.dispose()
    return out


def seed_interleaved_archives(url: str) -> list[str]:
    """Archived sessions of three trees whose archive times interleave (as a watcher that
    archives a tree again when a child finishes writes them): tree A (a root, its child, its
    grandchild), tree B (a root alone), and a child of tree C whose root was never archived.
    Newest archived first they read a2, b, c1, a1, a; returns the ids in that order."""
    now = datetime.now(UTC)
    rows = [  # (session, root, parent, depth, minutes ago)
        ("ses_tree_a2", "ses_tree_a", "ses_tree_a1", 2, 1),
        ("ses_tree_b", "ses_tree_b", None, 0, 2),
        ("ses_tree_c1", "ses_tree_c", "ses_tree_c", 1, 3),
        ("ses_tree_a1", "ses_tree_a", "ses_tree_a", 1, 4),
        ("ses_tree_a", "ses_tree_a", None, 0, 5),
    ]
    engine = make_engine(url)
    upgrade(engine)
    with session_scope(engine) as db:
        for sid, root, parent, depth, ago in rows:
            db.add(
                SessionIndex(
                    session_id=sid,
                    root_session_id=root,
                    parent_session_id=parent,
                    depth=depth,
                    title=f"archived {sid[9:]}",
                    archived_at=now - timedelta(minutes=ago),
                    archive_path=f"{sid}.json",
                    content_hash=sid,
                )
            )
    engine.dispose()
    return [r[0] for r in rows]
