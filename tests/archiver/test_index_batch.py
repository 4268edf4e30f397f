"""The bulk indexer of an import writes what indexing one record at a time writes: the same
rows, findings, counted findings and counters, over new sessions, re-archives that grow or
shrink, and findings that come, change verdict and go."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from memory_store import memory_store
from session_records import session_record
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.record import SessionRecord
from archiver.redact import Redactor
from telemetry.services.index.index_batch import index_batch
from telemetry.services.index.indexing import index_records
from telemetry.store.aggregates import coalesced, read_all
from telemetry.store.db import session_scope
from telemetry.store.models import CountedFinding, Finding, SessionIndex

RED = Redactor(b"k" * 32, ["configured-secret-value-1"])
GH = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def _record(
    sid: str, tokens: int, path: str, findings: tuple[tuple[str, str], ...], title: str
) -> SessionRecord:
    return session_record(
        sid,
        root_session_id="s0",
        parent_session_id=None if sid == "s0" else "s0",
        depth=0 if sid == "s0" else 1,
        title=title,
        created_ms=1.7e12,
        updated_ms=1.7e12 + tokens,
        archived_at="2026-11-30T00:00:00Z",
        tokens_input=tokens,
        tokens_output=tokens // 2,
        tokens_cache_read=tokens // 3,
        cost_usd=tokens / 1000,
        subtree_tokens=tokens,
        subtree_cost_usd=tokens / 1000,
        verdict=findings[0][1] if findings else "healthy",
        worst_detector=findings[0][0] if findings else None,
        finding_count=len(findings),
        archive_path=path,
        findings=tuple(
            {"detector": d, "verdict": v, "score": 0.5, "evidence": {"why": title}} for d, v in findings
        ),
        source="claude_code",
    )


_FINDINGS = st.lists(
    st.tuples(st.sampled_from(["loop", "retry", "denial"]), st.sampled_from(["suspect", "stuck"])),
    max_size=3,
).map(tuple)
_RECORD = st.builds(
    _record,
    st.sampled_from(["s0", "s1", "s2"]),
    st.integers(0, 5000),
    st.sampled_from(["a.json", "b.json"]),
    _FINDINGS,
    st.sampled_from(["plain title", f"key {GH} here", "configured-secret-value-1 in it"]),
)


def _contents(engine: Engine) -> dict[str, Any]:
    with session_scope(engine, write=False) as db:
        rows = [r.model_dump(exclude={"id", "archived_at"}) for r in db.exec(select(SessionIndex))]
        finds = [
            f.model_dump(exclude={"id", "detected_at"})
            for f in db.exec(select(Finding).order_by(Finding.session_id))
        ]
        counted = [c.model_dump(exclude={"id"}) for c in db.exec(select(CountedFinding))]
        counters = sorted((m, sorted(lbl.items()), round(v, 9)) for m, lbl, v in read_all(db))
    key = lambda d: sorted((k, str(v)) for k, v in d.items())  # noqa: E731
    return {
        "rows": sorted(rows, key=key),
        "findings": sorted(finds, key=key),
        "counted": sorted(counted, key=key),
        "counters": counters,
    }


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(_RECORD, min_size=1, max_size=4), min_size=1, max_size=4))
def test_a_batch_writes_what_one_by_one_writes(batches: list[list[SessionRecord]]) -> None:
    with memory_store() as one, memory_store() as bulk:
        for records in batches:
            with session_scope(one) as db:
                index_records(db, records, redactor=RED)
            with session_scope(bulk) as db, coalesced(db):
                index_batch(db, records, redactor=RED)
        got, want = _contents(bulk), _contents(one)
    assert got == want
    assert GH not in str(got) and "configured-secret-value-1" not in str(got)


def test_the_batch_names_the_files_its_rows_no_longer_point_at() -> None:
    with memory_store() as engine:
        with session_scope(engine) as db:
            first = index_batch(db, [_record("s0", 10, "a.json", (), "t")], redactor=RED)
        with session_scope(engine) as db:
            again = index_batch(
                db, [_record("s0", 20, "b.json", (), "t"), _record("s1", 5, "c.json", (), "t")], redactor=RED
            )
        with session_scope(engine) as db:
            same = index_batch(db, [_record("s1", 5, "c.json", (), "t")], redactor=RED)
    assert (first.stats.new, first.replaced) == (1, {})
    assert (again.stats.new, again.stats.updated, again.replaced) == (1, 1, {"s0": "a.json"})
    assert (same.stats.updated, same.replaced) == (1, {})
