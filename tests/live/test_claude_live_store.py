"""Live rows of Claude Code sessions in the store (SQLite and PostgreSQL): a transcript that
grows while `follow_claude_live` runs is on the live board as the lines say, redacted, with
`source: claude_code`; its budget and its stuck rule alert and never act; a subagent is a child
row counted as its archive counts it; a stopped watcher leaves the rows unknown."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from claude_lines import FIXTURES, assistant, jsonl, tool_result, tool_use, usage, user
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.claude.layout import find_sessions
from archiver.claude.loading import load_tree
from archiver.redact import Redactor
from telemetry.queries.live import LiveChange, LiveSessionOut, list_live
from telemetry.queries.live_messages import live_message_page
from telemetry.queries.why_live import why_live
from telemetry.store.action_models import WatchAction
from telemetry.store.db import session_scope
from telemetry.timeutil import utcnow
from telemetry.tower.budget_watch import BudgetWatch
from telemetry.tower.claude_live import follow_claude_live, read_new
from tower.actions import Rules
from tower.alert import Alert
from tower.budgets import Budget
from tower.claude_board import ClaudeBoard
from tower.claude_tail import totals

SID = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
SECRET = "hunter2-very-secret-value"


class _Sink:
    def __init__(self) -> None:
        self.got: list[Alert] = []

    def emit(self, alert: Alert) -> None:
        self.got.append(alert)


def _rows(engine: Engine) -> list[LiveSessionOut]:
    with session_scope(engine, write=False) as db:
        return list_live(db, utcnow()).items


async def _until(engine: Engine, ok: Callable[[list[LiveSessionOut]], bool]) -> list[LiveSessionOut]:
    for _ in range(400):  # a bound on the wait, not a timing claim: the content is what is checked
        rows = await asyncio.to_thread(_rows, engine)
        if ok(rows):
            return rows
        await asyncio.sleep(0.05)
    return await asyncio.to_thread(_rows, engine)


def test_a_growing_transcript_is_live_redacted_and_alerts_its_budget(engine: Engine, tmp_path: Path) -> None:
    config = tmp_path / "claude"
    path = config / "projects" / "-work-demo" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    deploy = tool_use("tu_1", command=f"deploy --token {SECRET}")
    call = assistant(SID, "msg_1", [deploy], use=usage(5000, 400))
    call[0]["message"]["stop_reason"] = "tool_use"
    path.write_bytes(jsonl([user(SID, f"deploy it with {SECRET}", cwd="/work/demo"), *call]))
    redactor = Redactor(b"k" * 32, [SECRET])
    sink = _Sink()
    budgets = BudgetWatch([Budget("tree", 0.001, action="abort")], sink, alert_only=True)
    changes: list[LiveChange] = []

    async def run() -> tuple[list[LiveSessionOut], list[LiveSessionOut], list[LiveSessionOut]]:
        stop = asyncio.Event()
        task = asyncio.create_task(
            follow_claude_live(
                config,
                stop,
                engine=engine,
                redactor=redactor,
                interval=0.05,
                budgets=budgets,
                on_change=changes.append,
            )
        )
        running = await _until(engine, lambda rs: any(r.state == "running_tool" for r in rs))
        done = assistant(SID, "msg_2", [{"type": "text", "text": "Deployed."}], use=usage(6000, 20))
        done[0]["message"]["stop_reason"] = "end_turn"
        with path.open("ab") as fh:
            fh.write(jsonl([user(SID, tool_result("tu_1", "ok")), *done]))
        idle = await _until(engine, lambda rs: any(r.state == "idle" for r in rs))
        stop.set()
        await task
        return running, idle, await asyncio.to_thread(_rows, engine)

    running, idle, after = asyncio.run(run())
    (r,) = running
    assert r.source == "claude_code" and r.session_id == SID and r.tool == "Bash"
    assert r.tokens["input"] == 5000 and r.cost_usd > 0 and r.directory == "/work/demo"
    assert SECRET not in r.model_dump_json() and r.title is not None and "REDACTED" in r.title
    (i,) = idle
    assert i.turns == 2 and i.tokens["input"] == 11000 and i.cost_usd > r.cost_usd
    # the watcher stopped: its rows read unknown, as an OpenCode server's do
    assert [x.state for x in after] == ["unknown"]
    # what `octel watch --json` prints: each change of state once, as stored
    said = [(c.previous_state, c.state) for c in changes]
    assert said[0] == (None, "running_tool") and said[-1][1] == "idle" and len(set(said)) == len(said)
    assert all(c.source == "claude_code" and SECRET not in c.model_dump_json() for c in changes)
    breach = [a for a in sink.got if a.kind == "budget" and a.severity == "critical"]
    assert breach and "cannot be stopped from outside" in breach[0].summary
    with session_scope(engine, write=False) as db:
        why = why_live(db, SID, utcnow())
        page = live_message_page(db, r.server, SID, None, 50)
    assert why is not None and why.live is not None and why.live.source == "claude_code"
    # the messages so far, as the console's live timeline reads them: redacted, each once
    assert [m.role for m in page.items] == ["user", "assistant", "user", "assistant"]
    assert SECRET not in page.model_dump_json() and "Deployed." in page.model_dump_json()


def test_a_subagent_is_a_live_child_named_and_counted_as_its_archive(tmp_path: Path) -> None:
    config = tmp_path / "claude"
    shutil.copytree(FIXTURES / "d_subagent_tree" / "json", config, copy_function=shutil.copy)  # times: now
    (files,) = find_sessions(config)
    tree = load_tree(files)
    board = ClaudeBoard("claude-code:x", lambda _m: [])
    now = time.time()  # the copies were written just now: recent
    read_new(board, config, now, lambda _m: None)
    rows = {r.session_id: r for r in board.snapshot(now)}
    archived = {s.session_id: s for s in tree.sessions}
    assert set(rows) == set(archived)
    for sid, r in rows.items():
        assert r.root_session_id == tree.root_id
        assert r.parent_session_id == (None if sid == tree.root_id else tree.root_id)
        assert (r.tokens, r.turns) == totals(archived[sid].messages)[::2]


def test_a_stuck_claude_session_alerts_its_rule_and_resolves_when_it_ends(
    engine: Engine, tmp_path: Path
) -> None:
    (src,) = (FIXTURES / "c_doom_loop" / "json").rglob("*.jsonl")
    lines = src.read_bytes().splitlines(keepends=True)
    config = tmp_path / "claude"
    path = config / "projects" / "-p" / src.name
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(lines[:46]))  # the loop in flight: a tool running
    sink = _Sink()
    rules = Rules(on_stuck=(("doom_loop", "abort"),))

    async def run() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(
            follow_claude_live(
                config,
                stop,
                engine=engine,
                redactor=Redactor(b"k" * 32, []),
                interval=0.05,
                rules=rules,
                sink=sink,
            )
        )
        await _until(engine, lambda rs: any(r.state == "running_tool" for r in rs))
        for _ in range(100):
            if sink.got:
                break
            await asyncio.sleep(0.05)
        with path.open("ab") as fh:
            fh.write(b"".join(lines[46:]))  # it ends: the session is idle, the condition over
        await _until(engine, lambda rs: any(r.state == "idle" for r in rs))
        for _ in range(100):
            if any(a.state == "resolved" for a in sink.got):
                break
            await asyncio.sleep(0.05)
        stop.set()
        await task

    asyncio.run(run())
    # said each tick while it holds (the deliverer dedups), one condition, then its resolve
    fired = {a.key: a for a in sink.got if a.state == "firing"}
    ((key, alert),) = fired.items()
    assert alert.kind == "stuck" and "doom_loop" in alert.summary
    assert [a.key for a in sink.got if a.state == "resolved"] == [key]
    # the alert is all: nothing was aborted (no audit row: the CLI has no door for it)
    with session_scope(engine, write=False) as db:
        assert list(db.exec(select(WatchAction))) == []


def test_two_watchers_of_one_folder_write_its_rows_from_one(engine: Engine, tmp_path: Path) -> None:
    config = tmp_path / "claude"
    path = config / "projects" / "-p" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(jsonl([user(SID, "hello")]))
    logs: dict[str, list[str]] = {"a": [], "b": []}

    async def run() -> None:
        stop = asyncio.Event()

        def one(name: str) -> asyncio.Task[object]:
            red = Redactor(b"k" * 32, [])
            return asyncio.create_task(
                follow_claude_live(
                    config, stop, engine=engine, redactor=red, interval=0.05, log=logs[name].append
                )
            )

        first = one("a")
        await _until(engine, lambda rs: len(rs) == 1)
        second = one("b")
        await asyncio.sleep(0.5)
        stop.set()
        await first
        await second

    asyncio.run(run())
    assert any(m.startswith("live rows for Claude Code sessions") for m in logs["a"])
    assert logs["b"] == []  # never held the folder: it wrote nothing and said nothing
