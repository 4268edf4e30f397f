"""Writes that move the daily spend summary, through the services, for its tests: index
writes (one by one and in bulk), cycle begins and finishes naming sessions, removals of index
rows and pruned cycles."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from session_records import session_record
from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from archiver.metrics import TOKEN_KINDS
from archiver.record import SessionRecord
from archiver.redact import Redactor
from telemetry.queries.spend_record import FINE_KEYS, SpendRecord, fold
from telemetry.services.index.index_batch import index_batch
from telemetry.services.index.indexing import index_records
from telemetry.services.ingest.ingest import CycleBegin, CycleFinish, begin_cycle, finish_cycle
from telemetry.services.spend.spend_links import cycles_changed, remove_sessions
from telemetry.store.aggregates import coalesced
from telemetry.store.db import session_scope
from telemetry.store.models import Cycle

__all__ = ["BASE", "CYCLES", "DRIVER", "SESSIONS", "apply_op", "assert_same", "record", "window"]

RED = Redactor(b"k" * 32)
BASE = datetime(2026, 11, 10, tzinfo=UTC)
NOW = datetime(2026, 12, 1, tzinfo=UTC)
SESSIONS = ["s0", "s1", "s2", "s3"]
CYCLES = ["c0", "c1", "c2"]
DRIVER = {"c0": "implement", "c1": "review", "c2": "implement"}  # a cycle id has one driver


def record(
    sid: str, *, label: str | None, minutes: int | None, tokens: int, agent: str, source: str
) -> SessionRecord:
    root = "s0" if sid in ("s0", "s2") else "s1"
    at = BASE + timedelta(minutes=minutes or 0)
    return session_record(
        sid,
        root_session_id=root,
        parent_session_id=None if sid == root else root,
        depth=0 if sid == root else 1,
        label=label,
        agent=agent,
        model="m1" if tokens % 2 else "m2",
        created_ms=None if minutes is None else at.timestamp() * 1000,
        archived_at=(at + timedelta(hours=7)).isoformat(),
        tokens_input=tokens,
        tokens_output=tokens // 2,
        tokens_reasoning=tokens % 7,
        tokens_cache_read=tokens // 3,
        tokens_cache_write=tokens % 5,
        cost_usd=tokens / 1000 + 0.1,
        subtree_tokens=tokens,
        subtree_cost_usd=tokens / 1000,
        source=source,
    )


def apply_op(engine: Engine, op: tuple[Any, ...]) -> None:
    with session_scope(engine) as db:
        kind = op[0]
        if kind == "index":
            index_records(db, op[1], redactor=RED, cycle_id=op[2])
        elif kind == "batch":
            with coalesced(db):
                index_batch(db, op[1], redactor=RED)
        elif kind == "begin":
            start = BASE + timedelta(minutes=op[3])
            begin_cycle(
                db,
                CycleBegin(cycle_id=op[1], driver=DRIVER[op[1]], started_at=start, session_id=op[2]),
                NOW,
                redactor=RED,
            )
        elif kind == "finish":
            p = CycleFinish(cycle_id=op[1], driver=DRIVER[op[1]], terminal_state="done", session_id=op[2])
            finish_cycle(db, p, NOW, redactor=RED)
        elif kind == "remove":  # what retention and repair do
            remove_sessions(db, [op[1]])
        else:  # a pruned cycle
            links = [
                (c.cycle_id, c.session_id) for c in db.exec(select(Cycle).where(Cycle.cycle_id == op[1]))
            ]
            db.exec(delete(Cycle).where(col(Cycle.cycle_id) == op[1]))
            cycles_changed(db, links)


def _as_map(records: list[SpendRecord]) -> dict[tuple[Any, ...], SpendRecord]:
    return {(r.source, *(r.key(k) for k in FINE_KEYS)): r for r in fold(records, FINE_KEYS) if r.count}


def assert_same(got: list[SpendRecord], want: list[SpendRecord]) -> None:
    g, w = _as_map(got), _as_map(want)
    assert g.keys() == w.keys()
    for k, r in w.items():
        sums = (*TOKEN_KINDS, "count")
        assert [getattr(g[k], t) for t in sums] == [getattr(r, t) for t in sums], k
        assert math.isclose(g[k].cost_usd, r.cost_usd, rel_tol=1e-9, abs_tol=1e-9), k


def window(minutes: tuple[int | None, int | None]) -> tuple[datetime | None, datetime | None]:
    since, until = (None if m is None else BASE + timedelta(minutes=m) for m in minutes)
    if since is not None and until is not None and until < since:
        since, until = until, since
    return since, until
