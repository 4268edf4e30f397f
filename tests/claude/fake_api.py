"""A scripted fake of the Anthropic Messages API on loopback, for the real Claude Code CLI.

The CLI does everything for real (tools, subagents, retries, transcripts); only the model is
fake. Each request takes the next step of its queue: ``main`` for the session's own requests,
``subagent`` for a subagent's (the CLI marks those with the ``x-claude-code-agent-id`` header or
a subagent system prompt). A step is an ``Answer`` (text and tool calls, streamed as server-sent
events in the API's order) or a ``Fail`` (an HTTP error the CLI retries). An empty queue answers
"Done.". Any ``CONNECT`` (the CLI trying to leave loopback through the proxy) is refused and
counted, so a test can assert the run stayed offline.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Answer", "Fail", "FakeAnthropic", "fake_anthropic"]


@dataclass
class Answer:
    text: str = ""
    tools: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    input_tokens: int = 1000
    output_tokens: int = 50
    cache_read: int = 0
    stop: str = ""  # the stop reason; by default tool_use with tools, else end_turn (max_tokens: cut)


@dataclass
class Fail:
    status: int = 529
    kind: str = "overloaded_error"
    message: str = "Overloaded"


Step = Answer | Fail


@dataclass
class FakeAnthropic:
    main: list[Step] = field(default_factory=list)
    subagent: list[Step] = field(default_factory=list)
    url: str = ""
    seen: list[str] = field(default_factory=list)  # "main", "subagent", "aux" per request
    connects: int = 0
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_step(self, body: dict[str, Any], headers: Any) -> tuple[str, Step]:
        system = json.dumps(body.get("system", ""))
        if not body.get("tools"):
            kind = "aux"
        elif (
            headers.get("x-claude-code-agent-id")
            or "cc_is_subagent=true" in system
            or ("You are an agent for Claude Code" in system)
        ):
            kind = "subagent"
        else:
            kind = "main"
        with self._lock:
            self.seen.append(kind)
            queue = self.subagent if kind == "subagent" else self.main if kind == "main" else []
            return kind, queue.pop(0) if queue else Answer("OK" if kind == "aux" else "Done.")

    def new_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_fake{next(self._ids):04d}"


def _handler(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

        def _reply(self, code: int, body: dict[str, Any], extra: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            for k, v in {
                "Content-Type": "application/json",
                "request-id": fake.new_id("req"),
                **(extra or {}),
            }.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_CONNECT(self) -> None:
            fake.connects += 1
            self._reply(403, {"error": "no traffic leaves loopback"})

        def do_GET(self) -> None:
            self._reply(200, {"data": [], "has_more": False})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.path.startswith("/v1/messages"):
                self._reply(200, {})
                return
            if "count_tokens" in self.path:
                self._reply(200, {"input_tokens": 100})
                return
            body = json.loads(raw or b"{}")
            _kind, step = fake.next_step(body, self.headers)
            if isinstance(step, Fail):
                err = {"type": "error", "error": {"type": step.kind, "message": step.message}}
                self._reply(step.status, err, {"x-should-retry": "true"})
                return
            self._stream(step, str(body.get("model") or "claude-opus-5-5"))

        def _event(self, name: str, data: dict[str, Any]) -> None:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

        def _stream(self, a: Answer, model: str) -> None:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": a.text}] if a.text else []
            blocks += [
                {"type": "tool_use", "id": fake.new_id("toolu"), "name": n, "input": i} for n, i in a.tools
            ]
            usage = {
                "input_tokens": a.input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": a.cache_read,
            }
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("request-id", fake.new_id("req"))
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            start = {
                "id": fake.new_id("msg"),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "usage": {**usage, "output_tokens": 1},
            }
            self._event("message_start", {"type": "message_start", "message": start})
            for i, b in enumerate(blocks):
                opening = {"type": "text", "text": ""} if b["type"] == "text" else {**b, "input": {}}
                self._event(
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": opening},
                )
                if b["type"] == "text":
                    delta = {"type": "text_delta", "text": b["text"]}
                else:
                    delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
                self._event(
                    "content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}
                )
                self._event("content_block_stop", {"type": "content_block_stop", "index": i})
            stop = a.stop or ("tool_use" if a.tools else "end_turn")
            self._event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop},
                    "usage": {**usage, "output_tokens": a.output_tokens},
                },
            )
            self._event("message_stop", {"type": "message_stop"})
            self.wfile.flush()

    return Handler


@contextmanager
def fake_anthropic(main: list[Step], subagent: list[Step] | None = None) -> Iterator[FakeAnthropic]:
    """The fake on a free loopback port, stopped when the block ends."""
    fake = FakeAnthropic(list(main), list(subagent or []))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
