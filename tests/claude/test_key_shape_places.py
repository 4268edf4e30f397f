"""Every key shape and signed URL is gone from each place a Claude session reaches: the archive
file, the index row (sessions list and API), the OTel export of the archive, and the cycles and
health that dispatchers report; and a title cut at 200 characters keeps no head of a URL
password that straddled the cut."""

from __future__ import annotations

import json

from claude_lines import assistant, jsonl, tool_result, tool_use, user
from fastapi.testclient import TestClient
from key_shapes import SIGNED_URLS, all_planted, every_key
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.claude.tree import build_tree
from archiver.files import read_archive
from telemetry.otel_export.mapping import tree_spans
from telemetry.services.claude.importer import archive_claude
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import Cycle, SessionIndex
from web.app import create_app
from web.app_state import app_state

PASSWORD = "hunter2-title-password"
# the title is cut at 200: the URL's password straddles the cut, its `@host` is past it
TITLE = "x" * 180 + f" postgres://admin:{PASSWORD}@db.internal:5432/app then more"
AUTH = {"Authorization": "Bearer test-token-0123456789"}


def _left(text: str) -> list[str]:
    keys = [*every_key(), *(sig for _, sig, _ in SIGNED_URLS)]
    return [k for k in keys if k in text] + [PASSWORD[:8]] * (PASSWORD[:8] in text)


def test_no_key_shape_survives_in_the_archive_the_index_the_api_or_the_otel_export(
    settings: Settings, engine: Engine
) -> None:
    lines = [
        user("s1", TITLE),
        *assistant("s1", "m1", [tool_use("c1", command=f"deploy {all_planted()}")]),
        user("s1", tool_result("c1", f"ok {all_planted()}")),
    ]
    out = archive_claude(build_tree("s1", jsonl(lines)), settings=settings, engine=engine)
    assert out.ok, out.to_dict()
    (path,) = out.files
    doc = read_archive(path)
    assert _left(path.read_text()) == []
    assert doc["title"].startswith("x" * 180) and len(doc["title"]) <= 200
    with session_scope(engine) as db:
        row = db.exec(select(SessionIndex).where(SessionIndex.session_id == "s1")).one()
        assert _left(row.title or "") == [] and (row.title or "").startswith("x" * 180)
    with TestClient(create_app(settings)) as client:
        listed = client.get("/api/sessions", params={"limit": 50}).text
    assert "s1" in listed and _left(listed) == []
    spans = tree_spans([doc], content=True)
    assert spans and _left(repr(spans)) == []


def test_no_key_shape_survives_in_cycles_or_health(settings: Settings) -> None:
    planted = all_planted()
    with TestClient(create_app(settings)) as client:
        begin = {"cycle_id": "c1", "driver": "review", "host": "h", "meta": {"env": planted, "n": 3}}
        assert client.post("/api/v1/cycles/begin", json=begin, headers=AUTH).status_code == 201
        finish = {
            "cycle_id": "c1",
            "driver": "review",
            "terminal_state": "failed",
            "error_kind": planted[:190],
            "worker_outcome": "crashed",
        }
        assert client.post("/api/v1/cycles/finish", json=finish, headers=AUTH).status_code == 200
        beat = {"driver": "review", "host": "h", "in_flight_cycle_id": planted[:200]}
        assert client.post("/api/v1/heartbeat", json=beat, headers=AUTH).status_code == 200
        served = client.get("/api/cycles").text + client.get("/api/health").text
        with session_scope(app_state(client.app).engine, write=False) as db:
            stored = json.dumps([r.model_dump(mode="json") for r in db.exec(select(Cycle)).all()])
    assert _left(served) == [] and _left(stored) == []
    assert "[REDACTED:stripe:" in stored
