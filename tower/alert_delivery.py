"""Alerts from producers to people: a bounded queue, then a thread that delivers.

`QueueSink.emit` only puts the alert on a bounded queue (a full queue drops it and counts the
drop), so watching and archiving never wait on a channel. `Deliverer` takes what has queued,
waits a moment for the rest of a burst (``group_wait_s``), lets the `Deduper` decide what is
due, and sends it to every channel: one ``POST`` to Alertmanager for the lot, one webhook
payload per tree. A failed request is tried again after 0.5 s, 1 s, 2 s, … (``retries`` tries in
all; a 4xx other than 408/429 is final). Each alert's delivery on each channel, sent or failed,
is handed to ``record`` with the attempts it took and the answer, and so are the drops since
the last call; ``record`` is the store's business (`telemetry.alerting`). Before sending,
``claim`` (the store's too: `telemetry.alert_claim`) says which of the due alerts are this
process's to send, so that a fleet of watchers, or one restarted, sends each once; when it
cannot answer (the store down), the `Deduper`'s own count decides alone.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import httpx
import orjson

from tower.alert import Alert
from tower.alert_dedup import Deduper
from tower.alert_payloads import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    alertmanager_alerts,
    group_by_tree,
    sign,
    slack_payload,
    webhook_payload,
)

__all__ = ["AlertmanagerChannel", "Claim", "Deliverer", "Delivery", "QueueSink", "WebhookChannel"]

log = logging.getLogger(__name__)
Outcome = Literal["sent", "failed"]
_ANSWER_CHARS = 500
_TIMEOUT = httpx.Timeout(10.0, connect=5.0)


@dataclass(frozen=True)
class Delivery:
    """One alert on one channel: what became of it after ``attempts`` tries."""

    alert: Alert
    channel: str
    outcome: Outcome
    status: int | None
    answer: str
    attempts: int
    sent_at: float
    claim_id: int | None = None  # the row claimed before sending (the first channel's), if any


@dataclass(frozen=True)
class Request:
    alerts: tuple[Alert, ...]
    url: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


class AlertmanagerChannel:
    name = "alertmanager"

    def __init__(self, url: str, console: str, repeat_s: float) -> None:
        self.url = url.rstrip("/") + "/api/v2/alerts"
        self.console, self.repeat_s = console, repeat_s

    def requests(self, alerts: Sequence[Alert], now: float, started: dict[str, float]) -> list[Request]:
        body = orjson.dumps(alertmanager_alerts(alerts, self.console, now, self.repeat_s, started))
        return [Request(tuple(alerts), self.url, body, {"content-type": "application/json"})]


class WebhookChannel:
    def __init__(self, url: str, console: str, *, fmt: Literal["json", "slack"], secret: bytes) -> None:
        self.url, self.console, self.fmt, self.secret = url, console, fmt, secret
        self.name = f"webhook_{fmt}"

    def requests(self, alerts: Sequence[Alert], now: float, started: dict[str, float]) -> list[Request]:
        out = []
        for tree, group in group_by_tree(alerts):
            payload = (
                slack_payload(tree, group, self.console)
                if self.fmt == "slack"
                else webhook_payload(tree, group, self.console, now)
            )
            body = orjson.dumps(payload)
            headers = {"content-type": "application/json"}
            if self.secret:
                ts = int(now)
                headers |= {TIMESTAMP_HEADER: str(ts), SIGNATURE_HEADER: sign(self.secret, ts, body)}
            out.append(Request(tuple(group), self.url, body, headers))
        return out


class QueueSink:
    """The `AlertSink` of a configured delivery: never blocks, never raises."""

    def __init__(self, maxsize: int = 1000) -> None:
        self.queue: queue.Queue[Alert] = queue.Queue(maxsize)
        self._lock = threading.Lock()
        self._dropped = 0

    def emit(self, alert: Alert) -> None:
        try:
            self.queue.put_nowait(alert)
        except queue.Full:
            with self._lock:
                self._dropped += 1

    def take_dropped(self) -> int:
        with self._lock:
            n, self._dropped = self._dropped, 0
        return n


Record = Callable[[list[Delivery], int], None]
# the due alerts this process may send now (others claimed them), each with its claimed row
Claim = Callable[[Sequence[Alert], float], dict[str, int]]
Channel = AlertmanagerChannel | WebhookChannel


class Deliverer:
    """The thread that empties a `QueueSink` into the channels; `close` sends what is queued."""

    def __init__(
        self,
        sink: QueueSink,
        channels: Sequence[Channel],
        record: Record,
        *,
        repeat_s: float = 300.0,
        group_wait_s: float = 0.2,
        retries: int = 4,
        backoff_s: float = 0.5,
        http: httpx.Client | None = None,
        clock: Callable[[], float] = time.time,
        pause: Callable[[float], bool] | None = None,
        claim: Claim | None = None,
    ) -> None:
        """``pause(seconds)`` waits between tries and says whether delivery is closing."""
        self.sink, self.channels, self.record = sink, list(channels), record
        self.claim = claim
        self.dedup = Deduper(repeat_s)
        self.group_wait_s, self.retries, self.backoff_s = group_wait_s, max(1, retries), backoff_s
        self.http = http or httpx.Client(timeout=_TIMEOUT)
        self.clock = clock
        self._stop = threading.Event()
        self.pause = pause or self._stop.wait
        self._thread = threading.Thread(target=self._run, name="octel-alerts", daemon=True)

    def start(self) -> Deliverer:
        self._thread.start()
        return self

    def close(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        self.http.close()

    def _take(self) -> list[Alert]:
        try:
            first = self.sink.queue.get(timeout=0.2)
        except queue.Empty:
            return []
        got = [first]
        until = time.monotonic() + self.group_wait_s
        while (left := until - time.monotonic()) > 0:
            try:
                got.append(self.sink.queue.get(timeout=left))
            except queue.Empty:
                break
        while True:  # and whatever else is already there
            try:
                got.append(self.sink.queue.get_nowait())
            except queue.Empty:
                return got

    def _run(self) -> None:
        while True:
            stopping = self._stop.is_set()
            batch = self._take()
            try:
                self.step(batch)
            except Exception:  # a bug here must not end delivery for good
                log.exception("octel: alert delivery step failed")
            if stopping and self.sink.queue.empty():
                return

    def step(self, batch: Sequence[Alert]) -> list[Delivery]:
        """Deliver what of ``batch`` is due (the newest state of each key); record it."""
        now = self.clock()
        newest: dict[str, Alert] = {}
        for a in batch:
            newest.pop(a.key, None)
            newest[a.key] = a
        shared = self.claim is not None
        unseen = {k for k, a in newest.items() if a.state == "resolved" and k not in self.dedup.last}
        due = [a for a in newest.values() if self.dedup.due(a, now, shared=shared)]
        claimed: dict[str, int] = {}
        if due and self.claim is not None and self.channels:
            try:
                claimed = self.claim(due, now)
                due = [a for a in due if a.key in claimed]
            except Exception as exc:  # the store down: better twice than never
                log.warning("octel: alerts not claimed (%s); sent by this process's count alone", exc)
                due = [a for a in due if a.key not in unseen]  # a resolve of what it never sent
        done: list[Delivery] = []
        if due:
            for i, ch in enumerate(self.channels):
                for req in ch.requests(due, now, self.dedup.started):
                    sent = self._send(ch.name, req)
                    if i == 0 and claimed:
                        sent = [replace(d, claim_id=claimed.get(d.alert.key)) for d in sent]
                    done += sent
        dropped = self.sink.take_dropped()
        if done or dropped:
            try:
                self.record(done, dropped)
            except Exception as exc:  # the store down: delivery goes on, the record is lost
                log.warning("octel: alert deliveries not recorded: %s", exc)
        return done

    def _send(self, channel: str, req: Request) -> list[Delivery]:
        status: int | None = None
        answer = ""
        attempt = 0
        for attempt in range(1, self.retries + 1):
            try:
                r = self.http.post(req.url, content=req.body, headers=req.headers)
                status, answer = r.status_code, r.text[:_ANSWER_CHARS]
            except httpx.HTTPError as exc:
                status, answer = None, f"{type(exc).__name__}: {exc}"[:_ANSWER_CHARS]
            if status is not None and 200 <= status < 300:
                break
            if status is not None and 400 <= status < 500 and status not in (408, 429):
                break  # the receiver refuses this payload: asking again gets the same answer
            if attempt < self.retries and self.pause(self.backoff_s * 2 ** (attempt - 1)):
                break  # closing: what failed is recorded as failed
        ok: Outcome = "sent" if status is not None and 200 <= status < 300 else "failed"
        at = self.clock()
        return [Delivery(a, channel, ok, status, answer, attempt, at) for a in req.alerts]
