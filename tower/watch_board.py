"""The live-board half of the watch loop: the rows that changed go to the store (``on_live``)
each step, and at once when the stream or a poll brings a session not heard of before, first
into the journal (``tower.seen``), one write at a time, never holding the stream back."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from archiver.recorder import Recorder
    from tower.live_board import LiveBoard, LiveRow
    from tower.seen import Journal

__all__ = ["BoardWrites"]


class BoardWrites:
    """Mixed into ``tower.watch.Watcher``, whose state it reads and writes."""

    following: bool
    live: LiveBoard
    rec: Recorder
    journal: Journal
    _on_live: Callable[[list[LiveRow]], Awaitable[None]] | None
    _board_lock: asyncio.Lock
    _board_task: asyncio.Task[None] | None
    _heard: int
    _log: Callable[[str], None]
    _clock: Callable[[], float]

    async def _write_board(self, now: float | None = None) -> None:
        """The live rows that changed into the store, while following: each step, and at once
        when the stream or a poll brings a session not seen before (journaled first,
        ``tower.seen``), so a watcher killed the next moment leaves its trace for the one that
        takes over (``telemetry.tower.takeover_lost``)."""
        if not self.following or self._on_live is None:
            return
        self._journal()
        async with self._board_lock:  # one write at a time, each snapshot after the one before
            while rows := self.live.snapshot(self._clock() if now is None else now):
                heard = self._heard
                try:
                    await self._on_live(rows)
                except Exception as exc:  # the store may be down for a moment: at the next step
                    self.live.again(r.session_id for r in rows)
                    self._log(f"live rows not stored: {type(exc).__name__}: {exc}")
                    return
                if self._heard == heard:  # no session first heard of meanwhile
                    self.journal.clear()  # the store holds every one it named
                    return
                now = None

    def _journal(self) -> None:
        if self.following and self.live.fresh:  # first in the journal: the store may make us wait
            self.journal.add((s, self.rec.root_of(s) or s) for s in self.live.fresh)
            self._heard += len(self.live.fresh)
            self.live.fresh.clear()

    def _board_now(self) -> None:
        """Sessions first heard of: in the journal at once, their rows written without holding
        the stream back (the store may be busy with another writer)."""
        self._journal()
        if self.following and (self._board_task is None or self._board_task.done()):
            self._board_task = asyncio.create_task(self._write_board())
