"""Against the real `opencode serve` 1.18.33, the generation probe says 1.x (from /global/health)
and the reads stay on the 1.x routes."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from opencode_harness import OpenCode

from archiver.client import OpenCodeClient

pytestmark = pytest.mark.opencode


def test_probe_picks_1x_for_opencode_1_18(opencode: OpenCode) -> None:
    async def go() -> tuple[dict[str, object], str | None]:
        async with httpx.AsyncClient(timeout=15.0) as http:
            client = OpenCodeClient(http, opencode.url)
            info = await client.health()
            listed = await client.list_sessions()
            return info, client.chosen("session") if listed is not None else None

    info, family = asyncio.run(go())
    assert info["generation"] == 1 and info["probe"] == "/global/health"
    assert str(info["version"]).startswith("1.18")
    assert family == "classic"
