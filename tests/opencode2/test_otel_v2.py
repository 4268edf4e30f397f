"""The trace export of an OpenCode 2 tree: a chat span per step, a tool span per call, and each
subagent's session under the `subagent` call that launched it (as 1.x's `task`)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from fake_server import FakeOpenCode2
from scenarios import subagent_tree

from archiver.client import OpenCodeClient
from archiver.document import build_documents
from archiver.walk import walk_tree
from telemetry.otel_export.mapping import tree_spans


def test_a_v2_tree_becomes_one_trace(oc2: FakeOpenCode2) -> None:
    ids = subagent_tree(oc2)

    async def go() -> Any:
        async with httpx.AsyncClient() as http:
            return await walk_tree(OpenCodeClient(http, oc2.url, password=oc2.password), ids["root"])

    spans = tree_spans(build_documents(asyncio.run(go()), archived_at="2026-12-01T00:00:00.000Z"))
    by_id = {s.span_id: s for s in spans}
    parent = {(s.name, s.session_id): by_id[s.parent_span_id] for s in spans if s.parent_span_id}
    assert sum(1 for s in spans if s.name.startswith("chat ") and s.session_id == ids["root"]) == 3
    launcher = parent[("invoke_agent general", ids["child"])]
    assert (launcher.name, launcher.session_id) == ("execute_tool task", ids["root"])
    assert parent[("invoke_agent general", ids["grandchild"])].session_id == ids["child"]
    assert ("execute_tool bash", ids["child"]) in parent, "V2's shell tool is a bash call"
