"""Keep the content index (`search_part`) in step with the session index.

Each writer of `session_index` (one tree, a batch, an import, a repair) calls `enqueue` with
the sessions it indexed, in its own transaction: one upsert into `search_pending`, and the
catch-up indexer (`search_catchup`) writes their parts later with `put_parts`: the session's
parts that changed are deleted and its new ones written (those unchanged stay, their text not
indexed again), so archiving a session again never doubles a hit and a crash leaves the old
parts or the new. The parts come from the redacted archive document
(`archiver.content`). `remove_parts` and `unqueue` go with the index rows when sessions are
pruned.

Cheap by construction: a few statements per batch of sessions (a read of its stored parts by
session id, which the session index of `search_part` answers, a delete of those that changed by
id, and one multi-row insert of the new). Every new row goes in
through `_insert`, which on SQLite also puts the new ids' text into the FTS5 table in one
statement (migration 0026); a delete trigger takes a row's text out, and PostgreSQL's GIN
index keeps itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NotRequired, TypedDict

from sqlalchemy import and_, delete, insert, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlmodel import Session, col

from archiver.content import ContentPart, content_parts
from telemetry.store.search_models import SearchPart, SearchPending
from telemetry.timeutil import as_utc, utcnow

__all__ = [
    "PartRow",
    "enqueue",
    "part_rows",
    "put_live_parts",
    "put_parts",
    "remove_live_parts",
    "remove_parts",
    "unqueue",
]

_T = SearchPart.__table__  # type: ignore[attr-defined]
_P = SearchPending.__table__  # type: ignore[attr-defined]
_CHUNK = 500  # session ids per statement: under every engine's parameter limit
_COLUMNS = ("session_id", "message_index", "part_index", "kind", "tool", "at", "body", "live_message_id")
# what a part says, but for its time: a stored part equal in all of these is kept as it is
_SAME = ("session_id", "message_index", "part_index", "kind", "tool", "body")
_COPY = f"COPY search_part ({', '.join(_COLUMNS)}) FROM STDIN"
_INSERT = f"INSERT INTO search_part ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
_MAX_ID = text("SELECT max(id) FROM search_part")
_FTS_ADD = text(
    "INSERT INTO session_search_parts(rowid, body) "
    "SELECT id, body FROM search_part WHERE id BETWEEN :lo AND :hi"
)


def _at(ms: float | None) -> datetime | None:
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000.0, UTC)
    except (OverflowError, OSError, ValueError):
        return None


class PartRow(TypedDict):
    """A `search_part` row to write (its id is the database's)."""

    session_id: str
    message_index: int
    part_index: int
    kind: str
    tool: str | None
    at: datetime | None
    body: str
    live_message_id: NotRequired[int]  # read from this live message, not an archive


def part_rows(session_id: str, parts: Iterable[ContentPart]) -> list[PartRow]:
    """The `search_part` rows of one session's parts (dict displays: a third of the time of
    calling `PartRow`)."""
    return [
        {
            "session_id": session_id,
            "message_index": p.message_index,
            "part_index": p.part_index,
            "kind": p.kind,
            "tool": (p.tool or "")[:200] or None,
            "at": _at(p.created_ms),
            "body": p.body,
        }
        for p in parts
    ]


def remove_parts(db: Session, session_ids: Iterable[str], *, live_too: bool = True) -> None:
    """Delete the parts of these sessions (without `live_too`: only those of their archives)."""
    ids = sorted(set(session_ids))
    for i in range(0, len(ids), _CHUNK):
        stmt = delete(SearchPart).where(col(SearchPart.session_id).in_(ids[i : i + _CHUNK]))
        db.exec(stmt if live_too else stmt.where(col(SearchPart.live_message_id).is_(None)))


def put_parts(db: Session, parts: Mapping[str, Sequence[ContentPart]]) -> int:
    """Replace the archived parts of each session named with those given; returns the rows
    written. A stored part the same as the new one at its place (turn, part) is kept as it is
    (a session archived again mostly repeats itself: its text is not indexed again); every
    other stored part of those sessions goes. Its live messages' parts are the watcher's
    (`put_live_parts`): they go when the watcher clears them, so the two writers never delete
    the same rows (which could deadlock)."""
    if not parts:
        return 0
    rows = [row for sid, mine in parts.items() for row in part_rows(sid, mine)]
    stored, twice = _stored(db, sorted(parts))
    new = [r for r in rows if stored.pop(_key(r), None) is None] if stored else rows
    gone = sorted([*stored.values(), *twice])
    for i in range(0, len(gone), _CHUNK):
        db.exec(delete(SearchPart).where(col(SearchPart.id).in_(gone[i : i + _CHUNK])))
    return _insert(db, new)


def _key(row: Mapping[Any, Any]) -> tuple[object, ...]:
    at = row["at"]
    return (*(row[c] for c in _SAME), as_utc(at) if at is not None else None)


def _stored(db: Session, session_ids: Sequence[str]) -> tuple[dict[tuple[object, ...], int], list[int]]:
    """The archived parts stored for these sessions: what each says -> its id; and the ids of
    any that say the same as another (never written so, but then they go)."""
    out: dict[tuple[object, ...], int] = {}
    twice: list[int] = []
    cols = [_T.c.id, *(_T.c[c] for c in _SAME), _T.c.at]
    for i in range(0, len(session_ids), _CHUNK):
        mine = _T.c.session_id.in_(session_ids[i : i + _CHUNK])
        for r in db.connection().execute(select(*cols).where(mine, _T.c.live_message_id.is_(None))):
            key = _key(r._mapping)
            if (was := out.setdefault(key, int(r.id))) != r.id:
                twice.append(was)
                out[key] = int(r.id)
    return out, twice


def enqueue(db: Session, session_ids: Iterable[str], *, redacted: Collection[str] = ()) -> None:
    """Queue these sessions for the catch-up, in the writer's transaction (sorted: two writers
    lock the queue's rows in the same order). A session queued already keeps its time and
    gets a new tick. `redacted` names those among them whose index row now names a document
    octel wrote redacted itself (the catch-up reads its text as it is); any other is redacted
    again before it is indexed, and so is one queued again before it was read, if either
    writer's document was not one of those (the flag only ever falls while queued)."""
    ids = sorted(set(session_ids))
    if not ids:
        return
    dialect = db.get_bind().dialect.name
    ins = postgresql.insert(_P) if dialect == "postgresql" else sqlite.insert(_P)
    now = utcnow()
    for i in range(0, len(ids), _CHUNK):
        values = [
            {"session_id": s, "queued_at": now, "tick": 0, "redacted": s in redacted}
            for s in ids[i : i + _CHUNK]
        ]
        stmt = ins.values(values)
        again = {"tick": _P.c.tick + 1, "redacted": and_(_P.c.redacted, stmt.excluded.redacted)}
        db.connection().execute(stmt.on_conflict_do_update(index_elements=["session_id"], set_=again))


def unqueue(db: Session, session_ids: Iterable[str]) -> None:
    """Take these sessions off the queue (they are pruned)."""
    ids = sorted(set(session_ids))
    for i in range(0, len(ids), _CHUNK):
        db.exec(delete(SearchPending).where(col(SearchPending.session_id).in_(ids[i : i + _CHUNK])))


def remove_live_parts(db: Session, live_ids: Iterable[int]) -> None:
    """Delete the parts read from these live messages (`live_message.id`)."""
    ids = sorted(set(live_ids))
    for i in range(0, len(ids), _CHUNK):
        db.exec(delete(SearchPart).where(col(SearchPart.live_message_id).in_(ids[i : i + _CHUNK])))


def put_live_parts(db: Session, messages: Sequence[tuple[int, str, int, Mapping[str, Any]]]) -> int:
    """Replace the parts of these live messages, `(live id, session, position, body)` with the
    body redacted as stored (info and parts, as an archive's message); the rows written. A
    part's turn is the message's position, as the live session's page numbers it."""
    remove_live_parts(db, [m[0] for m in messages])
    rows: list[PartRow] = []
    for live_id, sid, position, body in messages:
        parts = content_parts({"messages": [body]})
        mine = part_rows(sid, [dataclasses.replace(p, message_index=position) for p in parts])
        rows += [{**r, "live_message_id": live_id} for r in mine]
    return _insert(db, rows)


def _insert(db: Session, rows: Sequence[PartRow]) -> int:
    """Write these `search_part` rows and, on SQLite, their text into the FTS5 table: the one
    writer of both (migration 0026 took the per-row insert trigger off; one set-based insert
    of the new ids' text costs a third of it). The rows written."""
    if not rows:
        return 0
    conn = db.connection()
    if conn.dialect.name == "postgresql":
        _copy(conn, rows)
        return len(rows)
    if conn.dialect.name != "sqlite":
        conn.execute(insert(_T), rows)
        return len(rows)
    # the driver's own executemany: a third of SQLAlchemy's insert of the same rows with
    # RETURNING (the time as SQLAlchemy would store it: `at`'s own bind processor)
    at = _T.c.at.type.bind_processor(conn.dialect)
    dbapi: Any = conn.connection.dbapi_connection
    dbapi.executemany(_INSERT, [_values(r, at) for r in rows])
    # the new ids are the largest: SQLite gives each new row the largest id plus one, and the
    # insert took the write lock, held to the commit, so no other writer's row came between
    hi = int(conn.execute(_MAX_ID).scalar_one())
    conn.execute(_FTS_ADD, {"lo": hi - len(rows) + 1, "hi": hi})
    return len(rows)


def _values(r: PartRow, at: Callable[[Any], Any] | None = None) -> tuple[object, ...]:
    """The row's values in `_COLUMNS` order, its time through `at` when given."""
    when = at(r["at"]) if at is not None else r["at"]
    return (
        r["session_id"],
        r["message_index"],
        r["part_index"],
        r["kind"],
        r["tool"],
        when,
        r["body"],
        r.get("live_message_id"),
    )


def _copy(conn: Connection, rows: Sequence[PartRow]) -> None:
    """PostgreSQL: the rows by `COPY`, in the transaction's own connection (about a fifth less
    than a multi-row insert, most of what is left being the GIN index's trigrams)."""
    dbapi: Any = conn.connection.dbapi_connection
    with dbapi.cursor() as cur, cur.copy(_COPY) as copy:
        for r in rows:
            copy.write_row(_values(r))
