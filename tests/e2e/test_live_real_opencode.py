"""End to end on a real `opencode serve`: the live rows `octel watch` keeps for each state a
stuck fleet shows (an unanswered ask, provider retries, a long tool, a subagent waiting on its
child), and a run blocked on an ask is not archived until it finishes."""

from __future__ import annotations

import functools
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from driver import idle, start, wait_for
from fakellm import FakeLLM
from opencode_harness import OpenCode
from sqlalchemy.engine import Engine
from sqlmodel import select
from typer.testing import CliRunner
from watch_thread import Store, Watch, watching

from archiver.files import find_archives, read_archive
from cli import app
from telemetry.queries.live_messages import LiveMessagePage, live_message_page
from telemetry.settings import Settings
from telemetry.store.db import make_engine, session_scope
from telemetry.store.live_models import LiveMessage, LiveSession
from telemetry.store.migrate import upgrade

pytestmark = pytest.mark.opencode


def _store_redacting(tmp_path: Path, secret: str) -> Store:
    settings = Settings(data_dir=tmp_path / "data", redact_values=secret, _env_file=None)  # type: ignore[call-arg]
    engine = make_engine(settings.db_url)
    upgrade(engine)
    return Store(settings, engine)


def _rows(engine: Engine) -> dict[str, LiveSession]:
    with session_scope(engine, write=False) as db:
        return {r.session_id: r for r in db.exec(select(LiveSession))}


# a live row shows within seconds; 40 s is the patience of every wait here unless it says
_wait_for = functools.partial(wait_for, timeout=40.0)


def test_an_unanswered_ask_is_live_and_not_archived_until_answered(
    opencode: OpenCode, fake_llm: FakeLLM, watch: Watch
) -> None:
    fake_llm.load(
        {
            "title": "Push it",
            "turns": [
                {
                    "text": "Pushing.",
                    "tool_calls": [{"name": "bash", "arguments": {"command": "git push origin main"}}],
                },
                {"text": "Done."},
            ],
        }
    )
    ask = {"permission": [{"permission": "bash", "pattern": "*", "action": "ask"}]}
    with (
        watch() as watched,
        httpx.Client(base_url=opencode.url, timeout=15) as http,
    ):
        settings, engine = watched.settings, watched.engine
        root = start(http, "Push the branch.", ask)
        row = _wait_for(lambda: (r := _rows(engine).get(root)) and r.state == "waiting_permission" and r)
        assert row.permission == "bash" and "git push origin main" in (row.permission_patterns or [])
        assert row.permission_asked_at is not None and row.title
        time.sleep(3.0)  # well past the settle delay
        assert not any(d["session_id"] == root for d in map(read_archive, find_archives(settings.archives)))
        pending = http.get("/permission").json()
        http.post(f"/permission/{pending[0]['id']}/reply", json={"reply": "once"})
        idle(http, root)
        wait_for(
            lambda: any(d["session_id"] == root for d in map(read_archive, find_archives(settings.archives)))
        )
        done = _wait_for(lambda: (r := _rows(engine).get(root)) and r.state == "idle" and r)
        assert done.turns >= 2 and done.tokens_input > 0


def test_a_session_blocked_on_an_ask_shows_its_messages_so_far_redacted(
    opencode: OpenCode, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    secret = "tok-live-0123456789abcdef"
    fake_llm.load(
        {
            "title": "Push it",
            "turns": [
                {
                    "text": "Pushing now.",
                    "tool_calls": [{"name": "bash", "arguments": {"command": "git push origin main"}}],
                },
                {"text": "Done."},
            ],
        }
    )
    ask = {"permission": [{"permission": "bash", "pattern": "*", "action": "ask"}]}
    with (
        watching(_store_redacting(tmp_path, secret), opencode.url) as store,
        httpx.Client(base_url=opencode.url, timeout=15) as http,
    ):
        settings, engine = store.settings, store.engine
        root = start(http, f"Push the branch; the token is {secret}.", ask)
        row = wait_for(lambda: (r := _rows(engine).get(root)) and r.state == "waiting_permission" and r)

        def so_far() -> LiveMessagePage | None:
            with session_scope(engine, write=False) as db:
                page = live_message_page(db, row.server, root, None, 50)
            tools = [p for m in page.items for p in m.parts if p.get("tool") == "bash"]
            return page if len(page.items) >= 2 and tools else None

        page = wait_for(so_far)  # never archived: the messages come from the watcher's own copy
        assert not any(d["session_id"] == root for d in map(read_archive, find_archives(settings.archives)))
        user, said = page.items[0], page.items[-1]
        text = " ".join(p.get("text", "") for p in user.parts if p.get("type") == "text")
        assert user.role == "user" and "Push the branch; the token is" in text
        assert secret not in page.model_dump_json()  # redacted before it was stored
        bash = next(p for p in said.parts if p.get("tool") == "bash")
        assert (
            said.role == "assistant"
            and said.in_flight
            and bash["state"]["input"]["command"] == "git push origin main"
        )
        assert any(p.get("text") == "Pushing now." for p in said.parts)
        shown = CliRunner().invoke(
            app, ["--database-url", settings.db_url, "sessions", "show", root, "--json"]
        )
        assert shown.exit_code == 0, shown.output
        assert "Pushing now." in shown.stdout and secret not in shown.stdout
        pending = http.get("/permission").json()
        http.post(f"/permission/{pending[0]['id']}/reply", json={"reply": "once"})
        idle(http, root)

        def cleared() -> bool:  # archived: the archive holds them now
            with session_scope(engine, write=False) as db:
                return db.exec(select(LiveMessage).where(LiveMessage.session_id == root)).first() is None

        wait_for(
            lambda: any(d["session_id"] == root for d in map(read_archive, find_archives(settings.archives)))
        )
        wait_for(cleared)


def test_a_long_tool_and_a_subagent_waiting_on_its_child(
    opencode: OpenCode, fake_llm: FakeLLM, watch: Watch
) -> None:
    fake_llm.load(
        {
            "title": "Nested",
            "turns": [
                {
                    "text": "Delegating.",
                    "tool_calls": [
                        {
                            "name": "task",
                            "arguments": {
                                "description": "Middle",
                                "prompt": "Delegate again.",
                                "subagent_type": "nester",
                            },
                        }
                    ],
                },
                {
                    "text": "Again.",
                    "tool_calls": [
                        {
                            "name": "task",
                            "arguments": {
                                "description": "Leaf",
                                "prompt": "Wait a bit.",
                                "subagent_type": "general",
                            },
                        }
                    ],
                },
                {"text": "Waiting.", "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 6"}}]},
                {"text": "Leaf done."},
                {"text": "Middle done."},
                {"text": "All done."},
            ],
        }
    )
    with (
        watch() as watched,
        httpx.Client(base_url=opencode.url, timeout=15) as http,
    ):
        engine = watched.engine
        root = start(http, "Do the nested thing.")

        def sleeping() -> dict[str, LiveSession] | None:
            rows = _rows(engine)
            leaf = [r for r in rows.values() if r.root_session_id == root and r.tool == "bash"]
            return rows if leaf and leaf[0].state == "running_tool" else None

        rows = _wait_for(sleeping)
        tree = [r for r in rows.values() if r.root_session_id == root]
        assert len(tree) == 3
        waiting = {r.session_id: (r.state, r.tool) for r in tree if r.tool == "task"}
        assert set(waiting.values()) == {("running_tool", "task")} and len(waiting) == 2
        idle(http, root)
        _wait_for(lambda: all(r.state == "idle" for r in _rows(engine).values() if r.root_session_id == root))


def test_provider_overload_shows_as_retrying_with_the_attempt(
    opencode: OpenCode, fake_llm: FakeLLM, watch: Watch
) -> None:
    overloaded = {"http_error": 529, "message": "Overloaded"}
    fake_llm.load({"title": "Retry", "turns": [overloaded, overloaded, overloaded, {"text": "Finally."}]})
    with (
        watch() as watched,
        httpx.Client(base_url=opencode.url, timeout=15) as http,
    ):
        engine = watched.engine
        root = start(http, "Say something.")
        row = _wait_for(
            lambda: (r := _rows(engine).get(root)) and r.state == "retrying" and r.retry_attempt >= 2 and r
        )
        assert row.retry_next_at is not None and row.state_reason
        idle(http, root, timeout=90)


def test_a_compaction_shows_as_compacting(opencode: OpenCode, fake_llm: FakeLLM, watch: Watch) -> None:
    fake_llm.load(
        {
            "title": "Compact me",
            "turns": [{"text": "Hello there."}],
            "summary": "Summary.",
            "summary_delay": 6,
        }
    )
    with (
        watch() as watched,
        httpx.Client(base_url=opencode.url, timeout=30) as http,
    ):
        engine = watched.engine
        root = start(http, "Say hello.")
        idle(http, root)
        time.sleep(1.5)
        done: dict[str, Any] = {}

        def summarize() -> None:
            done["r"] = http.post(
                f"/session/{root}/summarize", json={"providerID": "fake", "modelID": "fake-model"}
            )

        t = threading.Thread(target=summarize, daemon=True)
        t.start()
        _wait_for(lambda: (r := _rows(engine).get(root)) and r.state == "compacting" and r, timeout=20)
        t.join(40)
        _wait_for(lambda: (r := _rows(engine).get(root)) and r.state == "idle" and r, timeout=30)
