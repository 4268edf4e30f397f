"""`/api/costs`: breakdowns by agent, model, driver and day, totals, top sessions and trees."""

from __future__ import annotations

from typing import Any

from console_seed import Store
from fastapi.testclient import TestClient

from web.app_state import app_state


def _costs(client: TestClient, **params: Any) -> dict[str, Any]:
    r = client.get("/api/costs", params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_every_grouping_adds_up_to_the_totals(client: TestClient, store: Store) -> None:
    body = _costs(client, since="1d")
    assert set(body["breakdowns"]) == {"agent", "model", "driver", "day"}
    total = body["totals"]["cost_usd"]
    assert total > 0.4  # the sessions plus the Claude CLI run
    for by, rows in body["breakdowns"].items():
        assert rows, by
        assert abs(sum(r["cost_usd"] for r in rows) - total) < 1e-6, by
        assert sum(r["count"] for r in rows) == body["totals"]["count"]
        assert len({r["key"] for r in rows}) == len(rows), f"{by}: one row per key"
        for r in rows:
            assert abs(sum(x["cost_usd"] for x in r["sources"]) - r["cost_usd"]) < 1e-6
        costs = [r["cost_usd"] for r in rows]
        assert costs == sorted(costs, reverse=True)
    drivers = {r["key"] for r in body["breakdowns"]["driver"] if r["key"]}
    assert drivers == {"implement", "review"}
    today = body["breakdowns"]["day"][0]  # sessions and the Claude run on one row (a day)
    assert {x["source"] for x in today["sources"]} == {"opencode", "claude"}
    agents = {r["key"]: r for r in body["breakdowns"]["agent"]}
    assert {"build", "general", "nester", "claude"} <= set(agents)
    claude = agents["claude"]
    assert [x["source"] for x in claude["sources"]] == ["claude"]
    assert claude["cache_hit_ratio"] == round(52000 / (52000 + 1200), 4)
    daily = body["daily"]
    assert daily["stack"] == "agent" and today["key"] in daily["days"]
    assert len(daily["days"]) == 2  # the window's two UTC days, with spend or not
    assert abs(sum(daily["day_totals"]) - total) < 1e-6


def test_top_sessions_and_trees(client: TestClient, store: Store) -> None:
    body = _costs(client, since="1d", top=3)
    tops = body["top_sessions"]
    assert len(tops) == 3
    assert [s["cost_usd"] for s in tops] == sorted((s["cost_usd"] for s in tops), reverse=True)
    trees = _costs(client, since="1d", top=50)["top_trees"]
    by_root = {t["session_id"]: t for t in trees}
    tree = by_root[store.seeded.scenarios["subagent_tree"]]
    assert tree["subtree_session_count"] == 3 and tree["subtree_cost_usd"] > tree["cost_usd"]
    assert all(
        store.seeded.sessions[t["session_id"]]["depth"] == 0 for t in trees if t["source"] == "opencode"
    )
    runs = [t for t in _costs(client, since="1d", top=50)["top_sessions"] if t["source"] == "claude"]
    assert [(r["title"], r["cost_usd"]) for r in runs] == [("fix-flaky-test", 0.4213)]


def test_window_and_grouping_choice(client: TestClient) -> None:
    only = _costs(client, since="1d", by="agent,day")
    assert set(only["breakdowns"]) == {"agent", "day"}
    empty = _costs(client, since="2030-01-01T00:00:00Z", until="2030-01-02T00:00:00Z")
    assert empty["totals"]["cost_usd"] == 0 and empty["top_sessions"] == []
    assert empty["since"].startswith("2030-01-01")


def test_bad_cost_requests_use_the_envelope(client: TestClient) -> None:
    for params, field in (
        ({"by": "colour"}, "query.by"),
        ({"since": "last tuesday"}, "query.since"),
        ({"until": "soon"}, "query.until"),
        ({"since": "1h", "until": "2h"}, "query.until"),
        ({"stack": "day"}, "query.stack"),
    ):
        r = client.get("/api/costs", params=params)
        assert r.status_code == 422, params
        assert r.json()["error"]["fields"][0]["field"] == field
    assert client.get("/api/costs", params={"top": 0}).json()["error"]["code"] == "invalid_request"


def test_claude_sessions_rank_with_their_own_source(client: TestClient, store: Store) -> None:
    """A Claude Code session among the most expensive is a session (`claude_code`, linkable),
    not a run (`claude`), and the answer stays valid (it was a 500)."""
    from pathlib import Path

    from archiver.claude.layout import find_sessions
    from archiver.claude.loading import load_tree
    from telemetry.services.claude.importer import archive_claude

    fixtures = Path(__file__).parents[1] / "fixtures" / "claude" / "d_subagent_tree" / "json"
    (files,) = find_sessions(fixtures)
    engine = app_state(client.app).engine
    assert archive_claude(load_tree(files), settings=store.settings, engine=engine).ok
    body = _costs(client, since="30d", top=100)
    for top in ("top_sessions", "top_trees"):
        mine = [t for t in body[top] if t["session_id"] == files.session_id]
        assert [t["source"] for t in mine] == ["claude_code"], top
    assert {t["source"] for t in body["top_sessions"]} == {"opencode", "claude_code", "claude"}
