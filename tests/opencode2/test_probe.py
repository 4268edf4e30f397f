"""Probing picks the OpenCode generation: a 2.x server answers the 1.x health path with the web
UI's HTML and 200, which must not pass for a 1.x server; a 2.x server's reads go through the V2
adapter (children by ``?parentID=``, interrupt, ``{decision}`` replies, a cascading delete)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from fake_server import FakeOpenCode2
from scenarios import subagent_tree

from archiver.client import OpenCodeClient
from archiver.errors import FetchError


def _with_client(oc2: FakeOpenCode2, fn: Callable[[OpenCodeClient], Awaitable[Any]], **kw: Any) -> Any:
    async def go() -> Any:
        async with httpx.AsyncClient(timeout=10.0) as http:
            return await fn(OpenCodeClient(http, oc2.url, password=kw.pop("password", oc2.password), **kw))

    return asyncio.run(go())


def test_the_web_ui_html_on_the_1x_path_does_not_pass_for_1x(oc2: FakeOpenCode2) -> None:
    page = httpx.get(oc2.url + "/global/health", auth=("opencode", oc2.password))
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    info = _with_client(oc2, lambda c: c.health())
    assert info == {"healthy": True, "generation": 2, "version": oc2.version, "probe": "/api/info"}


def test_a_v2_server_is_read_through_the_v2_adapter(oc2: FakeOpenCode2) -> None:
    ids = subagent_tree(oc2)
    rid = oc2.ask(ids["child"])

    async def go(c: OpenCodeClient) -> Any:
        kids = await c.children(ids["root"])
        msgs = await c.messages(ids["child"])
        asks = await c.v2.permissions(ids["child"])
        await c.v2.reply(ids["child"], rid, "reject", "not now")
        oc2.user(ids["root"], "again")
        return kids, msgs, asks, await c.abort(ids["root"]), await c.abort(ids["root"]), c.chosen("messages")

    kids, msgs, asks, first, second, family = _with_client(oc2, go, page_size=1)
    assert [k["id"] for k in kids] == [ids["child"]] and kids[0]["directory"] == "/work/project"
    assert msgs.family == "v2" == family and [m["type"] for m in msgs.items][-1] == "idle"
    assert [a["id"] for a in asks] == [rid]
    assert oc2.replies == [(ids["child"], rid, {"decision": "reject", "message": "not now"})]
    assert (first, second) == (True, False), "interrupt: stopped, then nothing to stop"
    assert oc2.sessions[ids["root"]]["outcome"] == "interrupted"


def test_a_wrong_password_names_authentication(oc2: FakeOpenCode2) -> None:
    with pytest.raises(FetchError) as err:
        _with_client(oc2, lambda c: c.session("ses_x"), password="wrong-password-here")
    assert err.value.status == 401 and "authentication failed" in err.value.message
    assert "OCTEL_OPENCODE_PASSWORD" in err.value.message and "wrong-password-here" not in err.value.message


def test_unknown_fields_and_message_types_are_kept(oc2: FakeOpenCode2) -> None:
    sid = oc2.session(title="later server")
    oc2.messages[sid].append({"id": "msg_z", "type": "hologram", "time": {"created": 1}, "glow": [1]})
    oc2.sessions[sid]["novel"] = {"x": 1}
    got = _with_client(oc2, lambda c: asyncio.gather(c.session(sid), c.messages(sid)))
    assert got[0]["novel"] == {"x": 1} and got[1].items == [oc2.messages[sid][0]]
