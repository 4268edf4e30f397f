"""`source` on the session metrics: Claude Code and OpenCode sessions split in /metrics."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from metrics_helpers import parse, value
from session_records import session_record
from store_templates import migrate_by_copy

from archiver.claude.layout import find_sessions
from archiver.claude.loading import load_tree
from archiver.record import SOURCE_KINDS, SessionRecord, source_label
from archiver.redact import Redactor
from telemetry.services.claude.importer import archive_claude
from telemetry.services.index.indexing import index_records
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from web.app import create_app
from web.app_state import app_state

FIXTURES = Path(__file__).parents[1] / "fixtures" / "claude"


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    migrate_by_copy(settings.db_url)  # at head already: the app's upgrade is the one-query check
    with TestClient(create_app(settings)) as c:
        yield c


def _opencode_record() -> SessionRecord:
    return session_record(
        "ses_oc",
        model="p/m",
        created_ms=1.0,
        updated_ms=2.0,
        archived_at="2026-11-29T10:00:00.000Z",
        tokens_input=40,
        cost_usd=0.5,
        subtree_tokens=40,
        subtree_cost_usd=0.5,
        content_hash="0" * 64,
        source="opencode",
    )


def test_claude_and_opencode_sessions_split_by_source(client: TestClient, settings: Settings) -> None:
    engine = app_state(client.app).engine
    (files,) = find_sessions(FIXTURES / "d_subagent_tree" / "json")
    assert archive_claude(load_tree(files), settings=settings, engine=engine).ok
    with session_scope(engine) as db:
        index_records(db, [_opencode_record()], redactor=Redactor(b"0" * 32))
    samples, _ = parse(client.get("/metrics").text)
    claude = {k: v for k, v in samples.items() if ("source", "claude_code") in k[1]}
    archived = sum(v for (n, _), v in claude.items() if n == "octel_sessions_archived_total")
    assert archived == 2  # the session and its subagent
    cost = sum(v for (n, _), v in claude.items() if n == "octel_session_cost_usd_total")
    assert cost == pytest.approx(0.174432)  # the fixture's own cost, from its cost-state
    assert (
        value(samples, "octel_session_cost_usd_total", agent="build", model="p/m", source="opencode") == 0.5
    )
    sources = {dict(k[1]).get("source") for k in samples if k[0].startswith("octel_session")}
    assert sources == set(SOURCE_KINDS)


@given(st.text(max_size=30) | st.none())
def test_source_label_is_one_of_a_fixed_set(kind: str | None) -> None:
    assert source_label(kind) in SOURCE_KINDS
    assert source_label(kind) == (kind if kind in SOURCE_KINDS else "opencode")
