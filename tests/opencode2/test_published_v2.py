"""A message page recorded from a real OpenCode 2.0.15 server (fixtures/SOURCES.md), served by the
fake, archived without loss and read by the converter and the metrics."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from fake_server import FakeOpenCode2

from archiver.client import OpenCodeClient
from archiver.convert import from_opencode
from archiver.document import build_documents
from archiver.walk import walk_tree
from detectors.model import ToolCall

PAGE = json.loads((Path(__file__).parent / "fixtures" / "messages-tool-2.0.15.json").read_text())


def test_a_recorded_v2_session_is_archived_without_loss(oc2: FakeOpenCode2) -> None:
    sid = oc2.session(title="hello tool")
    oc2.messages[sid] = list(reversed(PAGE["data"]))  # stored oldest first; the page is newest first

    async def go() -> Any:
        async with httpx.AsyncClient() as http:
            return await walk_tree(OpenCodeClient(http, oc2.url, password=oc2.password, page_size=1), sid)

    doc = build_documents(asyncio.run(go()), archived_at="2026-12-01T00:00:00.000Z")[0]
    assert doc["messages"] == list(reversed(PAGE["data"])), "every field kept, oldest first"
    assert doc["execution"]["outcome"] == "succeeded"
    assert [t["tokens"]["input"] for t in doc["per_turn"]] == [5219, 5321]
    assert [t["tokens"]["cache_read"] for t in doc["per_turn"]] == [1280, 1280]
    assert doc["per_turn"][0]["tool_calls"] == 1 and doc["model"] == "opencode-go/longcat-2.5-preview-free"


def test_the_recorded_page_reads_oldest_first_with_its_shell_call() -> None:
    msgs = from_opencode(PAGE)  # as `octel detect` reads a saved page: newest first
    assert [m.role for m in msgs] == ["user", "assistant", "assistant"]
    (call,) = [p for p in msgs[1].parts if isinstance(p, ToolCall)]
    assert (call.tool, call.exit_code, call.output, call.status) == (
        "bash",
        0,
        "hello-tool-42\r\n",
        "completed",
    )
    assert msgs[2].finish == "stop" and msgs[2].error is None
