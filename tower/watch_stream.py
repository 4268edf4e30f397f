"""The event stream half of the watch loop: connect to ``/event`` (OpenCode 2: ``/api/event``
with Basic auth, its frames read as 1.x events by ``tower.events_v2``), read ``data:`` lines as
they come (a line over the cap skipped, never held whole), and fold each event into the
recorder, the live board and the mirror. When the stream fails the watcher polls until it is
back; every (re)connect re-sweeps what the stream cannot replay.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import httpx
import orjson

from archiver.errors import FetchError
from archiver.sse_lines import LineReader
from tower.events_v2 import V2Decoder
from tower.reach import Reach, unreachable

if TYPE_CHECKING:
    from archiver.client import OpenCodeClient
    from archiver.recorder import Recorder
    from tower.live_board import LiveBoard
    from tower.mirror import Mirror

__all__ = ["EventStream"]


class EventStream:
    """Mixed into ``tower.watch.Watcher``, whose state it reads and writes."""

    client: OpenCodeClient
    http: httpx.AsyncClient
    cfg: Any
    rec: Recorder
    live: LiveBoard
    mirror: Mirror
    mode: str
    v2: V2Decoder | None
    bad_events: int
    oversized_events: int
    event_buffer_peak: int
    connected: bool  # the stream answered once
    following: bool
    _resync: bool
    reach: Reach
    _log: Callable[[str], None]
    _clock: Callable[[], float]

    async def _poll_for(self, stop: asyncio.Event, seconds: float) -> None:
        raise NotImplementedError

    def _unreachable(self, exc: BaseException) -> None:
        raise NotImplementedError

    def _answered(self) -> None:
        raise NotImplementedError

    def _board_now(self) -> None:
        raise NotImplementedError

    async def _events(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                if await self.client.speaks_v2() and self.v2 is None:
                    self.v2 = V2Decoder()
                path = "/api/event" if self.v2 is not None else "/event"
                timeout = httpx.Timeout(10.0, read=None)
                headers = {"accept": "text/event-stream"}  # 2.0.3 sent nothing without it
                async with self.http.stream(
                    "GET",
                    self.client.base_url + path,
                    timeout=timeout,
                    headers=headers,
                    auth=self.client.http.auth or httpx.USE_CLIENT_DEFAULT,
                ) as resp:
                    if resp.status_code != 200:
                        raise FetchError("unsupported", f"{path} answered {resp.status_code}")
                    self.mode = "events"
                    self._answered()
                    if not self.connected:  # said once: from here on no event of it is missed
                        self.connected = True
                        standing = "" if self.following else " (standing by)"
                        self._log(f"reading the events of {self.client.base_url}{standing}")
                    self._resync = True  # catch up on what happened while not connected
                    if await self._read_events(resp, stop):
                        return
                why = "event stream closed by the server"
            except (httpx.TransportError, FetchError) as exc:
                if unreachable(exc):
                    why = f"server unreachable ({type(exc).__name__}: {exc})"
                    self._unreachable(exc)
                else:
                    why = f"event stream unavailable ({type(exc).__name__}: {exc})"
            except httpx.HTTPError as exc:
                why = f"event stream unavailable ({type(exc).__name__}: {exc})"
            if stop.is_set():
                return
            if not self.reach.down:  # a server that is down was said once already
                self._log(f"{why}; polling instead")
            self.mirror.gap(
                f"{why} at {self._clock():.0f}: events until it was back may be lost", self._clock()
            )
            self.live.lost(why, self._clock())
            self.mode = "polling"
            await self._poll_for(stop, self.cfg.sse_retry_seconds)

    async def _read_events(self, resp: httpx.Response, stop: asyncio.Event) -> bool:
        """Fold each ``data:`` line until the stream ends; True when stopped. A line over
        ``max_event_bytes`` is skipped as it comes (said, counted), never held whole."""
        lines, said = LineReader(self.cfg.max_event_bytes), 0
        async for chunk in resp.aiter_bytes():  # as they come (a chunk size would hold events back)
            known = len(self.live.sessions)
            for line in lines.feed(chunk):
                if stop.is_set():
                    return True
                if line.startswith(b"data:"):
                    self._event(line[5:])
            if len(self.live.sessions) > known:  # a session first heard of: journaled before the
                self._board_now()  # next event is read, its row written beside it
            self.event_buffer_peak = max(self.event_buffer_peak, lines.peak)
            if lines.oversized > said:
                self.oversized_events += lines.oversized - said
                said = lines.oversized
                self._log(
                    f"an event over {self.cfg.max_event_bytes} bytes skipped "
                    f"({self.oversized_events} so far); reading on"
                )
        return stop.is_set()

    def _event(self, payload: str | bytes) -> None:
        try:
            ev = orjson.loads(payload)
        except orjson.JSONDecodeError:
            self.bad_events += 1
            if self.bad_events in (1, 10, 100) or self.bad_events % 1000 == 0:
                shown = payload[:80].decode(errors="replace") if isinstance(payload, bytes) else payload[:80]
                self._log(f"{self.bad_events} malformed events skipped, e.g. {shown!r}")
            return
        if isinstance(ev, Mapping) and isinstance(ev.get("payload"), Mapping):
            ev = ev["payload"]  # /global/event wraps each event
        for one in self.v2.decode(ev) if self.v2 is not None else [ev]:
            self.fold(one)

    def fold(self, ev: object) -> None:
        """One 1.x-shaped event into the recorder, the live board and the mirror."""
        if isinstance(ev, Mapping):
            now = self._clock()
            self.rec.on_event(ev, now)
            self.live.on_event(ev, now)
            self.mirror.on_event(ev, now)
            if ev.get("type") == "server.connected":
                self._resync = True
