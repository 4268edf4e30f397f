"""The client's adapters and the walk against an in-memory server with injected faults."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from archiver_fakes import FakeOpenCode, message, raises, raw, session, status, tree

from archiver.client import OpenCodeClient
from archiver.walk import TreeSnapshot, walk_tree


def _walk(fake: FakeOpenCode, root: str = "ses_root", **kw: Any) -> TreeSnapshot:
    async def go() -> TreeSnapshot:
        async with httpx.AsyncClient(transport=fake.transport()) as http:
            client = OpenCodeClient(
                http,
                "http://oc.test",
                backoff=0.0,
                page_size=kw.pop("page_size", 200),
                prefer=kw.pop("prefer", ("classic", "api")),
            )
            return await walk_tree(client, root, **kw)

    return asyncio.run(go())


def _kinds(snap: TreeSnapshot) -> set[str]:
    return {e.error_kind for e in snap.walk_errors}


def test_walk_gives_every_session_with_parent_and_depth() -> None:
    snap = _walk(tree([2, 3]))
    got = {(s.session_id, s.parent_id, s.depth) for s in snap.sessions}
    assert got == {
        ("ses_root", None, 0),
        ("ses_d1_0", "ses_root", 1),
        ("ses_d1_1", "ses_root", 1),
        ("ses_d2_0", "ses_d1_0", 2),
        ("ses_d2_1", "ses_d1_0", 2),
        ("ses_d2_2", "ses_d1_0", 2),
    }
    assert [s.depth for s in snap.sessions] == sorted(s.depth for s in snap.sessions)
    assert snap.walk_errors == [] and snap.complete
    assert snap.opencode_version == "1.18.33"
    assert all(len(s.messages) == 2 and s.messages_family == "classic" for s in snap.sessions)


def test_long_message_list_is_fetched_page_by_page_in_order() -> None:
    fake = tree([], n_messages=1000)
    snap = _walk(fake, page_size=64)
    ids = [m["info"]["id"] for m in snap.sessions[0].messages]
    assert ids == [f"msg_{i:06d}" for i in range(1000)]
    assert fake.log.count("/session/ses_root/message") == 16


def test_empty_api_history_never_wins_over_classic() -> None:
    # the server answers /api/ messages with [] (as 1.18.33 does); preferring it must not lose data
    snap = _walk(tree([1]), prefer=("api", "classic"))
    assert [len(s.messages) for s in snap.sessions] == [2, 2]
    assert {s.messages_family for s in snap.sessions} == {"classic"}


def test_api_generation_used_when_classic_routes_are_gone() -> None:
    fake = tree([2])
    fake.classic, fake.api_messages_empty = False, False
    snap = _walk(fake)
    assert {s.session_id for s in snap.sessions} == {"ses_root", "ses_d1_0", "ses_d1_1"}
    assert {s.messages_family for s in snap.sessions} == {"api"}
    assert snap.sessions[0].session and snap.sessions[0].session["directory"] == "/p"
    # diff and todo exist only on the classic routes: recorded, not raised
    assert _kinds(snap) == {"unsupported"}


def test_empty_history_for_an_active_session_is_reported() -> None:
    fake = tree([])
    fake.messages["ses_root"] = []
    snap = _walk(fake)
    assert "empty_history" in _kinds(snap)


def test_transient_faults_are_retried() -> None:
    fake = tree([1])
    fake.fault(
        "/session/ses_d1_0/message", status(500), raises(httpx.ConnectError), raises(httpx.ReadTimeout)
    )
    snap = _walk(fake)
    assert snap.walk_errors == []
    assert len(snap.sessions[1].messages) == 2


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        (status(503), "server_error"),
        (raises(httpx.ReadTimeout), "timeout"),
        (raises(httpx.ConnectError), "connection"),
        (raises(httpx.RemoteProtocolError), "connection"),
        (raw(200, b'[{"info": '), "malformed"),
        (raw(200, b'{"not": "a list"}'), "malformed"),
        (raw(400, b'{"_tag": "BadRequest"}'), "http_error"),
    ],
)
def test_persistent_faults_end_in_walk_errors(fault: Any, kind: str) -> None:
    fake = tree([2])
    fake.fault("/session/ses_d1_1/message", *[fault] * 4)
    snap = _walk(fake)
    assert len(snap.sessions) == 3
    errs = [e for e in snap.walk_errors if e.session_id == "ses_d1_1"]
    assert [(e.error_kind, e.what) for e in errs] == [(kind, "messages")]
    assert snap.sessions[2].messages == [] and not snap.complete


def test_missing_child_is_listed_in_walk_errors() -> None:
    fake = tree([1])
    fake.children["ses_root"].append("ses_ghost")
    snap = _walk(fake)
    ghost = [e for e in snap.walk_errors if e.session_id == "ses_ghost"]
    assert {e.error_kind for e in ghost} == {"not_found"}
    assert len(snap.sessions) == 3


def test_parent_cycle_and_repeated_ids_are_walked_once() -> None:
    fake = tree([1, 1])
    fake.children["ses_d2_0"].append("ses_root")  # cycle back to the root
    fake.children["ses_root"].append("ses_d1_0")  # the same child listed twice
    snap = _walk(fake)
    assert [s.session_id for s in snap.sessions] == ["ses_root", "ses_d1_0", "ses_d2_0"]
    assert _kinds(snap) == {"cycle", "duplicate"}


def test_tree_deeper_than_the_limit_stops_there() -> None:
    snap = _walk(tree([1, 1, 1, 1]), max_depth=2)
    assert max(s.depth for s in snap.sessions) == 2
    assert [e.session_id for e in snap.walk_errors if e.error_kind == "depth_limit"] == ["ses_d3_0"]


def test_missing_root_returns_empty_snapshot_with_error() -> None:
    snap = _walk(tree([]), root="ses_nope")
    assert snap.sessions == [] and _kinds(snap) == {"not_found"}


def test_unreachable_server_never_raises() -> None:
    fake = FakeOpenCode()
    fake.fault("/global/health", *[raises(httpx.ConnectError)] * 4)
    fake.fault("/session/ses_x", *[raises(httpx.ConnectError)] * 4)
    snap = _walk(fake, root="ses_x")
    assert snap.sessions == [] and _kinds(snap) == {"connection"}


def test_wide_tree_is_fetched_concurrently() -> None:
    fake = tree([30])
    in_flight = {"now": 0, "peak": 0}

    async def handler(request: httpx.Request) -> httpx.Response:
        in_flight["now"] += 1
        in_flight["peak"] = max(in_flight["peak"], in_flight["now"])
        await asyncio.sleep(0.005)
        in_flight["now"] -= 1
        return fake.handle(request)

    async def go() -> TreeSnapshot:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
            return await walk_tree(OpenCodeClient(http, "http://x", max_concurrency=6), "ses_root")

    snap = asyncio.run(go())
    assert len(snap.sessions) == 31 and snap.walk_errors == []
    assert in_flight["peak"] == 6


def test_sync_httpx_client_works_too() -> None:
    fake = tree([1])

    async def go() -> TreeSnapshot:
        with httpx.Client(transport=fake.transport()) as http:
            return await walk_tree(OpenCodeClient(http, "http://x"), "ses_root")

    snap = asyncio.run(go())
    assert len(snap.sessions) == 2 and snap.walk_errors == []


def test_diff_and_todo_are_captured() -> None:
    fake = tree([])
    todo = [{"content": "write tests", "status": "pending", "priority": "high", "id": "1"}]
    fake.fault("/session/ses_root/todo", lambda req: httpx.Response(200, json=todo))
    snap = _walk(fake)
    assert snap.sessions[0].todo == todo and snap.sessions[0].diff == []


def test_unused_helpers_are_sane() -> None:
    assert message("s", 1)["info"]["role"] == "assistant"
    assert session("s", "p")["parentID"] == "p"


def test_messages_of_another_session_are_inconsistent() -> None:
    fake = tree([1])
    fake.messages["ses_d1_0"] = [message("ses_other", 1)]
    snap = _walk(fake)
    errs = [(e.error_kind, e.session_id) for e in snap.walk_errors]
    assert errs == [("inconsistent", "ses_d1_0")]
