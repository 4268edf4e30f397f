"""The watch loop: follow ``/event`` (OpenCode 2: ``/api/event``, its frames read as 1.x events
by ``tower.events_v2``), or poll the running sessions when the stream fails,
keep the live board of every session (state, since when, usage, live findings), archive each
root tree when it goes quiet and again when it changes, and probe long-running trees.

A tree is quiet only when no session of it is busy, waits on an ask or runs a tool: a run
blocked on an unanswered ask has not finished, whatever the status events said.

What to do with an archive, a finding or an abort is passed in as callbacks, so the store
stays out of the archiver.

A watcher that stands by (``following`` False: another watcher holds the server's lease)
still reads the stream into its recorder and mirror, so when it takes over no tree that ended
or was deleted meanwhile is lost; it archives, probes and writes live rows only while it
follows.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from archiver.client import OpenCodeClient
from archiver.cut import cut
from archiver.errors import FetchError
from archiver.recorder import PermissionHistory, Recorder, StatusHistory
from archiver.walk import TreeSnapshot
from tower.events_v2 import V2Decoder
from tower.live_board import LiveBoard, LiveRow
from tower.live_messages import LiveMessages, MessageBatch
from tower.mirror import Mirror
from tower.mirror_fill import fill_mirror
from tower.reach import Reach, unreachable
from tower.seen import JOURNAL, Journal
from tower.watch_board import BoardWrites
from tower.watch_probe import AbortFn, FindingsFn, Prober
from tower.watch_stream import EventStream

__all__ = ["WatchConfig", "Watcher"]

ArchiveFn = Callable[[str, StatusHistory, PermissionHistory], Awaitable[Any]]
LiveFn = Callable[[list[LiveRow]], Awaitable[None]]
ForgetFn = Callable[[list[str]], Awaitable[None]]
RescueFn = Callable[[str, TreeSnapshot, StatusHistory, PermissionHistory], Awaitable[Any]]
MessagesFn = Callable[[MessageBatch], Awaitable[None]]


@dataclass(frozen=True)
class WatchConfig:
    settle_seconds: float = 2.0
    poll_interval: float = 2.0
    probe_budget_seconds: float = 3600.0
    probe_after_share: float = 0.5
    probe_interval_seconds: float = 60.0
    abort_on_stuck: bool = False
    sse_retry_seconds: float = 30.0
    archive_existing: bool = False  # archive trees that were already there at start
    forget_after_seconds: float = 6 * 3600.0  # drop the history of trees archived and quiet
    mirror_dir: Path | None = None  # where mirrored sessions past the budget are kept
    mirror_budget_bytes: int = 256 * 2**20
    mirror_grace_seconds: float = 0.5  # after a deletion, for its children's and last events
    max_event_bytes: int = 8 * 2**20  # a longer line of the event stream is skipped as it comes
    backoff_max_seconds: float = 30.0  # retries of a server that is down, at most this far apart


class Watcher(BoardWrites, EventStream):  # BoardWrites first: it writes what EventStream asks for
    def __init__(
        self,
        client: OpenCodeClient,
        http: httpx.AsyncClient,
        on_archive: ArchiveFn,
        *,
        config: WatchConfig | None = None,
        on_findings: FindingsFn | None = None,
        on_abort: AbortFn | None = None,
        on_live: LiveFn | None = None,
        on_forget: ForgetFn | None = None,
        on_rescue: RescueFn | None = None,
        on_messages: MessagesFn | None = None,
        log: Callable[[str], None] = lambda _m: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client, self.http = client, http
        self.cfg = config or WatchConfig()
        self.rec = Recorder(forget_after=self.cfg.forget_after_seconds)
        self._on_archive = on_archive
        self._log, self._clock = log, clock
        c = self.cfg
        self.prober = Prober(
            client,
            self.rec.history,
            budget=c.probe_budget_seconds,
            after_share=c.probe_after_share,
            interval=c.probe_interval_seconds,
            abort_on_stuck=c.abort_on_stuck,
            on_findings=on_findings,
            on_abort=on_abort,
            log=log,
        )
        self._lookup_after: dict[str, float] = {}
        self.mode = "events"
        self.archives = 0
        self._first_poll = True
        self.live = LiveBoard(client.base_url, self.rec.root_of)
        self._on_live, self._on_forget = on_live, on_forget
        self._resync = False
        self.bad_events = 0
        self.oversized_events = 0
        self.event_buffer_peak = 0  # the most bytes of the stream held at once (bounded by the cap)
        # every session's messages as events tell them: a tree deleted before the server
        # could be read is archived from here (on_rescue)
        self.mirror = Mirror(self.cfg.mirror_dir, self.cfg.mirror_budget_bytes)
        self._board_lock = asyncio.Lock()
        self._board_task: asyncio.Task[None] | None = None
        self._heard = 0  # sessions journaled so far
        self.journal = Journal(self.cfg.mirror_dir / JOURNAL if self.cfg.mirror_dir else None)
        self._on_rescue = on_rescue
        self.rescues = 0
        # each session's messages so far, for its live page (on_messages stores them)
        self._on_messages = on_messages
        self.messages = LiveMessages(self.mirror) if on_messages is not None else None
        self.following = True  # False: watch and mirror only (another watcher holds the lease)
        # a server that is down is said once, retried quietly with backoff, and said back
        self.reach = Reach(client.base_url, cap=self.cfg.backoff_max_seconds)
        self.running = False
        self.connected = False
        self.v2: V2Decoder | None = None  # set once the server is known to speak OpenCode 2

    @property
    def probes(self) -> int:
        return self.prober.probes

    # -- inputs -----------------------------------------------------------------------------
    async def _poll_for(self, stop: asyncio.Event, seconds: float) -> None:
        """Poll for ``seconds``; at once back to the stream when a server that was down answers."""
        end = self._clock() + seconds
        while not stop.is_set() and self._clock() < end:
            was_down = self.reach.down
            await self.poll_once()
            if was_down and not self.reach.down:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.reach.delay(self.cfg.poll_interval))

    def _unreachable(self, exc: BaseException) -> None:
        if (said := self.reach.failed(exc, self._clock())) is not None:
            self._log(said)

    def _answered(self) -> None:
        if (said := self.reach.answered(self._clock())) is not None:
            self._log(said)

    async def poll_once(self) -> None:
        """One polling round: status of every session, and sessions updated since last seen."""
        now = self._clock()
        resync, self._resync = self._resync, False
        known = len(self.live.sessions)
        try:
            status = await self.client.status()
            self.rec.on_status_poll(status, now)
            self.live.on_status_poll(status, now)
            with contextlib.suppress(FetchError):  # older servers have no /permission
                self.live.on_permissions_poll(await self.client.permissions(list(status)), now)
            listed = await self.client.list_sessions()
            if resync:
                self.live.on_session_list([i for s in listed if isinstance(i := s.get("id"), str)], now)
            for s in listed:
                sid = s.get("id")
                if not isinstance(sid, str):
                    continue
                self.rec.learn(sid, s.get("parentID") if isinstance(s.get("parentID"), str) else None)
                updated = float((s.get("time") or {}).get("updated") or 0) / 1000.0
                if updated > self.rec.archived.get(self.rec.root_of(sid) or sid, 0.0):
                    self.rec.touch(sid, updated)
        except FetchError as exc:
            if unreachable(exc):
                self._unreachable(exc)
            else:
                self._log(f"poll failed: {exc.error_kind} {exc}")
            self.live.lost(cut(f"server unreachable ({exc.error_kind}: {exc})", 300), now)
            return
        self._answered()
        if self._first_poll and not self.cfg.archive_existing:
            # what was there before the watch began is not ours to archive unless it changes
            busy = self.rec.busy_roots()
            for sid, parent in list(self.rec.parents.items()):
                if parent is None and sid not in busy:
                    self.rec.mark_archived(sid, now)
                    self.mirror.archived(sid, now)  # nor to rescue when it is deleted
        self._first_poll = False
        if len(self.live.sessions) > known:
            self._board_now()

    # -- decisions --------------------------------------------------------------------------
    async def _resolve_parents(self) -> None:
        now = self._clock()
        for sid in sorted(self.rec.unknown()):
            if self._lookup_after.get(sid, 0.0) > now:
                continue  # looked up lately and failed: not again every tick
            try:
                s = await self.client.session(sid)
            except FetchError as exc:
                if exc.error_kind == "not_found":
                    gone = {"type": "session.deleted", "properties": {"sessionID": sid}}
                    self.rec.on_event(gone, now)
                    self.mirror.on_event(gone, now)
                else:
                    self._lookup_after[sid] = now + self.cfg.sse_retry_seconds
                continue
            self._lookup_after.pop(sid, None)
            parent = s.get("parentID")
            self.rec.learn(sid, parent if isinstance(parent, str) else None)

    async def step(self) -> None:
        """Resolve trees, archive what is due, probe what runs long."""
        if self._resync:
            await self.poll_once()
        await self._resolve_parents()
        now = self._clock()
        if not self.following:  # standing by: keep the mirror whole, act on nothing
            if self._on_rescue is not None:
                await fill_mirror(self.client, self.mirror, now, self._log)
            await self._forget(now)  # deleted trees long quiet: as the holder forgets them
            return
        if (gen := self.client.generation) is not None:  # every row names what its server runs
            self.live.about(gen.major, gen.version)
        await self._write_board(now)
        if self.messages is not None:
            await self._store_messages(self.messages.take(now))
        held = {r for s in self.live.running(now) if (r := self.rec.root_of(s)) is not None}
        for root in self.rec.due(now, self.cfg.settle_seconds, held):
            self.rec.mark_archived(root, now)
            status, perms = self.rec.history(root)
            try:
                if await self._on_archive(root, status, perms) is not False:
                    self.mirror.archived(root, now)  # read in full from the server
                    if self.messages is not None:  # the archive holds them now
                        await self._store_messages(self.messages.archived(self.rec.tree(root)))
                self.archives += 1
            except Exception as exc:  # one failed archive must not stop the watch
                self._log(f"archive of {root} failed: {type(exc).__name__}: {exc}")
        if self._on_rescue is not None:  # a mirror only rescues when someone archives
            await fill_mirror(self.client, self.mirror, now, self._log)
        for top in self.mirror.due(now, self.cfg.mirror_grace_seconds):
            await self._rescue(top)
        for root, since in self.rec.busy_roots().items():
            await self.prober.maybe(root, since, now)
        await self._forget(now)

    async def _forget(self, now: float) -> None:
        """Drop trees archived (or deleted) and quiet for ``forget_after_seconds``."""
        gone = self.rec.forget_trees(now)
        for root, members in gone.items():
            self.prober.probed.pop(root, None)
            self._lookup_after.pop(root, None)
            self.live.drop(members)
            self.mirror.drop(members)
            if self.messages is not None:
                self.messages.drop(members)
        if gone and self._on_forget is not None and self.following:  # live rows are the holder's
            with contextlib.suppress(Exception):
                await self._on_forget([s for members in gone.values() for s in members])

    async def _store_messages(self, batch: MessageBatch) -> None:
        if not batch or self._on_messages is None or self.messages is None:
            return
        try:
            await self._on_messages(batch)
        except Exception as exc:  # the store may be down for a moment: written at the next tick
            self.messages.failed(batch)
            self._log(f"live messages not stored: {type(exc).__name__}: {exc}")

    def mirror_snapshot(self, top: str) -> TreeSnapshot:
        """The deleted subtree under ``top`` from the mirror, in its server's generation's shapes."""
        gen = self.client.generation
        return self.mirror.snapshot(
            top, self.client.base_url, gen.version if gen else None, gen.major if gen else None
        )

    async def _rescue(self, top: str) -> None:
        """Archive a deleted subtree from the mirror (the server no longer has it)."""
        if self._on_rescue is None:
            return
        snap = self.mirror_snapshot(top)
        status, perms = self.rec.history(snap.root_id)
        try:
            await self._on_rescue(top, snap, status, perms)
            self.rescues += 1
        except Exception as exc:  # one failed archive must not stop the watch
            self._log(f"archive of {top} from the mirror failed: {type(exc).__name__}: {exc}")

    async def run(self, stop: asyncio.Event, *, tick: float = 0.5) -> None:
        """Until ``stop`` is set; never raises for server trouble."""
        self.running = True
        events = asyncio.create_task(self._events(stop))
        try:
            await self.poll_once()  # learn what is already running before events arrive
            while not stop.is_set():
                await self.step()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), tick)
        finally:
            self.running = False
            stop.set()
            events.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await events
            if self._board_task is not None:  # rows under way: written before the watcher ends
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._board_task
