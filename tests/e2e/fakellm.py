"""A scripted OpenAI-compatible chat-completions server for driving a real `opencode serve`.

Runs in a thread of the test process on 127.0.0.1. A script is ``{"turns": [TURN...],
"default": TURN, "title": str}``; TURN has any of ``text``, ``reasoning``, ``tool_calls``
(``[{name, arguments}]``), ``finish_reason``, ``delay``, ``http_error`` (with ``message``, or a
raw ``body``, and ``headers`` such as ``retry-after-ms``). Agent requests (those
that carry tools) take the next turn in arrival order across the whole session tree; title
requests (the small model) get ``title`` and take no turn; other requests without tools (a
compaction summary) get ``summary`` after ``summary_delay`` seconds.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeLLM"]


class FakeLLM:
    def __init__(self) -> None:
        self.script: dict[str, Any] = {"turns": []}
        self.cursor = 0
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def load(self, script: dict[str, Any]) -> None:
        with self._lock:
            self.script, self.cursor = script, 0

    def next_turn(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            if "small" in str(body.get("model", "")):
                return {"text": self.script.get("title", "A session title")}
            if not body.get("tools"):  # a compaction summary asks the main model without tools
                summary = self.script.get("summary", self.script.get("title", "A session title"))
                return {"text": summary, "delay": self.script.get("summary_delay", 0)}
            turns = self.script.get("turns", [])
            if self.cursor < len(turns):
                self.cursor += 1
                return dict(turns[self.cursor - 1])
            return dict(self.script.get("default", {"text": "Done."}))


def _chunks(turn: dict[str, Any], model: str, stamp: str) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{stamp}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    calls = [
        {
            "index": i,
            "id": f"call_{stamp}_{i}",
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))},
        }
        for i, c in enumerate(turn.get("tool_calls", []))
    ]
    out = [chunk({"role": "assistant", "content": ""})]
    if turn.get("reasoning"):
        out.append(chunk({"reasoning_content": turn["reasoning"]}))
    if turn.get("text"):
        out.append(chunk({"content": turn["text"]}))
    out += [chunk({"tool_calls": [c]}) for c in calls]
    out.append(chunk({}, turn.get("finish_reason", "tool_calls" if calls else "stop")))
    prompt, completion = 200, 20 + len(turn.get("text", "")) // 4
    out.append(
        {
            "id": f"chatcmpl-{stamp}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0},
            },
        }
    )
    return out


def _handler(llm: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {"id": m, "object": "model", "owned_by": "fake"}
                            for m in ("fake-model", "fake-small")
                        ],
                    },
                )
            else:
                self._json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(n) or b"{}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": "not found"}})
                return
            turn = llm.next_turn(body)
            time.sleep(float(turn.get("delay", 0)))
            if "http_error" in turn:
                code = int(turn["http_error"])
                error = {
                    "message": turn.get("message", f"error {code}"),
                    "type": "server_error",
                    "code": code,
                }
                self._json(code, turn.get("body") or {"error": error}, turn.get("headers"))
                return
            stamp = f"{time.time_ns()}"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                for c in _chunks(turn, str(body.get("model", "fake-model")), stamp):
                    self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler
