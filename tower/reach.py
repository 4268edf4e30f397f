"""Whether a followed server can be reached, said once (no I/O: the clock is passed in).

A watcher whose server is down must not print a class name every poll: the first failure is
one sentence ("cannot reach http://127.0.0.1:4096 (connection refused); retrying quietly, with
backoff up to 30 s"), the retries after it are silent and spaced by an exponential backoff
(1 s, 2 s, 4 s, … up to the cap), and the moment the server answers again is one line ("http://…
is back after 1m 4s").
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass

import httpx

from archiver.errors import FetchError

__all__ = ["Reach", "unreachable", "why_unreachable"]

_ERRNO = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
    errno.ETIMEDOUT: "timed out",
}


def unreachable(exc: BaseException) -> bool:
    """No connection could be made (refused, connect timed out, no such host): the server is
    down. A stream that broke after it connected is not: the next connect says which."""
    if isinstance(exc, FetchError):
        cause = exc.__cause__
        return unreachable(cause) if isinstance(cause, httpx.HTTPError) else exc.error_kind == "connection"
    return isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)


def why_unreachable(exc: BaseException) -> str:
    """A few words for a person on why a request failed, from the deepest cause known."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, socket.gaierror):
            return "host name not found"
        if isinstance(cur, OSError) and cur.errno in _ERRNO:
            return _ERRNO[cur.errno]
        if isinstance(cur, TimeoutError) or "Timeout" in type(cur).__name__:
            return "timed out"
        cur = cur.__cause__ or cur.__context__
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return f"HTTP {status}"
    text = str(exc).split(": ", 1)[-1].strip()
    return text[:120] or type(exc).__name__


def _age(seconds: float) -> str:
    s = max(0, round(seconds))
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60}m"
    return f"{s // 60}m {s % 60}s" if s >= 60 else f"{s}s"


@dataclass
class Reach:
    url: str
    cap: float = 30.0  # seconds between retries at most
    first: float = 1.0
    down_since: float | None = None
    failures: int = 0

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def failed(self, exc: BaseException, now: float) -> str | None:
        """Count a failure; the sentence to say on the first one of an outage, else None."""
        self.failures += 1
        if self.down_since is not None:
            return None
        self.down_since = now
        return (
            f"cannot reach {self.url} ({why_unreachable(exc)}); retrying quietly, "
            f"with backoff up to {self.cap:g} s"
        )

    def answered(self, now: float) -> str | None:
        """The server answered; the line to say when it had been down, else None."""
        if self.down_since is None:
            return None
        since, self.down_since, self.failures = self.down_since, None, 0
        return f"{self.url} is back after {_age(now - since)}"

    def delay(self, normal: float) -> float:
        """Seconds to wait before the next try: ``normal`` while up, else the backoff."""
        if self.down_since is None:
            return normal
        return float(min(self.cap, self.first * 2 ** max(0, self.failures - 1)))
