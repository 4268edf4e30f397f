"""`octel watch --claude-dir`: live rows for the Claude Code sessions running in one config
folder, beside the archiving of quiet ones (`telemetry.services.claude.importer.watch_claude`).

Each tick reads only the bytes each recent transcript gained (`tower.claude_board`), asks the
CLI what it lists (`claude agents --json`, every few seconds, in a thread: a CLI without the
command is asked once), and writes the rows that moved into the live table through the one
redactor, as an OpenCode server's watcher does. The folder is followed under a lease like a
server, so a watcher that stops leaves its rows read as `unknown (no watcher since …)`.

Live rules and budgets only alert here: the Claude Code CLI is another process with no
control door, so octel cannot stop or answer it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from archiver.claude.document import score_claude
from archiver.claude.layout import default_config_dir
from archiver.claude.loading import LineTooLong, read_capped
from archiver.redact import Redactor
from telemetry.queries.live import LiveChange, live_change
from telemetry.store.db import session_scope
from telemetry.timeutil import utcnow
from telemetry.tower.acting import pause
from telemetry.tower.budget_watch import BudgetWatch
from telemetry.tower.lease import claim_lease, release_lease, renew_lease
from telemetry.tower.live import forget_live, store_live_rows
from telemetry.tower.live_messages import store_live_messages
from telemetry.tower.watching import holder_name
from tower.actions import Rules
from tower.alert import AlertSink, NullSink
from tower.claude_board import ClaudeBoard, claude_server, parse_agents
from tower.claude_tail import AgentSeen
from tower.live_alerts import LiveAlerts
from tower.live_board import LiveRow
from tower.live_messages import MessageBatch

__all__ = ["ClaudeLive", "Transcript", "agents_of", "follow_claude_live", "read_new", "recent_transcripts"]

Log = Callable[[str], None]
AGENTS_EVERY_S = 5.0  # the CLI takes about two seconds to answer: asked no more often than this
_AGENTS_TIMEOUT_S = 30.0


class Transcript(NamedTuple):
    session_id: str
    path: Path
    mtime: float
    parent: str | None  # the session a subagent works for


@dataclass
class ClaudeLive:
    ticks: int = 0
    rows_written: int = 0
    lines_read: int = 0
    agents_calls: int = 0


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _subagents(folder: str, sid: str, since: float) -> list[Transcript]:
    """The 2.1 layout's subagent transcripts of one session (``<id>/subagents/agent-<a>.jsonl``),
    named as the archive names them (``<id>.agent-<a>``)."""
    try:
        entries = list(os.scandir(os.path.join(folder, sid, "subagents")))
    except OSError:
        return []
    out = []
    for e in entries:
        if not (e.name.startswith("agent-") and e.name.endswith(".jsonl")):
            continue
        if (mtime := _mtime(e.path)) is not None and mtime >= since:
            out.append(Transcript(f"{sid}.{e.name[: -len('.jsonl')]}", Path(e.path), mtime, sid))
    return out


def recent_transcripts(config_dir: Path, since: float) -> list[Transcript]:
    """Each transcript written to since ``since``: the main ones (``projects/<p>/<id>.jsonl``)
    and the subagents' of a recent main one; a stat per file, nothing read."""
    out = []
    projects = config_dir / "projects"
    try:
        folders = [e for e in os.scandir(projects) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    for folder in folders:
        try:
            entries = list(os.scandir(folder.path))
        except OSError:
            continue
        for e in entries:
            if not e.name.endswith(".jsonl") or e.name.startswith("agent-"):
                continue
            mtime = _mtime(e.path)
            if mtime is None or mtime < since:
                continue
            sid = e.name[: -len(".jsonl")]
            out.append(Transcript(sid, Path(e.path), mtime, None))
            # a subagent runs while its session waits on it: looked for only beside a recent one
            out += _subagents(folder.path, sid, since)
    return out


def agents_of(cli: str, config_dir: Path) -> dict[str, AgentSeen]:
    """`claude agents --json` of ``config_dir``; ValueError with a sentence when the CLI cannot
    say (no such command, not JSON, no answer in time)."""
    what = f"{cli} agents --json"
    env = dict(os.environ)
    if config_dir.resolve() != default_config_dir().resolve():
        env["CLAUDE_CONFIG_DIR"] = str(config_dir)
    try:
        done = subprocess.run(
            [cli, "agents", "--json"],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_AGENTS_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ValueError(f"{what}: {type(exc).__name__}: {exc}") from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()[:1]
        raise ValueError(f"{what} exited {done.returncode}: {' '.join(said)[:200]}")
    try:
        return parse_agents(done.stdout)
    except ValueError as exc:
        raise ValueError(f"{what} answered {exc}") from None


def read_new(board: ClaudeBoard, config_dir: Path, now: float, log: Log) -> int:
    """Every recent transcript's new bytes fed to the board; returns the lines read."""
    lines = 0
    have = {sid: t for sid, t in board.paths()}
    for sid, path, mtime, parent in recent_transcripts(config_dir, now - board.forget_after):
        tail = have.get(sid) or board.tail(sid, str(path), parent)
        try:
            size = path.stat().st_size
            if size < tail.offset:  # rewritten shorter (a hook, a restore): read again from the start
                board.seen.pop(sid, None)
                tail = board.tail(sid, str(path), parent)
            if size == tail.offset:
                continue
            data = read_capped(path, tail.offset)
        except LineTooLong as exc:
            log(f"{path}: {exc}")
            continue
        except OSError:
            continue
        # the file's own time is when it grew (a watcher that starts late is not fooled)
        lines += board.feed(sid, str(path), data, min(mtime, now))
    return lines


def _tick(
    board: ClaudeBoard, config_dir: Path, now: float, log: Log
) -> tuple[int, list[LiveRow], list[str], MessageBatch]:
    lines = read_new(board, config_dir, now, log)
    return lines, board.snapshot(now), board.forget(now), board.messages()


async def follow_claude_live(
    config_dir: Path,
    stop: asyncio.Event,
    *,
    engine: Engine,
    redactor: Redactor,
    interval: float = 2.0,
    cli: str | None = None,
    lease_seconds: float = 30.0,
    rules: Rules | None = None,
    budgets: BudgetWatch | None = None,
    sink: AlertSink | None = None,
    log: Log = lambda _m: None,
    clock: Callable[[], float] = time.time,
    forget_after: float = 3600.0,
    on_change: Callable[[LiveChange], None] | None = None,
) -> ClaudeLive:
    """Until ``stop``: keep the live rows of the sessions in ``config_dir`` (``cli``: the
    Claude Code CLI asked for its list; None: the transcripts alone); ``on_change`` hears each
    stored row whose state changed."""
    server = claude_server(str(config_dir))
    board = ClaudeBoard(server, score_claude, forget_after=forget_after)
    holder, held, out = holder_name(), False, ClaudeLive()
    sink = sink or NullSink()
    alerts = LiveAlerts(rules or Rules(), redactor.redact_str)
    asking: asyncio.Task[dict[str, AgentSeen]] | None = None
    asked_at = renewed = float("-inf")
    while not stop.is_set():
        now = clock()
        try:
            was = held
            if not held or now - renewed >= lease_seconds / 3:  # renewed as a server's lease is
                with session_scope(engine) as db:
                    held = (
                        renew_lease(db, server, holder, lease_seconds)
                        if held
                        else claim_lease(db, server, holder, lease_seconds).held
                    )
                renewed = now
            if held and not was:
                log(f"live rows for Claude Code sessions in {config_dir}")
            if not held:
                if was:
                    log(f"{config_dir}: another watcher follows it now; live rows left to it")
                await pause(stop, interval)
                continue
            if asking is not None and asking.done():
                try:
                    board.on_agents(asking.result())
                    out.agents_calls += 1
                except ValueError as exc:  # the installed CLI cannot list: the transcripts alone
                    log(f"{exc}; live states from the transcripts alone")
                    cli = None
                asking = None
            if cli is not None and asking is None and now - asked_at >= AGENTS_EVERY_S:
                asked_at, asking = now, asyncio.create_task(asyncio.to_thread(agents_of, cli, config_dir))
            # reading and scoring in a thread: a long stream takes a tenth of a second to score
            lines, rows, gone, said = await asyncio.to_thread(_tick, board, config_dir, now, log)
            out.lines_read += lines
            if rows or gone or said:
                with session_scope(engine) as db:
                    stored = store_live_rows(db, rows, redactor=redactor)
                    store_live_messages(db, server, said, redactor=redactor)  # redacted, then cut
                    if gone:
                        forget_live(db, server, gone)
                out.rows_written += len(rows)
                if on_change is not None:
                    at = utcnow()
                    for r, x in zip(rows, stored.rows, strict=True):
                        if r.state != r.previous_state:
                            on_change(live_change(x, r.previous_state, at))
            for a in alerts.tick(board.views()):
                sink.emit(a)
            if budgets is not None and budgets.any:
                budgets.check(engine, now, roots=board.active_roots())
            out.ticks += 1
        except SQLAlchemyError as exc:  # the store is away: rows are written again when it is back
            log(f"Claude Code live rows paused: the store failed ({type(exc).__name__})")
            held = False
            board.touch()
        await pause(stop, interval)
    if asking is not None:
        asking.cancel()
    if held:
        try:
            with session_scope(engine) as db:
                release_lease(db, server, holder)
        except SQLAlchemyError:
            pass
    return out
