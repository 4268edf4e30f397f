"""A watcher that takes a server over from a dead one: a tree only the dead holder's live rows
name, which the server deleted before the new watcher saw any of it, is in `octel lost`
(``unseen``) and off the live board; a tree the server still has, one the new watcher's mirror
holds, one archived, and one quiet since before the dead holder began are left alone."""

from __future__ import annotations

import asyncio
import socket
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.errors import FetchError
from archiver.recorder import Recorder
from archiver.redact import Redactor
from telemetry.store.db import session_scope
from telemetry.store.live_models import LiveMessage, LiveSession
from telemetry.store.lost_models import LostTree
from telemetry.store.models import SessionIndex
from telemetry.timeutil import utcnow
from telemetry.tower.lease import Claim
from telemetry.tower.watching import _seed_takeover, _unseen
from tower.mirror import Mirror
from tower.seen import Journal
from tower.watch import WatchConfig

SERVER = "http://127.0.0.1:4096"


class _Client:
    base_url = SERVER

    def __init__(self, listed: list[str]) -> None:
        self.listed = listed

    async def list_sessions(self) -> list[dict[str, Any]]:
        return [{"id": s, "time": {"updated": 1}} for s in self.listed]

    async def session(self, sid: str) -> dict[str, Any]:
        if sid in self.listed:
            return {"id": sid}
        raise FetchError("not_found", "no such session", path=f"/session/{sid}", status=404)


class _Watcher:
    def __init__(self, listed: list[str], mirror_dir: Path | None = None) -> None:
        self.client = _Client(listed)
        self.cfg = WatchConfig(mirror_dir=mirror_dir)
        self.mirror = Mirror()
        self.rec = Recorder()
        self._resync = False


def _seed(engine: Engine, began_minutes_ago: float, *, only_gone: bool = False) -> None:
    now = utcnow()
    began = now - timedelta(minutes=began_minutes_ago)
    rows = [  # (session, root, last moved)
        ("ses_gone", "ses_gone", now),
        ("ses_gone_kid", "ses_gone", now),
        ("ses_listed", "ses_listed", now),
        ("ses_mirrored", "ses_mirrored", now),
        ("ses_archived", "ses_archived", now),
        ("ses_old", "ses_old", began - timedelta(minutes=5)),
    ]
    if only_gone:
        rows = rows[:2]
    common: dict[str, Any] = {"server": SERVER, "state": "idle", "first_seen_at": now, "updated_at": now}
    with session_scope(engine) as db:
        for sid, root, moved in rows:
            live = LiveSession(session_id=sid, root_session_id=root, last_activity_at=moved, **common)
            live.state_since = moved
            db.add(live)
        db.add(LiveMessage(server=SERVER, session_id="ses_gone", message_id="msg_1", body={}, updated_at=now))
        if only_gone:
            return
        db.add(
            SessionIndex(
                session_id="ses_archived",
                root_session_id="ses_archived",
                archived_at=now,
                archive_path="x",
                content_hash="h",
            )
        )


def _takeover(engine: Engine, watcher: _Watcher, began_minutes_ago: float, dead: str = "a") -> list[str]:
    said: list[str] = []
    began = utcnow() - timedelta(minutes=began_minutes_ago)
    claim = Claim(held=True, holder="b", taken_from=dead, previous_start=began)

    async def takeover() -> None:
        w: Any = watcher
        listed = await _seed_takeover(w, engine, claim, utcnow().timestamp(), said.append)
        if listed is not None:
            await _unseen(w, engine, claim, listed, Redactor(b"k" * 32), said.append)

    asyncio.run(takeover())
    return said


