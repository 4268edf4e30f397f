"""Write the audit row of each action `octel watch` carried out or skipped on a live server
(redacted: the evidence and the server's answer may quote prompts and commands), and count it.

An action sent to a server is written in two steps: `claim_action` before the request (outcome
``sending``; None when the store already holds the intent's key: another watcher recorded it)
and `settle_action` after it, on the same row. `audit_of` reads the rows of intent keys before
acting; `left_sending` finds the rows a dead watcher left ``sending``, which `mark_unknown`
reports as such."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from archiver.cut import cut
from archiver.redact import Redactor
from telemetry.store.action_models import WatchAction
from telemetry.store.aggregates import bump
from tower.act import Carried
from tower.actions import Recorded

__all__ = ["audit_of", "claim_action", "left_sending", "mark_unknown", "record_action", "settle_action"]

# evidence texts (a retry message, a finding's summary) are cut to this, after redaction
_EVIDENCE = 300


def _fill(row: WatchAction, done: Carried, redactor: Redactor) -> None:
    loose = {"detail": done.detail, "evidence": dict(done.intent.evidence), "answer": done.answer}
    text, _ = redactor.redact_obj(loose)
    row.evidence = {
        k: cut(v, _EVIDENCE, "…") if isinstance(v, str) else v for k, v in text["evidence"].items()
    }
    row.outcome = done.outcome
    row.detail = cut(str(text["detail"]), 1000)
    row.answer_status = done.status
    row.answer = cut(str(text["answer"]), 1000) or None


def _row(
    server: str, done: Carried, redactor: Redactor, at: float, root: str | None, watcher: str | None
) -> WatchAction:
    it = done.intent
    row = WatchAction(
        at=datetime.fromtimestamp(at, UTC),
        server=redactor.cut(server, 500),
        session_id=it.session_id[:200],  # an id, as the server gave it: never rewritten
        root_session_id=root,
        rule=it.rule,
        action=it.kind,
        outcome=done.outcome,
        detail="",
        watcher=redactor.cut(watcher, 200) if watcher else None,
        intent_key=it.key[:300],  # ids and a time, as the server and the watcher gave them
    )
    _fill(row, done, redactor)
    return row


def record_action(
    db: Session,
    server: str,
    done: Carried,
    *,
    redactor: Redactor,
    at: float,
    root_session_id: str | None = None,
    watcher: str | None = None,
) -> WatchAction:
    """One row with its final outcome (an intent skipped, notified, or failing its re-check, or
    a person's answer). Only the first row of an intent carries its key: a later one (an ask
    answered twice by hand, a skip after the intent was settled) is a row of its own."""
    row = _row(server, done, redactor, at, root_session_id, watcher)
    taken = select(WatchAction.id).where(
        col(WatchAction.server) == row.server, col(WatchAction.intent_key) == row.intent_key
    )
    if row.intent_key and db.exec(taken.limit(1)).first() is not None:
        row.intent_key = None
    db.add(row)
    bump(db, "actions_total", {"rule": done.intent.rule, "outcome": done.outcome}, 1)
    return row


def claim_action(
    db: Session,
    server: str,
    sending: Carried,
    *,
    redactor: Redactor,
    at: float,
    root_session_id: str | None = None,
    watcher: str | None = None,
) -> int | None:
    """Write the intent, outcome ``sending``, and commit it; its row id, or None when a row of
    the same key was there first (nothing is to be sent then)."""
    row = _row(server, sending, redactor, at, root_session_id, watcher)
    db.add(row)
    try:
        db.commit()
    except IntegrityError:
        db.rollback()
        return None
    return row.id


def settle_action(db: Session, row_id: int, done: Carried, *, redactor: Redactor) -> None:
    """The outcome of a claimed action, on its row."""
    row = db.get(WatchAction, row_id)
    if row is None:
        return
    _fill(row, done, redactor)
    db.add(row)
    bump(db, "actions_total", {"rule": row.rule, "outcome": done.outcome}, 1)


def audit_of(db: Session, server: str, keys: Sequence[str]) -> dict[str, Recorded]:
    """The audit rows of these intent keys on ``server``, by key."""
    if not keys:
        return {}
    q = select(WatchAction).where(col(WatchAction.server) == server[:500])
    q = q.where(col(WatchAction.intent_key).in_([k[:300] for k in keys]))
    return {
        r.intent_key: Recorded(r.intent_key, r.outcome, r.watcher, r.id) for r in db.exec(q) if r.intent_key
    }


def left_sending(db: Session, server: str, holder: str | None) -> list[WatchAction]:
    """Rows of ``server`` another watcher left ``sending``: it lost the lease, or died, mid-request."""
    q = select(WatchAction).where(
        col(WatchAction.server) == server[:500], col(WatchAction.outcome) == "sending"
    )
    return [r for r in db.exec(q.order_by(col(WatchAction.id))) if r.watcher != holder]


def mark_unknown(db: Session, row_id: int, detail: str) -> None:
    """A ``sending`` row whose watcher died: outcome ``unknown``, with what the server shows now."""
    row = db.get(WatchAction, row_id)
    if row is None or row.outcome != "sending":
        return  # its watcher settled it after all
    row.outcome = "unknown"
    row.detail = cut(f"watcher died while sending: {row.detail}; {detail}", 1000)
    db.add(row)
    bump(db, "actions_total", {"rule": row.rule, "outcome": "unknown"}, 1)
