"""Write the watcher's live rows into the store (redacted), link them to the cycle that names
the session, keep live findings in the `finding` table, and delete rows of forgotten trees."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import NamedTuple

from sqlmodel import Session, col, delete, select

from archiver.redact import Redactor
from detectors.findings import FindingDict, dominant_of
from telemetry.services.index.indexing import record_findings
from telemetry.store.live_models import LiveSession
from telemetry.store.models import Cycle
from telemetry.timeutil import utcnow
from telemetry.tower.live_messages import clear_live_messages
from tower.live_board import LiveRow

__all__ = ["Stored", "forget_live", "store_live_rows"]


def _dt(t: float | None) -> datetime | None:
    return datetime.fromtimestamp(t, UTC) if t is not None else None


def _cycles(db: Session, ids: set[str]) -> dict[str, tuple[str, str]]:
    """session id -> (cycle id, driver) of the newest cycle naming it."""
    if not ids:
        return {}
    out: dict[str, tuple[str, str]] = {}
    q = select(Cycle.session_id, Cycle.cycle_id, Cycle.driver).where(col(Cycle.session_id).in_(ids))
    for sid, cid, driver in db.exec(q.order_by(col(Cycle.started_at))):
        if sid is not None:
            out[sid] = (cid, driver)
    return out


def _worst(findings: Sequence[FindingDict]) -> str | None:
    # a row's findings, redacted (strings only change); the one stable rank the archive names
    # its pattern by: equal scores never flip it
    named = dominant_of(findings)
    return str(named.get("detector")) if named is not None else None


class Stored(NamedTuple):
    new: int  # rows that were not in the store yet
    rows: list[LiveSession]  # the stored row of each row given, in its order (redacted)


def store_live_rows(db: Session, rows: Sequence[LiveRow], *, redactor: Redactor) -> Stored:
    """Upsert one row per (server, session)."""
    if not rows:
        return Stored(0, [])
    now = utcnow()
    keys = {(r.server, r.session_id) for r in rows}
    servers = {k[0] for k in keys}
    have = {
        (x.server, x.session_id): x
        for x in db.exec(
            select(LiveSession).where(
                col(LiveSession.server).in_(servers),
                col(LiveSession.session_id).in_({k[1] for k in keys}),
            )
        )
    }
    linked = {k for k, x in have.items() if x.cycle_id}
    unlinked = {r.session_id for r in rows if (r.server, r.session_id) not in linked}
    unlinked |= {r.root_session_id for r in rows if r.root_session_id}
    cycles = _cycles(db, unlinked)
    new, out = 0, []
    for r in rows:
        loose = {
            "title": r.title,
            "reason": r.reason,
            "patterns": list(r.permission_patterns),
            "findings": [dict(f) for f in r.findings],
            "directory": r.directory,
        }
        text, _ = redactor.redact_obj(loose)
        x = have.get((r.server, r.session_id))
        if x is None:
            x = have[(r.server, r.session_id)] = LiveSession(
                server=r.server, session_id=r.session_id, state=r.state, first_seen_at=now
            )
            new += 1
        out.append(x)
        before = {(f.get("detector"), f.get("verdict")) for f in x.findings or []}
        x.root_session_id, x.parent_session_id = r.root_session_id, r.parent_session_id
        if r.generation is not None:  # a row written before the probe answered keeps what it had
            x.generation, x.server_version = r.generation, r.server_version
        x.title, x.agent, x.model, x.directory = text["title"], r.agent, r.model, text["directory"]
        x.state, x.state_since, x.state_reason = r.state, _dt(r.state_since) or now, text["reason"] or None
        x.retry_attempt, x.retry_next_at = r.retry_attempt, _dt(r.retry_next_at)
        x.permission, x.permission_patterns = r.permission, text["patterns"] or None
        x.permission_request_id, x.permission_asked_at = r.permission_request_id, _dt(r.permission_asked_at)
        x.tool, x.tool_since, x.last_activity_at = r.tool, _dt(r.tool_since), _dt(r.last_activity_at)
        x.turns, x.cost_usd = r.turns, r.cost_usd
        x.tokens_input, x.tokens_output = r.tokens.get("input", 0), r.tokens.get("output", 0)
        x.tokens_reasoning = r.tokens.get("reasoning", 0)
        x.tokens_cache_read = r.tokens.get("cache_read", 0)
        x.tokens_cache_write = r.tokens.get("cache_write", 0)
        x.verdict, x.findings, x.worst_detector = r.verdict, text["findings"], _worst(text["findings"])
        link = cycles.get(r.session_id) or (cycles.get(r.root_session_id) if r.root_session_id else None)
        if link is not None and not x.cycle_id:
            x.cycle_id, x.driver = link
        x.updated_at = now
        db.add(x)
        if {(f.get("detector"), f.get("verdict")) for f in text["findings"]} != before:
            record_findings(db, r.session_id, text["findings"], redactor=redactor, source="live")
    return Stored(new, out)


def forget_live(db: Session, server: str, session_ids: Iterable[str]) -> int:
    """Delete the rows of sessions the watcher forgot (their trees were archived long ago),
    and their live messages."""
    ids = list(session_ids)
    clear_live_messages(db, server, ids)
    n = 0
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        stmt = delete(LiveSession).where(
            col(LiveSession.server) == server, col(LiveSession.session_id).in_(chunk)
        )
        n += db.exec(stmt).rowcount or 0
    return n
