"""Archive results in the store: one row per session, counters, findings; the Python API."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from archiver_fakes import FakeOpenCode, raises, recording_deletes, status, tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_records import session_record
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.files import read_archive
from archiver.record import SessionRecord
from archiver.redact import Redactor
from telemetry.archiving import ArchiveOutcome, archive_session_tree_async
from telemetry.services.index.indexing import index_records, record_findings
from telemetry.settings import Settings
from telemetry.store.aggregates import read_all
from telemetry.store.db import session_scope
from telemetry.store.models import Finding, SessionIndex

RED = Redactor(b"k" * 32, ["configured-secret-value-1"])
GH = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def _settings(tmp_path: Path, engine: Engine) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        database_url=str(engine.url.render_as_string(hide_password=False)),
        redact_values="configured-secret-value-1",
        _env_file=None,
    )  # type: ignore[call-arg]


def _run(fake: FakeOpenCode, settings: Settings, engine: Engine, **kw: object) -> ArchiveOutcome:
    async def go() -> ArchiveOutcome:
        async with httpx.AsyncClient(transport=fake.transport()) as http:
            return await archive_session_tree_async(
                "ses_root", settings=settings, engine=engine, server_url="http://oc.test", http=http, **kw
            )  # type: ignore[arg-type]

    return asyncio.run(go())


def _counters(engine: Engine) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with session_scope(engine, write=False) as db:
        return {(m, tuple(sorted(lbl.items()))): v for m, lbl, v in read_all(db)}


def test_archive_and_index_a_tree(tmp_path: Path, engine: Engine) -> None:
    settings = _settings(tmp_path, engine)
    out = _run(tree([2, 1]), settings, engine, label="nightly")
    assert out.ok, out.to_dict()
    assert out.indexed.new == 4 and out.indexed.updated == 0
    with session_scope(engine, write=False) as db:
        rows = {r.session_id: r for r in db.exec(select(SessionIndex))}
    assert set(rows) == {"ses_root", "ses_d1_0", "ses_d1_1", "ses_d2_0"}
    root = rows["ses_root"]
    assert root.depth == 0 and root.label == "nightly" and root.subtree_session_count == 4
    assert rows["ses_d2_0"].parent_session_id == "ses_d1_0" and rows["ses_d2_0"].depth == 2
    assert rows["ses_d1_0"].agent == "general" and root.message_count == 2
    assert root.turn_count == 1 and root.tokens_input == 10 and root.cost_usd == pytest.approx(0.001)
    assert root.subtree_cost_usd == pytest.approx(0.004)
    assert (settings.archives / root.archive_path).is_file()
    assert root.content_hash.startswith("sha256:") and root.schema_version == 3
    c = _counters(engine)
    assert c[("sessions_archived_total", (("agent", "build"), ("source", "opencode")))] == 1
    assert c[("sessions_archived_total", (("agent", "general"), ("source", "opencode")))] == 3
    assert (settings.data_dir / "redact.key").is_file()


def test_rearchive_updates_rows_and_counts_only_growth(tmp_path: Path, engine: Engine) -> None:
    settings = _settings(tmp_path, engine)
    fake = tree([1])
    _run(fake, settings, engine)
    before = _counters(engine)
    fake.messages["ses_root"].append(
        fake.messages["ses_root"][1] | {"info": {**fake.messages["ses_root"][1]["info"], "id": "msg_000009"}}
    )
    out = _run(fake, settings, engine)
    assert out.indexed.new == 0 and out.indexed.updated == 2
    with session_scope(engine, write=False) as db:
        rows = list(db.exec(select(SessionIndex)))
    assert len(rows) == 2
    after = _counters(engine)
    key = (
        "session_tokens_total",
        (("agent", "build"), ("kind", "input"), ("model", "p/m"), ("source", "opencode")),
    )
    assert after[key] - before.get(key, 0) == 10
    assert after[("sessions_archived_total", (("agent", "build"), ("source", "opencode")))] == 1
    assert len(list(settings.archives.iterdir())) == 2


def _record(**kw: Any) -> SessionRecord:
    stuck = {
        "root_session_id": "s1",
        "model": "p/m",
        "created_ms": 1.0,
        "updated_ms": 2.0,
        "archived_at": "2026-11-29T10:00:00.000Z",
        "turn_count": 0,
        "message_count": 0,
        "verdict": "stuck",
        "worst_detector": "doom_loop",
        "finding_count": 1,
        "archive_path": "a.json",
        "schema_version": 2,
        "findings": (
            {
                "detector": "doom_loop",
                "verdict": "stuck",
                "score": 1.0,
                "evidence": {"n": 5},
                "start_index": 3,
            },
        ),
    }
    return session_record(**{**stuck, **kw})


def test_findings_are_upserted(engine: Engine) -> None:
    rec = _record()
    with session_scope(engine) as db:
        assert index_records(db, [rec], redactor=RED).findings_new == 1
    with session_scope(engine) as db:
        assert index_records(db, [rec], redactor=RED).findings_new == 0
        assert index_records(db, [dataclasses.replace(rec, findings=())], redactor=RED).findings_new == 0
    with session_scope(engine, write=False) as db:
        assert list(db.exec(select(Finding))) == []
    c = _counters(engine)
    assert c[("findings_total", (("detector", "doom_loop"), ("verdict", "stuck")))] == 1


def test_delete_after_only_when_complete(tmp_path: Path, engine: Engine) -> None:
    settings = _settings(tmp_path, engine)
    fake = tree([1])
    fake.fault("/session/ses_d1_0/message", *[raises(httpx.ConnectError)] * 4)
    deleted = recording_deletes(fake)
    out = _run(fake, settings, engine, delete_after=True)
    assert not out.ok and deleted == [] and out.result is not None
    assert out.result.delete_error and "not archived in full" in out.result.delete_error
    c = _counters(engine)
    assert c[("archive_failures_total", (("error_kind", "connection"),))] == 1
    out = _run(fake, settings, engine, delete_after=True)
    assert out.ok and out.result is not None and out.result.deleted
    assert deleted == ["/session/ses_root"]


def test_api_never_raises(tmp_path: Path, engine: Engine) -> None:
    settings = _settings(tmp_path, engine)
    out = _run(FakeOpenCode(), settings, engine)
    assert not out.ok and out.result is not None and out.result.walk_errors
    bad = Settings(
        data_dir=tmp_path / "d2",
        database_url="nosuchdb://x",  # type: ignore[call-arg]
        _env_file=None,
    )
    out = _run(tree([]), bad, None)  # type: ignore[arg-type]
    assert not out.ok and out.errors


def test_live_findings_are_redacted_before_they_are_stored(engine: Engine) -> None:
    evidence = {"signature": f"bash curl -H 'Authorization: token {GH}'", "calls": [GH, "ls"]}
    finding = {"detector": "doom_loop", "verdict": "stuck", "score": 1.0, "evidence": evidence}
    with session_scope(engine) as db:
        assert record_findings(db, "s1", [finding], redactor=RED, source="live") == 1
    with session_scope(engine) as db:
        rec = _record(findings=({**finding, "detector": "permission_deadlock"},), title=f"t {GH}")
        index_records(db, [rec], redactor=RED)
    with session_scope(engine, write=False) as db:
        stored = [(f.source, f.evidence) for f in db.exec(select(Finding))]
        row = db.exec(select(SessionIndex)).one()
    assert len(stored) == 2 and GH not in repr(stored) and row.title and GH not in row.title
    assert all(ev and ev["calls"][0].startswith("[REDACTED:github:") for _, ev in stored)


def _total(engine: Engine, metric: str, **labels: str) -> float:
    with session_scope(engine, write=False) as db:
        return sum(v for m, lbl, v in read_all(db) if m == metric and labels.items() <= lbl.items())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 100)), min_size=1, max_size=6))
def test_usage_counters_never_count_the_same_tokens_twice(
    engine: Engine, readings: list[tuple[int, int]]
) -> None:
    # a failed walk reads less, a later one more again: counted once up to the highest reading
    uid = uuid.uuid4().hex
    model = f"p/{uid}"
    for tokens, cents in readings:
        with session_scope(engine) as db:
            rec = _record(session_id=f"s-{uid}", model=model, tokens_input=tokens, cost_usd=cents / 100)
            index_records(db, [rec], redactor=RED)
    assert _total(engine, "session_tokens_total", model=model, kind="input") == max(t for t, _ in readings)
    assert _total(engine, "session_cost_usd_total", model=model) == pytest.approx(
        max(c for _, c in readings) / 100
    )


def test_a_finding_that_comes_and_goes_is_counted_once_per_verdict(engine: Engine) -> None:
    doom = {"detector": "doom_loop", "verdict": "suspect"}
    for findings in ([doom], [], [doom], [{**doom, "verdict": "stuck"}], [doom]):
        with session_scope(engine) as db:
            record_findings(db, "s1", findings, redactor=RED, source="live")
    assert _total(engine, "findings_total", detector="doom_loop", verdict="suspect") == 1
    assert _total(engine, "findings_total", detector="doom_loop", verdict="stuck") == 1


def test_a_failed_rearchive_keeps_the_complete_archive_and_counts_nothing_twice(
    tmp_path: Path, engine: Engine
) -> None:
    settings = _settings(tmp_path, engine)
    fake = tree([1])
    assert _run(fake, settings, engine).ok
    first = sorted(p.name for p in settings.archives.iterdir())
    key = (
        "session_tokens_total",
        (("agent", "build"), ("kind", "input"), ("model", "p/m"), ("source", "opencode")),
    )
    counted = _counters(engine)[key]
    fake.fault("/session/ses_root/message", *[status(500)] * 10)
    out = _run(fake, settings, engine)
    fake.faults.clear()
    assert not out.ok and out.result is not None
    assert out.result.kept == [first[0]] and "ses_root" in first[0]
    assert any(e["what"] == "messages" for e in out.result.walk_errors)
    kept = read_archive(settings.archives / first[0])
    assert len(kept["messages"]) == 2 and kept["walk_errors"] == []
    with session_scope(engine, write=False) as db:
        root = db.exec(select(SessionIndex).where(SessionIndex.session_id == "ses_root")).one()
    assert root.archive_path == first[0] and root.message_count == 2 and root.tokens_input == 10
    c = _counters(engine)
    assert c[key] == counted and c[("archive_failures_total", (("error_kind", "server_error"),))] == 1
    assert _run(fake, settings, engine).ok
    assert _counters(engine)[key] == counted


def test_a_session_never_archived_is_written_even_when_its_messages_fail(
    tmp_path: Path, engine: Engine
) -> None:
    settings = _settings(tmp_path, engine)
    fake = tree([])
    fake.fault("/session/ses_root/message", *[status(500)] * 10)
    out = _run(fake, settings, engine)
    assert not out.ok and out.result is not None and len(out.result.files) == 1 and not out.result.kept


def test_a_session_without_turns_is_empty_never_healthy() -> None:
    from archiver.record import record_from_doc

    doc: dict[str, Any] = {"schema_version": 2, "session_id": "ses_none", "messages": [], "per_turn": []}
    assert record_from_doc(doc, "ses_none.json", "h").verdict == "empty"
    turn = {"index": 1, "tokens": {}, "cost": 0.0}
    doc |= {"per_turn": [turn], "totals": {"turns": 1}}
    assert record_from_doc(doc, "ses_none.json", "h").verdict == "healthy"


def test_rearchive_without_a_label_keeps_the_stored_one(tmp_path: Path, engine: Engine) -> None:
    """`octel archive ses_… --label fleet-a`, then `octel archive ses_…`: still fleet-a, same file."""
    settings = _settings(tmp_path, engine)
    fake = tree([1])
    assert _run(fake, settings, engine, label="fleet-a").ok
    assert _run(fake, settings, engine).ok
    with session_scope(engine, write=False) as db:
        rows = list(db.exec(select(SessionIndex)))
    assert {r.session_id: r.label for r in rows}["ses_root"] == "fleet-a"
    # the files written now still carry the label in their names (never "nolabel")
    assert all("fleet-a" in r.archive_path and "nolabel" not in r.archive_path for r in rows)
    assert _run(fake, settings, engine, label="fleet-b").ok  # a new label still wins
    with session_scope(engine, write=False) as db:
        root = db.exec(select(SessionIndex).where(SessionIndex.session_id == "ses_root")).one()
    assert root.label == "fleet-b"


def test_the_search_queue_trusts_only_the_documents_the_archive_wrote(tmp_path: Path, engine: Engine) -> None:
    """A tree archived queues its documents as written redacted (the catch-up reads them as
    they are); an older archive kept in place of one whose messages failed is not vouched for."""
    from telemetry.store.search_models import SearchPending

    def queued() -> dict[str, bool]:
        with session_scope(engine, write=False) as db:
            return {s: bool(r) for s, r in db.exec(select(SearchPending.session_id, SearchPending.redacted))}

    settings = _settings(tmp_path, engine).model_copy(update={"search_catchup_seconds": 5.0})
    fake = tree([1])
    assert _run(fake, settings, engine).ok
    assert queued() == {"ses_root": True, "ses_d1_0": True}
    fake.fault("/session/ses_root/message", *[status(500)] * 10)
    out = _run(fake, settings, engine)
    assert out.result is not None and out.result.kept
    assert queued() == {"ses_root": False, "ses_d1_0": True}
