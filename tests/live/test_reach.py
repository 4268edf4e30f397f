"""The one sentence for a server that is down, its backoff and the line when it is back
(`tower.reach`), on real socket errors and on any sequence of failures."""

from __future__ import annotations

import errno
import socket

import httpx
from hypothesis import given
from hypothesis import strategies as st

from archiver.errors import FetchError
from tower.reach import Reach, unreachable, why_unreachable


def _refused() -> BaseException:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nobody listens there now
    try:
        httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
    except httpx.ConnectError as exc:
        return exc
    raise AssertionError("the port answered")


def test_a_refused_port_reads_connection_refused() -> None:
    exc = _refused()
    assert why_unreachable(exc) == "connection refused" and unreachable(exc)
    wrapped = FetchError("connection", f"{type(exc).__name__}: {exc}")
    wrapped.__cause__ = exc
    assert why_unreachable(wrapped) == "connection refused" and unreachable(wrapped)
    assert not unreachable(FetchError("server_error", "HTTP 500", status=500))
    assert why_unreachable(OSError(errno.ETIMEDOUT, "x")) == "timed out"


@given(st.integers(min_value=1, max_value=40), st.floats(min_value=0, max_value=10_000))
def test_said_once_backoff_doubles_to_the_cap_and_back_once(failures: int, later: float) -> None:
    r = Reach("http://127.0.0.1:4096", cap=30.0)
    said = [r.failed(ConnectionRefusedError(errno.ECONNREFUSED, "refused"), 100.0) for _ in range(failures)]
    assert said[0] == (
        "cannot reach http://127.0.0.1:4096 (connection refused); retrying quietly, with backoff up to 30 s"
    )
    assert said[1:] == [None] * (failures - 1)
    assert r.delay(2.0) == min(30.0, 2.0 ** (failures - 1))
    back = r.answered(100.0 + later)
    assert back is not None and back.startswith("http://127.0.0.1:4096 is back after ")
    assert r.answered(200.0 + later) is None and r.delay(2.0) == 2.0 and not r.down


def test_back_after_reads_minutes_and_seconds() -> None:
    r = Reach("http://h:1")
    r.failed(TimeoutError(), 0.0)
    assert r.answered(64.0) == "http://h:1 is back after 1m 4s"
