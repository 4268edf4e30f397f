"""Spend so far of the sessions running now, for the Costs view: counted once.

A session's cost enters the window's spend when it is archived (its index row). Until then only
its live row (`octel watch`) knows it, so Costs adds it apart, marked live. A session archived
and running again has both: only what it spent past its archive counts as live, so nothing is
counted twice; once the new archive lands, the live part falls to nothing.
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from sqlmodel import Session, col, select

from telemetry.store.live_models import LiveSession
from telemetry.store.models import SessionIndex

__all__ = ["LiveSpend", "LiveSpendRow", "live_spend"]


class LiveSpendRow(BaseModel):
    session_id: str
    title: str | None
    agent: str | None
    model: str | None
    state: str
    cost_usd: float = Field(description="spent so far and not in any archive yet")
    archived: bool = Field(description="an earlier archive holds the rest of its spend")


class LiveSpend(BaseModel):
    """Spend of live sessions not counted in the archived spend, most expensive first."""

    cost_usd: float
    count: int = Field(description="live sessions with spend not archived yet")
    sessions: list[LiveSpendRow]


def live_spend(db: Session, limit: int = 10) -> LiveSpend:
    """Each live session's cost past its archive (all of it when it has none)."""
    newest: dict[str, LiveSession] = {}
    for x in db.exec(select(LiveSession).where(col(LiveSession.cost_usd) > 0)):
        have = newest.get(x.session_id)  # one session on two servers: the larger count holds
        if have is None or x.cost_usd > have.cost_usd:
            newest[x.session_id] = x
    archived: dict[str, float] = {}
    if newest:
        q = select(SessionIndex.session_id, SessionIndex.cost_usd).where(
            col(SessionIndex.session_id).in_(list(newest))
        )
        archived = {sid: float(cost or 0.0) for sid, cost in db.exec(q)}
    rows = []
    for sid, x in newest.items():
        extra = x.cost_usd - archived.get(sid, 0.0)
        if extra > 1e-9:
            rows.append(
                LiveSpendRow(
                    session_id=sid,
                    title=x.title,
                    agent=x.agent,
                    model=x.model,
                    state=x.state,
                    cost_usd=round(extra, 6),
                    archived=sid in archived,
                )
            )
    rows.sort(key=lambda r: (-r.cost_usd, r.session_id))
    total = round(sum(r.cost_usd for r in rows), 6)
    return LiveSpend(cost_usd=total, count=len(rows), sessions=rows[:limit])
