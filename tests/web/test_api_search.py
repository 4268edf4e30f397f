"""`GET /api/search` over the captured runs as the real archiver stored them, on SQLite and on a
real PostgreSQL: the same queries find the same parts on both, only redacted text is found, an id
jumps to its session, pages chain, bad fields are 422s that name them, and the index follows the
archives (archived again: no double hits; pruned: gone)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from console_seed import FIXTURES, CapturedServer, Store, _archive
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import func, select

from telemetry.archive_store import archive_store
from telemetry.services.index.prune import prune
from telemetry.store.db import make_engine, session_scope
from telemetry.store.models import SessionIndex
from telemetry.store.search_models import SearchPart
from telemetry.timeutil import utcnow


def _search(client: TestClient, q: str, **params: Any) -> dict[str, Any]:
    r = client.get("/api/search", params={"q": q, **params})
    assert r.status_code == 200, r.text
    return r.json()


def _where(page: dict[str, Any]) -> list[tuple[str, int, int, str, str | None]]:
    return [(h["session_id"], h["turn"], h["part"], h["kind"], h["tool"]) for h in page["hits"]]


def test_words_phrases_prefixes_and_filters_find_the_parts(client: TestClient, store: Store) -> None:
    roots = store.seeded.scenarios
    got = _search(client, '"File not found"')
    assert {h["session_id"] for h in got["hits"]} == {roots["tool_errors"]}
    assert all(h["kind"] == "tool" and h["tool"] == "read" for h in got["hits"])
    hit = got["hits"][0]
    marked = [hit["snippet"][s["start"] : s["end"]] for s in hit["highlights"]]
    assert marked == ["File not found"] and hit["agent"] and hit["title"]
    # a turn is the message's position: the console opens the session there
    assert sorted(h["turn"] for h in got["hits"]) == [3, 4]
    bash = _search(client, "tool:bash ls", limit=200)["hits"]
    assert bash and all(h["tool"] == "bash" and "ls" in h["snippet"].lower() for h in bash)
    assert _search(client, "tool:read ls", limit=200)["hits"] != bash
    # `dev*` is a word's start: `/home/dev/…` yes, `/home/xdev` would not be
    assert all("/dev" in h["snippet"] for h in _search(client, "dev*", limit=200)["hits"])
    assert _search(client, "source:claude_code ls")["hits"] == []
    assert _search(client, "verdict:healthy ls", limit=200)["hits"] != []
    assert _search(client, "ls", since=(utcnow() + timedelta(days=1)).isoformat())["hits"] == []
    assert _search(client, "since:30000d ls")["hits"] != []


def test_only_redacted_text_is_indexed(client: TestClient, store: Store) -> None:
    assert _search(client, "ghp_FAKEfake")["hits"] == []
    assert _search(client, "sk-proj-FAKE")["hits"] == []
    said = _search(client, '"Deploy with my token"')["hits"]
    assert [h["session_id"] for h in said] == [store.seeded.scenarios["secrets"]]
    assert "[REDACTED:github:" in said[0]["snippet"]


def test_an_id_jumps_to_its_session(client: TestClient, store: Store) -> None:
    sid = store.seeded.scenarios["healthy"]
    assert _search(client, sid)["jump"] == {"session_id": sid, "matched": "session"}
    cyc = _search(client, "cyc-secrets")["jump"]
    assert cyc == {"session_id": store.seeded.scenarios["secrets"], "matched": "cycle"}
    assert _search(client, "ses_nope")["jump"] is None


def test_pages_chain_to_the_whole_answer(client: TestClient, store: Store) -> None:
    whole = _where(_search(client, "bash", limit=200))
    assert len(whole) > 5
    seen: list[Any] = []
    cursor = None
    while True:
        page = _search(client, "bash", limit=2, **({"cursor": cursor} if cursor else {}))
        seen += _where(page)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == whole


def test_a_bad_field_is_a_422_naming_it(client: TestClient, store: Store) -> None:
    for params, field in (
        ({"q": "x", "cursor": "abc"}, "query.cursor"),
        ({"q": "x", "since": "soon"}, "query.since"),
        ({"q": "since:soon x"}, "query.q"),
        ({"q": ""}, "query.q"),
        ({"q": "x", "limit": "0"}, "query.limit"),
    ):
        r = client.get("/api/search", params=params)
        assert r.status_code == 422, (params, r.text)
        assert [f["field"] for f in r.json()["error"]["fields"]] == [field]


def _parts(engine: Engine, session_ids: list[str]) -> int:
    with session_scope(engine, write=False) as db:
        stmt = select(func.count()).select_from(SearchPart).where(SearchPart.session_id.in_(session_ids))  # type: ignore[attr-defined]
        return int(db.exec(stmt).one())


def test_the_index_follows_archiving_again_and_pruning(client: TestClient, store: Store) -> None:
    fx = json.loads((FIXTURES / "tool_errors.json").read_text())
    before = _where(_search(client, '"File not found"'))
    engine = make_engine(store.settings.db_url)
    try:
        tree = _tree(engine, fx["root_id"])
        had = _parts(engine, tree)
        server = CapturedServer(fx, fx["opencode_version"])
        out = asyncio.run(_archive(server, fx, store.settings, engine, "tool_errors", "cyc-tool_errors"))
        assert out.ok, out.errors
        assert _parts(engine, tree) == had > 0  # replaced, not doubled
        assert [w[1:] for w in _where(_search(client, '"File not found"'))] == [w[1:] for w in before]
        prune(
            engine, archive_store(store.settings, engine), utcnow() + timedelta(days=1), keep_failures=False
        )
        assert _parts(engine, tree) == 0
        assert _search(client, '"File not found"')["hits"] == []
    finally:
        engine.dispose()


def _tree(engine: Engine, root: str) -> list[str]:
    with session_scope(engine, write=False) as db:
        stmt = select(SessionIndex.session_id).where(SessionIndex.root_session_id == root)
        return list(db.exec(stmt).all())
