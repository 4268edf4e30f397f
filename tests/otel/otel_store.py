"""A store with captured OpenCode runs archived by the real archiver (served from the capture)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from telemetry.archiving import archive_session_tree_async
from telemetry.settings import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "opencode"


class Captured:
    """The classic OpenCode routes the archiver reads, answered from one captured run."""

    def __init__(self, run: dict[str, Any]) -> None:
        self.sessions = {s["id"]: s for s in run["sessions"] if isinstance(s, dict) and "id" in s}
        self.run = run

    def handle(self, request: httpx.Request) -> httpx.Response:
        parts = request.url.path.strip("/").split("/")
        if parts == ["global", "health"]:
            return httpx.Response(200, json={"healthy": True, "version": self.run["opencode_version"]})
        sid = parts[1] if len(parts) > 1 else ""
        if parts[0] != "session" or sid not in self.sessions:
            return httpx.Response(404, json={"name": "NotFoundError", "data": {"message": sid}})
        what = parts[2] if len(parts) > 2 else ""
        if what == "children":
            return httpx.Response(200, json=[s for s in self.sessions.values() if s.get("parentID") == sid])
        if what == "message":
            return httpx.Response(200, json=self.run["messages"].get(sid, []))
        return httpx.Response(200, json=[] if what else self.sessions[sid])


def archive(settings: Settings, name: str, label: str | None = None, cycle_id: str | None = None) -> str:
    run = json.loads((FIXTURES / f"{name}.json").read_text())

    async def go() -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(Captured(run).handle)) as http:
            return await archive_session_tree_async(
                run["root_id"],
                settings=settings,
                server_url="http://opencode.test",
                http=http,
                label=label,
                cycle_id=cycle_id,
            )

    out = asyncio.run(go())
    assert out.ok, out.errors
    return str(run["root_id"])
