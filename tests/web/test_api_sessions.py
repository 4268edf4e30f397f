"""`/api/sessions…`: filters, keyset paging, one session, the timeline, bad requests.

Runs on SQLite and a real PostgreSQL against the captured runs, archived and indexed.
"""

from __future__ import annotations

import json
from typing import Any

from console_seed import Store, archive_with_failures
from fastapi.testclient import TestClient

from telemetry.archive_store import archive_store
from telemetry.store.db import make_engine


def _all(client: TestClient, **params: Any) -> list[dict[str, Any]]:
    r = client.get("/api/sessions", params={"limit": 500, **params})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["next_cursor"] is None
    items: list[dict[str, Any]] = body["items"]
    return items


def _error(r: Any, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    assert body["error"]["message"]
    err: dict[str, Any] = body["error"]
    return err


def test_list_is_newest_first_and_complete(client: TestClient, store: Store) -> None:
    items = _all(client)
    assert {s["session_id"] for s in items} == set(store.seeded.sessions)
    stamps = [s["archived_at"] for s in items]
    assert stamps == sorted(stamps, reverse=True)


def test_filters_narrow_in_the_database(client: TestClient, store: Store) -> None:
    facts = store.seeded.sessions
    general = _all(client, agent="general")
    assert general and {s["session_id"] for s in general} == {
        sid for sid, f in facts.items() if f["agent"] == "general"
    }
    stuck = _all(client, verdict="stuck")
    assert {s["session_id"] for s in stuck} == {sid for sid, f in facts.items() if f["verdict"] == "stuck"}
    assert stuck and all(s["verdict"] == "stuck" for s in stuck)
    roots = _all(client, root_only="true")
    assert roots and all(s["depth"] == 0 and s["parent_session_id"] is None for s in roots)
    assert len(roots) < len(facts)
    # text search covers titles (case-insensitive) and labels
    assert [s["title"] for s in _all(client, q="readme")] == ["Check the README (@general subagent)"]
    by_label = _all(client, q="doom_loop_g")
    assert [s["label"] for s in by_label] == ["doom_loop_guard"]
    assert _all(client, agent="general", q="README")[0]["agent"] == "general"
    assert _all(client, model="nobody/none") == []
    # blank filters (an emptied form field) mean "any"
    assert len(_all(client, agent="", q=" ")) == len(facts)


def test_time_window(client: TestClient, store: Store) -> None:
    recent = _all(client, since="12m")  # seeded five minutes apart, newest five minutes ago
    assert 0 < len(recent) < len(store.seeded.sessions)
    until = _all(client, until=recent[-1]["archived_at"])
    assert {s["session_id"] for s in until}.isdisjoint({s["session_id"] for s in recent})
    assert len(until) + len(recent) == len(store.seeded.sessions)


def test_cursor_pages_cover_everything_once(client: TestClient, store: Store) -> None:
    seen: list[str] = []
    cursor = None
    while True:
        r = client.get("/api/sessions", params={"limit": 4, **({"cursor": cursor} if cursor else {})})
        body = r.json()
        assert len(body["items"]) <= 4
        seen += [s["session_id"] for s in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == [s["session_id"] for s in _all(client)]
    assert len(set(seen)) == len(store.seeded.sessions)


def test_bad_list_requests_use_the_envelope(client: TestClient) -> None:
    err = _error(client.get("/api/sessions", params={"cursor": "not-a-cursor"}), 422, "invalid_request")
    assert err["fields"][0]["field"] == "query.cursor"
    err = _error(client.get("/api/sessions", params={"since": "yesterday-ish"}), 422, "invalid_request")
    assert err["fields"][0]["field"] == "query.since"
    _error(client.get("/api/sessions", params={"verdict": "dead"}), 422, "invalid_request")
    _error(client.get("/api/sessions", params={"limit": 0}), 422, "invalid_request")
    _error(client.get("/api/sessions", params={"limit": 501}), 422, "invalid_request")


def test_session_with_its_tree_turns_and_findings(client: TestClient, store: Store) -> None:
    root = store.seeded.scenarios["subagent_tree"]
    body = client.get(f"/api/sessions/{root}").json()
    assert body["session"]["session_id"] == root and body["archive"]["available"] is True
    tree = body["tree"]
    assert tree["session_id"] == root
    [child] = tree["children"]
    [grandchild] = child["children"]
    assert (child["agent"], grandchild["agent"]) == ("nester", "general")
    assert tree["subtree_session_count"] == 3
    own = [tree["cost_usd"], child["cost_usd"], grandchild["cost_usd"]]
    assert abs(tree["subtree_cost_usd"] - sum(own)) < 1e-9
    turns = body["per_turn"]
    assert len(turns) == body["session"]["turn_count"] > 0
    assert all(t["message_id"].startswith("msg_") and t["created_at"] for t in turns)
    assert sum(t["tokens_input"] for t in turns) == body["session"]["tokens"]["input"]
    # a child opens as its own subtree, with the way back up
    sub = client.get(f"/api/sessions/{child['session_id']}").json()
    assert sub["parent_session_id"] == root and sub["root_session_id"] == root
    assert [c["session_id"] for c in sub["tree"]["children"]] == [grandchild["session_id"]]


def test_findings_carry_evidence_that_pages_to_the_part(client: TestClient, store: Store) -> None:
    sid = store.seeded.scenarios["doom_loop"]
    body = client.get(f"/api/sessions/{sid}").json()
    [loop] = [f for f in body["findings"] if f["detector"] == "doom_loop"]
    assert loop["verdict"] == "stuck"
    part = loop["evidence"]["part_ids"][-1]
    page = client.get(f"/api/sessions/{sid}/messages", params={"at": part, "limit": 3}).json()
    assert page["offset"] % 3 == 0
    parts = [p["id"] for m in page["items"] for p in m["parts"]]
    assert part in parts


def test_in_flight_turn_is_marked(client: TestClient, store: Store) -> None:
    sid = store.seeded.scenarios["aborted"]
    body = client.get(f"/api/sessions/{sid}").json()
    assert body["session"]["in_flight"] is True
    assert [t["in_flight"] for t in body["per_turn"]][-1] is True
    msgs = client.get(f"/api/sessions/{sid}/messages").json()["items"]
    assert msgs[-1]["role"] == "assistant" and msgs[-1]["in_flight"] is True
    assert msgs[0]["role"] == "user" and msgs[0]["in_flight"] is False


def test_timeline_pages(client: TestClient, store: Store) -> None:
    sid = store.seeded.scenarios["tool_errors"]
    first = client.get(f"/api/sessions/{sid}/messages", params={"limit": 4}).json()
    assert first["total"] == 9 and first["prev_offset"] is None and first["next_offset"] == 4
    ids = [m["id"] for m in first["items"]]
    offset = first["next_offset"]
    while offset is not None:
        page = client.get(f"/api/sessions/{sid}/messages", params={"limit": 4, "offset": offset}).json()
        ids += [m["id"] for m in page["items"]]
        offset = page["next_offset"]
    assert len(ids) == len(set(ids)) == 9
    assert [m["index"] for m in first["items"]] == [0, 1, 2, 3]
    tools = [p for m in first["items"] for p in m["parts"] if p.get("type") == "tool"]
    assert tools and all("state" in p for p in tools)


def test_timeline_shows_redactions_not_secrets(client: TestClient, store: Store) -> None:
    sid = store.seeded.scenarios["secrets"]
    page = client.get(f"/api/sessions/{sid}/messages", params={"limit": 200}).json()
    text = json.dumps(page)
    assert "[REDACTED:github:" in text
    assert "ghp_FAKEfake" not in text
    assert page["redaction"].get("github", 0) >= 1
    archive = client.get(f"/api/sessions/{sid}").json()["archive"]
    assert archive["redaction"] == page["redaction"] and archive["walk_errors"] == []


def test_unknown_and_unreadable(client: TestClient, store: Store) -> None:
    _error(client.get("/api/sessions/ses_nope"), 404, "not_found")
    _error(client.get("/api/sessions/ses_nope/messages"), 404, "not_found")
    sid = store.seeded.scenarios["healthy"]
    _error(client.get(f"/api/sessions/{sid}/messages", params={"at": "prt_nope"}), 422, "invalid_request")
    eng = make_engine(store.settings.db_url)  # gone from whichever archive store it is in
    assert archive_store(store.settings, eng).remove([store.seeded.sessions[sid]["file"]]) == []
    eng.dispose()
    body = client.get(f"/api/sessions/{sid}").json()  # the record still shows; the turns cannot
    assert body["archive"]["available"] is False and "pruned or moved" in body["archive"]["error"]
    assert body["per_turn"] is None
    _error(client.get(f"/api/sessions/{sid}/messages"), 404, "archive_missing")


def test_what_the_walk_could_not_fetch_is_shown(client: TestClient, store: Store) -> None:
    root = store.seeded.scenarios["subagent_tree"]
    child = next(
        s for s, f in store.seeded.sessions.items() if f["scenario"] == "subagent_tree" and f["depth"] == 1
    )
    outcome = archive_with_failures(store.settings, "subagent_tree", frozenset({f"/session/{child}/message"}))
    assert not outcome.ok
    archive = client.get(f"/api/sessions/{root}").json()["archive"]
    assert archive["available"] is True
    [err] = [e for e in archive["walk_errors"] if e["session_id"] == child]
    assert err["status"] == 500


def test_empty_is_a_verdict_to_filter_by(client: TestClient) -> None:
    """A session without a turn reads `empty`, never `healthy`, and can be listed as such."""
    r = client.get("/api/sessions", params={"verdict": "empty"})
    assert r.status_code == 200, r.text
    assert all(s["turn_count"] == 0 for s in r.json()["items"])
    healthy = client.get("/api/sessions", params={"verdict": "healthy", "limit": 500}).json()["items"]
    assert all(s["turn_count"] > 0 for s in healthy)
