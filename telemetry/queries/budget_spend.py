"""Spend so far per budget scope, read from the store while trees run.

Archived spend comes from the index rows (a tree: its rows; a label: its rows, all time) and
from the Costs page's own read of today (`spend_read.window_groupings`: the daily summary and
the Claude runs no archive holds); live spend is what each live session spent past its archive
(`live_spend.live_past_archive`, the rule Costs uses), counted today. So a session running,
then archived, then running again is counted once, whatever moment the check runs.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import func
from sqlmodel import Session, col, select

from archiver.metrics import TOKEN_KINDS
from telemetry.queries.live_spend import live_past_archive
from telemetry.queries.spend_read import window_groupings
from telemetry.store.live_models import LiveSession
from telemetry.store.models import SessionIndex
from telemetry.timeutil import as_utc
from tower.budgets import SCOPES, Scope, Used
from tower.claude_source import is_claude_server

__all__ = ["SpendSoFar", "spend_so_far"]

# trees archived this recently are checked too (a Claude Code tree has no live row)
RECENT = timedelta(hours=1)
_CHUNK = 500


@dataclass
class SpendSoFar:
    day: str  # the UTC day the daily scopes count
    spent: dict[tuple[Scope, str], Used] = field(default_factory=dict)
    claude_roots: set[str] = field(default_factory=set)  # trees no watcher can stop
    drivers: dict[str, str] = field(default_factory=dict)  # a live tree's root -> its driver

    def add(self, scope: Scope, subject: str, usd: float, tokens: int) -> None:
        have = self.spent.get((scope, subject), Used())
        self.spent[(scope, subject)] = Used(have.usd + usd, have.tokens + tokens)


def _tokens_sum() -> object:
    return sum(func.coalesce(func.sum(col(getattr(SessionIndex, f"tokens_{k}"))), 0) for k in TOKEN_KINDS)


def _trees(db: Session, out: SpendSoFar, roots: list[str]) -> None:
    for i in range(0, len(roots), _CHUNK):
        chunk = roots[i : i + _CHUNK]
        q = (
            select(SessionIndex.root_session_id, func.sum(SessionIndex.cost_usd), _tokens_sum())  # type: ignore[call-overload]
            .where(col(SessionIndex.root_session_id).in_(chunk))
            .group_by(col(SessionIndex.root_session_id))
        )
        for root, cost, tokens in db.exec(q):
            out.add("tree", root, float(cost or 0.0), int(tokens or 0))
        src = select(SessionIndex.session_id).where(
            col(SessionIndex.session_id).in_(chunk), col(SessionIndex.source) == "claude_code"
        )
        out.claude_roots |= set(db.exec(src))


def _labels(db: Session, out: SpendSoFar) -> None:
    q = (
        select(SessionIndex.label, func.sum(SessionIndex.cost_usd), _tokens_sum())  # type: ignore[call-overload]
        .where(col(SessionIndex.label).is_not(None))
        .group_by(col(SessionIndex.label))
    )
    for label, cost, tokens in db.exec(q):
        out.add("label", label, float(cost or 0.0), int(tokens or 0))


def _today(db: Session, out: SpendSoFar, midnight: datetime) -> None:
    (records,) = window_groupings(db, midnight, None, [["driver"]])
    for r in records:
        tokens = sum(r.tokens().values())
        out.add("fleet_day", "", r.cost_usd, tokens)
        if r.driver:
            out.add("driver_day", r.driver, r.cost_usd, tokens)


def spend_so_far(
    db: Session,
    now: datetime,
    *,
    scopes: Collection[Scope] = SCOPES,
    roots: Iterable[str] = (),
    fresher: Iterable[LiveSession] = (),
    labels: Mapping[str, str] = {},
) -> SpendSoFar:
    """Spend per (scope, subject) of the scopes asked for: every tree running now, archived in
    the last hour or named in ``roots``; every driver and the fleet today (UTC); every label.
    ``fresher`` are live rows newer than the store's; ``labels`` gives a live tree its label
    (the one its archive will carry)."""
    now = as_utc(now)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    out = SpendSoFar(midnight.date().isoformat())
    live = live_past_archive(db, fresher)
    if "tree" in scopes:
        recent = select(SessionIndex.root_session_id).where(col(SessionIndex.archived_at) >= now - RECENT)
        todo = set(roots) | {u.row.root_session_id or u.row.session_id for u in live}
        todo |= set(db.exec(recent.distinct().limit(5000)))
        _trees(db, out, sorted(todo))
    if "label" in scopes:
        _labels(db, out)
    if "driver_day" in scopes or "fleet_day" in scopes:
        _today(db, out, midnight)
    for u in live:
        root = u.row.root_session_id or u.row.session_id
        if is_claude_server(u.row.server):  # a Claude Code tree running now: no watcher stops it
            out.claude_roots.add(root)
        if "tree" in scopes:
            out.add("tree", root, u.cost_usd, u.tokens)
        out.add("fleet_day", "", u.cost_usd, u.tokens)
        if u.row.driver:
            out.add("driver_day", u.row.driver, u.cost_usd, u.tokens)
            out.drivers[root] = u.row.driver
        if (label := labels.get(root)) is not None:
            out.add("label", label, u.cost_usd, u.tokens)
    out.spent = {k: v for k, v in out.spent.items() if k[0] in scopes}
    return out