def test_a_tree_deleted_while_nobody_followed_is_lost_unseen_and_off_the_live_board(engine: Engine) -> None:
    _seed(engine, began_minutes_ago=2)
    watcher = _Watcher(["ses_listed"])
    created = {"sessionID": "ses_mirrored", "info": {"id": "ses_mirrored"}}
    watcher.mirror.on_event({"type": "session.created", "properties": created}, 1.0)
    assert "ses_mirrored" in watcher.mirror.parents
    said = _takeover(engine, watcher, 2)
    with session_scope(engine, write=False) as db:
        lost = list(db.exec(select(LostTree)))
        live = {r.session_id for r in db.exec(select(LiveSession))}
        kept = list(db.exec(select(LiveMessage)))
    assert [(r.root_session_id, r.reason, r.origin, r.sessions, r.archived) for r in lost] == [
        ("ses_gone", "unseen", "none", 2, False)
    ]
    assert lost[0].missing and "1 live messages" in str(lost[0].missing[0]["message"])
    assert live == {"ses_listed", "ses_mirrored", "ses_archived", "ses_old"}
    assert kept == []
    assert any(s.startswith("LOST ses_gone") for s in said), said
    # a second takeover says it no more than once
    _seed(engine, began_minutes_ago=2, only_gone=True)
    _takeover(engine, _Watcher(["ses_listed", "ses_mirrored"]), 2)
    with session_scope(engine, write=False) as db:
        assert len(list(db.exec(select(LostTree)))) == 1


def test_no_tree_is_said_lost_when_the_server_could_not_be_listed(engine: Engine) -> None:
    _seed(engine, began_minutes_ago=2)
    watcher = _Watcher([])

    async def down() -> list[dict[str, Any]]:
        raise FetchError("connect", "connection refused")

    watcher.client.list_sessions = down  # type: ignore[method-assign]
    _takeover(engine, watcher, 2)
    with session_scope(engine, write=False) as db:
        assert list(db.exec(select(LostTree))) == []
        assert len(list(db.exec(select(LiveSession)))) == 6


def test_a_tree_that_changed_after_its_archive_and_was_deleted_meanwhile_is_lost_incomplete(
    engine: Engine,
) -> None:
    now = utcnow()
    common: dict[str, Any] = {"server": SERVER, "state": "idle", "first_seen_at": now, "updated_at": now}
    with session_scope(engine) as db:
        for sid, archived in (("ses_stale", now - timedelta(seconds=30)), ("ses_whole", now)):
            live = LiveSession(session_id=sid, root_session_id=sid, **common)
            live.last_activity_at = live.state_since = now - timedelta(seconds=1)
            db.add(live)
            db.add(
                SessionIndex(
                    session_id=sid,
                    root_session_id=sid,
                    archived_at=archived,
                    archive_path="x",
                    content_hash="h",
                )
            )
    _takeover(engine, _Watcher([]), 2)
    with session_scope(engine, write=False) as db:
        lost = [(r.root_session_id, r.reason, r.archived) for r in db.exec(select(LostTree))]
    assert lost == [("ses_stale", "incomplete", True)]  # its last turns are in no archive


def test_a_tree_only_the_dead_watchers_journal_names_is_lost_unseen(engine: Engine, tmp_path: Path) -> None:
    # the dead one heard of the tree and was killed before the store let it write the row
    dead = Journal(tmp_path / "mirror" / "4242" / "seen.log")
    dead.add([("ses_new", "ses_new"), ("ses_new_kid", "ses_new"), ("ses_here", "ses_here")])
    _takeover(
        engine,
        _Watcher(["ses_here"], tmp_path / "mirror" / "99"),
        2,
        dead=f"{socket.gethostname()}:4242:ab12cd",
    )
    with session_scope(engine, write=False) as db:
        lost = [(r.root_session_id, r.reason, r.sessions) for r in db.exec(select(LostTree))]
    assert lost == [("ses_new", "unseen", 2)]
    # a journal the store caught up with names nothing more
    dead.clear()
    assert (tmp_path / "mirror" / "4242" / "seen.log").read_bytes() == b""


def test_a_dead_watcher_on_another_host_has_no_journal_here(engine: Engine, tmp_path: Path) -> None:
    Journal(tmp_path / "mirror" / "4242" / "seen.log").add([("ses_new", "ses_new")])
    _takeover(engine, _Watcher([], tmp_path / "mirror" / "99"), 2, dead="elsewhere:4242:ab12cd")
    with session_scope(engine, write=False) as db:
        assert list(db.exec(select(LostTree))) == []
