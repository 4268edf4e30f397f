"""Write the audit row of each action `octel watch` carried out or skipped on a live server
(redacted: the evidence and the server's answer may quote prompts and commands), and count it."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Session

from archiver.cut import cut
from archiver.redact import Redactor
from telemetry.store.action_models import WatchAction
from telemetry.store.aggregates import bump
from tower.act import Carried

__all__ = ["record_action"]

# evidence texts (a retry message, a finding's summary) are cut to this, after redaction
_EVIDENCE = 300


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
    it = done.intent
    loose = {"detail": done.detail, "evidence": dict(it.evidence), "answer": done.answer}
    text, _ = redactor.redact_obj(loose)
    evidence = {k: cut(v, _EVIDENCE, "…") if isinstance(v, str) else v for k, v in text["evidence"].items()}
    row = WatchAction(
        at=datetime.fromtimestamp(at, UTC),
        server=redactor.cut(server, 500),
        session_id=it.session_id[:200],  # an id, as the server gave it: never rewritten
        root_session_id=root_session_id,
        rule=it.rule,
        action=it.kind,
        outcome=done.outcome,
        detail=cut(str(text["detail"]), 1000),
        evidence=evidence,
        answer_status=done.status,
        answer=cut(str(text["answer"]), 1000) or None,
        watcher=redactor.cut(watcher, 200) if watcher else None,
    )
    db.add(row)
    bump(db, "actions_total", {"rule": it.rule, "outcome": done.outcome}, 1)
    return row
