"""Spend so far of the sessions running now, for the Costs view: counted once.

A session's cost enters the window's spend when it is archived (its index row). Until then only
its live row (`octel watch`) knows it, so Costs adds it apart, marked live. A session archived
and running again has both: only what it spent past its archive counts as live, so nothing is
counted twice; once the new archive lands, the live part falls to nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import or_
from sqlmodel import Session, col, select

from archiver.metrics import TOKEN_KINDS
from telemetry.queries.fleet_models import LiveSpend, LiveSpendRow
from telemetry.store.live_models import LiveSession
from telemetry.store.models import SessionIndex, Usage

__all__ = ["LiveSpend", "LiveSpendRow", "LiveUse", "live_past_archive", "live_spend"]


@dataclass(frozen=True)
class LiveUse:
    """What a live session spent past its archive (all of it when it has none)."""

    row: LiveSession  # its live row (of the server whose count is the largest)
    cost_usd: float
    tokens: int  # every kind
    archived: bool


def _tokens(x: Usage) -> int:
    return sum(int(getattr(x, f"tokens_{k}") or 0) for k in TOKEN_KINDS)


def live_past_archive(db: Session, fresher: Iterable[LiveSession] = ()) -> list[LiveUse]:
    """Each live session's usage past its index row: the one rule that counts live spend once.
    ``fresher`` are rows newer than the store's (a watcher's own board); the larger count holds."""
    newest: dict[str, LiveSession] = {}
    spent = or_(
        col(LiveSession.cost_usd) > 0, col(LiveSession.tokens_input) > 0, col(LiveSession.tokens_output) > 0
    )
    for x in [*db.exec(select(LiveSession).where(spent)), *fresher]:
        have = newest.get(x.session_id)  # one session on two servers: the larger count holds
        if have is None or (x.cost_usd, _tokens(x)) > (have.cost_usd, _tokens(have)):
            if have is not None and not x.driver and have.driver:  # keep the store's link (a copy:
                x = LiveSession(**(x.model_dump() | {"driver": have.driver}))  # never a row)
            newest[x.session_id] = x
    archived: dict[str, tuple[float, int]] = {}
    ids = list(newest)
    for i in range(0, len(ids), 500):
        q = select(SessionIndex).where(col(SessionIndex.session_id).in_(ids[i : i + 500]))
        archived |= {r.session_id: (float(r.cost_usd or 0.0), _tokens(r)) for r in db.exec(q)}
    out = []
    for sid, x in newest.items():
        cost, tokens = archived.get(sid, (0.0, 0))
        extra, more = x.cost_usd - cost, max(_tokens(x) - tokens, 0)
        if extra > 1e-9 or more:
            out.append(LiveUse(x, max(extra, 0.0), more, sid in archived))
    return out


def live_spend(db: Session, limit: int = 10) -> LiveSpend:
    """Each live session's cost past its archive (all of it when it has none)."""
    rows = [
        LiveSpendRow(
            session_id=u.row.session_id,
            title=u.row.title,
            agent=u.row.agent,
            model=u.row.model,
            state=u.row.state,
            cost_usd=round(u.cost_usd, 6),
            archived=u.archived,
        )
        for u in live_past_archive(db)
        if u.cost_usd > 1e-9
    ]
    rows.sort(key=lambda r: (-r.cost_usd, r.session_id))
    total = round(sum(r.cost_usd for r in rows), 6)
    return LiveSpend(cost_usd=total, count=len(rows), sessions=rows[:limit])
