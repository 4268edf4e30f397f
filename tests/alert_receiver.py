"""A capture HTTP server on loopback for alert tests: records every POST (path, headers, body)
and answers with the status codes it is given, in turn (the last one repeats)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Posted", "Receiver"]


@dataclass(frozen=True)
class Posted:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.time() when it arrived

    def json(self) -> Any:
        return json.loads(self.body)


class Receiver:
    def __init__(self, statuses: tuple[int, ...] = (200,)) -> None:
        self.statuses = list(statuses)
        self.posts: list[Posted] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait(self, what: Callable[[list[Posted]], Any], timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                got = what(list(self.posts))
            if got:
                return got
            time.sleep(0.05)
        raise AssertionError(f"not received in {timeout} s; got {[p.body[:300] for p in self.posts]}")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        rx = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with rx._lock:
                    rx.posts.append(
                        Posted(self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.time())
                    )
                    code = rx.statuses.pop(0) if len(rx.statuses) > 1 else rx.statuses[0]
                answer = b'{"ok": true}' if code < 400 else b'{"error": "refused"}'
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        return Handler
