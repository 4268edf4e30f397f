"""`octel why` for a session running now: its live state as the verdict, in the shape of the
archived answer (`telemetry.queries.why`), with the live row itself."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Session

from telemetry.queries.live import age_text, get_live
from telemetry.queries.why_models import WhyAnswer

__all__ = ["why_live"]


def why_live(db: Session, session_id: str, now: datetime) -> WhyAnswer | None:
    """`octel why` for a session that is live: the state as the verdict, in the shape of the
    archived answer (`code`, `verdict`, `summary`, `evidence`) plus the live row."""
    r = get_live(db, session_id, now)
    if r is None:
        return None
    evidence = [{"source": "live", "detail": r.explanation}]
    for f in r.findings:
        if f.get("verdict") != "healthy":
            evidence.append(
                {
                    "source": "finding",
                    "detail": f"detector {f.get('detector')}: {f.get('verdict')} (live): {f.get('sentence')}",
                }
            )
    if r.last_activity_at is not None:
        evidence.append({"source": "live", "detail": f"last activity {age_text(r.inactive_s)} ago"})
    return WhyAnswer.model_validate(
        {
            "id": session_id,
            "kind": "session",
            "session_id": session_id,
            "cycle_id": r.cycle_id,
            "code": "running"
            if r.state not in ("idle", "interrupted", "errored", "deleted", "unknown")
            else r.state,
            "verdict": r.state.replace("_", " "),
            "summary": r.explanation,
            "evidence": evidence,
            "live": r.model_dump(mode="json"),
        }
    )
