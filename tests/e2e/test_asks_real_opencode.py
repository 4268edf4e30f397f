"""End to end on a real `opencode serve`, a watcher and a real `octel serve` over one store: a
person answers a `bash` permission ask through the API (allow once: the session goes on) and
through `octel asks reply` (reject: the tool is refused); the read token alone is refused; an
ask already answered is a 409 naming it; each answer leaves an audit row saying who answered."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from driver import idle, start, wait_for
from fakellm import FakeLLM
from liveserver import live_octel
from opencode_harness import OpenCode
from typer.testing import CliRunner
from watch_thread import Store, new_store, watching

from cli import app

pytestmark = pytest.mark.opencode

TOKEN = "ingest-token-0123456789"
READ = "read-token-0123456789ab"
ASK = {"permission": [{"permission": "bash", "pattern": "*", "action": "ask"}]}


def script(title: str) -> dict[str, Any]:
    return {
        "title": title,
        "turns": [
            {
                "text": "Checking.",
                "tool_calls": [{"name": "bash", "arguments": {"command": "echo answered"}}],
            },
            {"text": "Done."},
        ],
    }


@pytest.fixture(scope="module")
def served(opencode: OpenCode, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, str]]:
    """A store a watcher follows `opencode` into, and `octel serve` over it (read token set)."""
    store = new_store(tmp_path_factory.mktemp("asks") / "data")
    env = {"OCTEL_READ_TOKEN": READ}
    with (
        watching(store, opencode.url),
        live_octel(store.settings.data_dir, token=TOKEN, extra_env=env) as base,
    ):
        yield store, base
    store.engine.dispose()


def waiting(octel: httpx.Client, sid: str) -> dict[str, Any]:
    """The live row once the watcher has seen the session wait on its ask."""

    def seen() -> dict[str, Any] | None:
        items = octel.get("/api/live", params={"session_id": sid}).json()["items"]
        return items[0] if items and items[0]["state"] == "waiting_permission" and items[0]["ask"] else None

    row: dict[str, Any] = wait_for(seen)
    return row


def tools(http: httpx.Client, sid: str) -> list[dict[str, Any]]:
    msgs = http.get(f"/session/{sid}/message").json()
    return [p for m in msgs for p in m["parts"] if p["type"] == "tool"]


def test_allow_once_through_the_api_and_the_audit_row(
    opencode: OpenCode, fake_llm: FakeLLM, served: tuple[Store, str]
) -> None:
    _, base = served
    fake_llm.load(script("Allow it"))
    read = {"Authorization": f"Bearer {READ}"}
    with (
        httpx.Client(base_url=opencode.url, timeout=15) as http,
        httpx.Client(base_url=base, timeout=30, headers=read) as octel,
    ):
        root = start(http, "Run it.", ASK)
        row = waiting(octel, root)
        rid = row["ask"]["request_id"]
        listed = octel.get("/api/v1/asks").json()["items"]
        assert [r["session_id"] for r in listed] == [root]
        url = f"/api/v1/asks/{root}/reply"
        refused = octel.post(url, json={"decision": "allow"})  # the read token cannot answer
        assert refused.status_code == 401, refused.text
        bad = octel.post(url, json={"decision": "maybe"}, headers={"Authorization": f"Bearer {TOKEN}"})
        assert bad.status_code == 422 and "body.decision" in bad.text
        assert [p["id"] for p in http.get("/permission").json()] == [rid]  # nothing was sent
        ok = octel.post(url, json={"decision": "allow"}, headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200, ok.text
        out = ok.json()
        assert (out["outcome"], out["request_id"], out["server"]) == ("done", rid, opencode.url.rstrip("/"))
        idle(http, root)
        assert tools(http, root)[-1]["state"]["status"] == "completed"  # the session went on
        assert "answered" in tools(http, root)[-1]["state"]["output"]
        again = octel.post(
            url, json={"decision": "reject", "request_id": rid}, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert again.status_code == 409 and rid in again.json()["error"]["message"], again.text
        actions = octel.get("/api/v1/actions", params={"session_id": root}).json()["items"]
    gone, done = actions  # newest first
    assert (done["rule"], done["action"], done["outcome"], done["answer_status"]) == (
        "person",
        "allow_ask",
        "done",
        200,
    )
    assert done["watcher"].startswith("console (127.0.0.1)") and done["evidence"]["request_id"] == rid
    assert (gone["action"], gone["outcome"]) == ("reject_ask", "gone")


def test_reject_through_the_cli_and_actions_list_shows_who(
    opencode: OpenCode, fake_llm: FakeLLM, served: tuple[Store, str], tmp_path: Path
) -> None:
    store, base = served
    fake_llm.load(script("Reject it"))
    runner = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"})
    data = ["--data-dir", str(store.settings.data_dir)]
    with (
        httpx.Client(base_url=opencode.url, timeout=15) as http,
        httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {READ}"}) as octel,
    ):
        root = start(http, "Run it.", ASK)
        rid = waiting(octel, root)["ask"]["request_id"]
        res = runner.invoke(app, [*data, "asks", "list", "--json"])
        assert res.exit_code == 0, res.output
        assert [r["session_id"] for r in json.loads(res.stdout)["items"]] == [root]
        res = runner.invoke(app, [*data, "asks", "reply", root, "later"])
        assert res.exit_code == 2 and "allow or reject" in res.output
        res = runner.invoke(app, [*data, "asks", "reply", root, "reject", "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["outcome"] == "done"
        idle(http, root)
        last = tools(http, root)[-1]["state"]
        assert last["status"] == "error" and "rejected" in last["error"]
        res = runner.invoke(app, [*data, "asks", "reply", root, "allow", "--request", rid])
        assert res.exit_code == 1 and rid in res.output and "no longer pending" in res.output
    res = runner.invoke(app, [*data, "actions", "list", "--session", root, "--json"])
    rows = json.loads(res.stdout)["items"]
    assert [(r["action"], r["outcome"]) for r in rows] == [("allow_ask", "gone"), ("reject_ask", "done")]
    assert rows[1]["watcher"].startswith("octel asks reply (")
    table = runner.invoke(app, [*data, "actions", "list", "--session", root]).stdout
    assert "octel asks reply (" in table and "person" in table
