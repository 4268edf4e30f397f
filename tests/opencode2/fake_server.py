"""A fake OpenCode 2 server on loopback, written from the HTTP contract (docs: V2 contract §0-§13).

OpenCode 2 cannot be installed here, so the tests run the archiver against this: a threaded
HTTP server with V2's routes under ``/api/…``, HTTP Basic auth on every route (user
``opencode``; 401 with an empty body), ``{data}`` / ``{data, cursor}`` envelopes with opaque
base64url cursors that end with one empty page, ``{_tag, message}`` errors, children by
``?parentID=``, typed messages with ``content[]``, a delete that removes every descendant,
``interrupt``, permission replies ``{decision}``, and the one global ``/api/event`` stream of
``{id, created, type, data}`` frames. The root paths answer the web UI's HTML with 200 (GET)
or 405 (other methods), as V2 does.

Where the contract is not sure, the fake follows the source and says so (``ASSUMED``).
The scenario methods (``session``, ``user``, ``step``, ``shell``, …) write what a real server
would store and publish the events it would publish; no LLM is involved.
"""

from __future__ import annotations

import base64
import itertools
import json
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

JsonObj = dict[str, Any]

# ASSUMED: /api/info answers its object bare ({version, pid, urls, paths}), as the contract's
# route table and the generated client show it, not inside {data} (the contract's general rule).
ASSUMED_INFO_BARE = True
VERSION = "2.1.2"
USER = "opencode"
HTML = b"<!doctype html><html><head><title>OpenCode</title></head><body></body></html>"
_SES_TOP = 10**12  # session ids sort descending: newer sessions have smaller ids


def _cursor(obj: JsonObj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def _uncursor(text: str) -> JsonObj:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    out: JsonObj = json.loads(raw)
    return out


def _order(q: dict[str, str]) -> str:
    """A page's order: the cursor's own when one is passed back (alone, as V2 wants)."""
    if "cursor" in q:
        try:
            return str(_uncursor(q["cursor"]).get("order", "desc"))
        except ValueError:
            return "desc"
    return q.get("order", "desc")


def _zero_tokens() -> JsonObj:
    return {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}


@dataclass
class FakeOpenCode2:
    password: str = "fake-oc2-password"
    version: str = VERSION
    url: str = ""
    sessions: dict[str, JsonObj] = field(default_factory=dict)
    messages: dict[str, list[JsonObj]] = field(default_factory=dict)
    permissions: dict[str, JsonObj] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)
    requests: list[tuple[str, str]] = field(default_factory=list)
    replies: list[tuple[str, str, JsonObj]] = field(default_factory=list)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _subs: list[queue.Queue[JsonObj | None]] = field(default_factory=list)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    # ---- ids, events -------------------------------------------------------------------
    def _n(self) -> int:
        return next(self._ids)

    def publish(self, type_: str, data: JsonObj, *, durable: bool = True) -> None:
        n = self._n()
        frame: JsonObj = {
            "id": f"evt_{n:012d}",
            "created": int(time.time() * 1000),
            "type": type_,
            "data": data,
        }
        sid = data.get("sessionID")
        if durable and isinstance(sid, str):
            frame["durable"] = {"aggregateID": sid, "seq": n, "version": 1}
        for q in list(self._subs):
            q.put(frame)

    # ---- scenario: what a real server stores and publishes ------------------------------
    def session(
        self,
        *,
        parent: str | None = None,
        title: str | None = None,
        agent: str | None = None,
        directory: str = "/work/project",
    ) -> str:
        with self._lock:
            sid = f"ses_{_SES_TOP - self._n():013d}Fk"
            now = int(time.time() * 1000)
            info: JsonObj = {
                "id": sid,
                "projectID": "a" * 40,
                "cost": 0,
                "tokens": _zero_tokens(),
                "time": {"created": now, "updated": now},
                "location": {"directory": directory},
            }
            for k, v in (("parentID", parent), ("title", title), ("agent", agent)):
                if v is not None:  # optional fields are absent, not null
                    info[k] = v
            self.sessions[sid], self.messages[sid] = info, []
        self.publish(
            "session.created",
            {
                "sessionID": sid,
                **{k: v for k, v in info.items() if k != "id"},
                "slug": "fake",
                "version": self.version,
            },
        )
        return sid

    def _add(self, sid: str, msg: JsonObj) -> JsonObj:
        with self._lock:
            msg = {"id": f"msg_{self._n():012d}", "time": {"created": int(time.time() * 1000)}, **msg}
            self.messages[sid].append(msg)
            self.sessions[sid]["time"]["updated"] = msg["time"]["created"]
        return msg

    def user(self, sid: str, text: str) -> JsonObj:
        msg = self._add(sid, {"type": "user", "text": text})
        self.running.add(sid)
        self.publish("session.execution.started", {"sessionID": sid})
        return msg

    def step(
        self,
        sid: str,
        content: list[JsonObj],
        *,
        finish: str = "stop",
        cost: float = 0.001,
        tokens: JsonObj | None = None,
        error: JsonObj | None = None,
        retry: JsonObj | None = None,
        agent: str = "build",
    ) -> JsonObj:
        """One LLM step: an assistant message whose cost and tokens count for this session only."""
        tok = tokens or {"input": 100, "output": 20, "reasoning": 5, "cache": {"read": 50, "write": 0}}
        body: JsonObj = {
            "type": "assistant",
            "agent": agent,
            "model": {"id": "fake-model", "providerID": "fake"},
            "content": content,
            "finish": finish,
            "cost": cost,
            "tokens": tok,
        }
        for k, v in (("error", error), ("retry", retry)):
            if v is not None:
                body[k] = v
        msg = self._add(sid, body)
        msg["time"]["completed"] = msg["time"]["created"] + 1
        with self._lock:
            s = self.sessions[sid]
            s["cost"] = round(s["cost"] + cost, 10)
            for k in ("input", "output", "reasoning"):
                s["tokens"][k] += tok.get(k, 0)
        self.publish(
            "session.step.started",
            {
                "sessionID": sid,
                "assistantMessageID": msg["id"],
                "agent": agent,
                "model": body["model"],
                "started": msg["time"]["created"],
            },
        )
        if retry is not None:
            self.publish(
                "session.retry.scheduled", {"sessionID": sid, "assistantMessageID": msg["id"], **retry}
            )
        ended = "session.step.failed" if error else "session.step.ended"
        self.publish(
            ended,
            {
                "sessionID": sid,
                "assistantMessageID": msg["id"],
                "finish": finish,
                "cost": cost,
                "tokens": tok,
                **({"error": error} if error else {}),
            },
        )
        return msg

    @staticmethod
    def tool(
        name: str,
        input_: JsonObj,
        output: str = "",
        *,
        status: str = "completed",
        metadata: JsonObj | None = None,
        call: str = "",
    ) -> JsonObj:
        state: JsonObj = {"status": status, "input": input_}
        if status == "error":
            state["error"] = {"type": "tool.execution", "message": output}
        else:
            state["content"] = [{"type": "text", "text": output}]
        if metadata is not None:
            state["metadata"] = metadata
        return {
            "type": "tool",
            "id": call or f"call_{abs(hash((name, output, time.time_ns()))) % 10**9}",
            "name": name,
            "state": state,
            "time": {"created": int(time.time() * 1000)},
        }

    def shell(self, sid: str, command: str, output: str, exit_: int = 0) -> JsonObj:
        return self._add(
            sid,
            {
                "type": "shell",
                "shellID": f"sh_{self._n():08d}",
                "command": command,
                "status": "exited",
                "exit": exit_,
                "output": {"output": output, "cursor": len(output), "size": len(output), "truncated": False},
            },
        )

    def compaction(self, sid: str, summary: str) -> JsonObj:
        return self._add(
            sid, {"type": "compaction", "status": "completed", "reason": "auto", "summary": summary}
        )

    def idle(
        self, sid: str, outcome: str = "succeeded", error: JsonObj | None = None, reason: str = "user"
    ) -> JsonObj:
        msg = self._add(sid, {"type": "idle", "outcome": outcome, **({"error": error} if error else {})})
        with self._lock:
            self.running.discard(sid)
            self.sessions[sid]["outcome"] = outcome
            self.sessions[sid]["time"]["idle"] = msg["time"]["created"]
        extra: JsonObj = {"succeeded": {}, "failed": {"error": error}, "interrupted": {"reason": reason}}[
            outcome
        ]
        self.publish(f"session.execution.{outcome}", {"sessionID": sid, **extra})
        return msg

    def ask(self, sid: str, action: str = "shell", resources: tuple[str, ...] = ("rm -rf build",)) -> str:
        rid = f"per_{self._n():012d}"
        req = {"id": rid, "sessionID": sid, "action": action, "resources": list(resources), "save": ["*"]}
        self.permissions[rid] = req
        self.publish("permission.asked", req, durable=False)
        return rid

    # ---- the HTTP side ------------------------------------------------------------------
    def _descendants(self, sid: str) -> list[str]:
        kids = [k for k, s in self.sessions.items() if s.get("parentID") == sid]
        return [x for k in kids for x in self._descendants(k)] + kids

    def route(self, method: str, path: str, q: dict[str, str], body: JsonObj | None) -> tuple[int, Any]:
        """(status, JSON body or None) of one authenticated /api request."""
        parts = path.strip("/").split("/")[1:]  # after "api"
        with self._lock:
            if parts == ["info"]:
                info = {"version": self.version, "pid": 4242, "urls": [self.url], "paths": {"tmp": "/tmp"}}
                return 200, info if ASSUMED_INFO_BARE else {"data": info}
            if parts == ["event"]:
                return 200, "SSE"
            if parts == ["session"] and method == "GET":
                rows = list(self.sessions.values())
                if "parentID" in q:
                    want = None if q["parentID"] == "null" else q["parentID"]
                    rows = [s for s in rows if s.get("parentID") == want]
                rows.sort(key=lambda s: s["id"], reverse=_order(q) == "asc")  # ids sort newest first
                return self._page(rows, q)
            if parts == ["session", "active"]:
                return 200, {"data": {s: {"type": "running"} for s in sorted(self.running)}}
            if len(parts) >= 2 and parts[0] == "session":
                return self._one(method, parts[1], parts[2:], q, body)
        return 404, None  # unknown /api routes: 404 with an empty body

    def _page(self, rows: list[JsonObj], q: dict[str, str]) -> tuple[int, Any]:
        limit = int(q.get("limit", "50"))
        if limit < 1 or limit > 200:
            return 400, {"_tag": "InvalidRequestError", "message": "limit out of range", "field": "limit"}
        start = 0
        if "cursor" in q:
            try:
                anchor = _uncursor(q["cursor"])["id"]
            except (ValueError, KeyError):
                return 400, {"_tag": "InvalidCursorError", "message": "bad cursor"}
            ids = [r["id"] for r in rows]
            start = ids.index(anchor) + 1 if anchor in ids else len(rows)
        page = rows[start : start + limit]
        cursor: JsonObj = {}
        if page:  # a client that follows `next` ends with one empty page
            cursor["next"] = _cursor({"id": page[-1]["id"], "order": _order(q), "direction": "next"})
        return 200, {"data": page, "cursor": cursor}

    def _one(
        self, method: str, sid: str, rest: list[str], q: dict[str, str], body: JsonObj | None
    ) -> tuple[int, Any]:
        if not sid.startswith("ses_"):
            return 400, {"_tag": "InvalidRequestError", "message": "bad id", "field": "sessionID"}
        if sid not in self.sessions:
            return 404, {"_tag": "SessionNotFoundError", "message": f"Session not found: {sid}"}
        if not rest and method == "GET":
            return 200, {"data": self.sessions[sid]}
        if not rest and method == "DELETE":
            for gone in [*self._descendants(sid), sid]:  # V2's delete removes every descendant
                self.sessions.pop(gone, None)
                self.messages.pop(gone, None)
                self.running.discard(gone)
                self.publish("session.deleted", {"sessionID": gone})
            return 204, None
        if rest == ["message"]:
            rows = self.messages[sid] if _order(q) == "asc" else self.messages[sid][::-1]
            return self._page(rows, q)
        if rest == ["diff"]:
            return 200, {"data": []}
        if rest == ["interrupt"] and method == "POST":
            if sid not in self.running:
                return 200, {"interrupted": False}
            self.publish(
                "session.step.failed",
                {
                    "sessionID": sid,
                    "assistantMessageID": "",
                    "error": {"type": "aborted", "message": "Step interrupted"},
                },
            )
            self.idle(sid, "interrupted", reason="user")
            return 200, {"interrupted": True}
        if rest == ["permission"]:
            return 200, {"data": [p for p in self.permissions.values() if p["sessionID"] == sid]}
        if len(rest) == 3 and rest[0] == "permission" and rest[2] == "reply" and method == "POST":
            req = self.permissions.get(rest[1])
            if req is None or req["sessionID"] != sid:
                return 404, {"_tag": "PermissionNotFoundError", "message": f"Permission not found: {rest[1]}"}
            if not isinstance(body, dict) or "decision" not in body:
                return 400, {"_tag": "InvalidRequestError", "message": 'Missing key at ["decision"]'}
            del self.permissions[rest[1]]
            self.replies.append((sid, rest[1], body))
            self.publish(
                "permission.replied",
                {"sessionID": sid, "requestID": rest[1], "reply": body["decision"]},
                durable=False,
            )
            return 204, None
        return 404, None

    def authorised(self, header: str | None) -> bool:
        want = "Basic " + base64.b64encode(f"{USER}:{self.password}".encode()).decode()
        return header == want

    def stream(self) -> queue.Queue[JsonObj | None]:
        q: queue.Queue[JsonObj | None] = queue.Queue()
        self._subs.append(q)
        return q


def _handler(fake: FakeOpenCode2) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes = b"", ctype: str = "application/json", **hdr: str) -> None:
            self.send_response(status)
            if body or status not in (204,):
                self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            for k, v in hdr.items():
                self.send_header(k.replace("_", "-"), v)
            self.end_headers()
            self.wfile.write(body)

        def _any(self) -> None:
            url = urlsplit(self.path)
            fake.requests.append((self.command, url.path))
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not fake.authorised(self.headers.get("authorization")):
                return self._send(401, b"", www_authenticate='Basic realm="Secure Area"')
            if not url.path.startswith("/api/"):  # the web UI swallows every other path
                return self._send(200, HTML, "text/html") if self.command == "GET" else self._send(405)
            q = {k: v[-1] for k, v in parse_qs(url.query).items()}
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                return self._send(
                    400, json.dumps({"_tag": "InvalidRequestError", "message": "bad JSON"}).encode()
                )
            status, out = fake.route(self.command, url.path, q, body)
            if out == "SSE":
                return self._sse()
            self._send(status, b"" if out is None else json.dumps(out).encode())

        def _sse(self) -> None:
            sub = fake.stream()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            self.close_connection = True
            try:
                self.wfile.write(b'data: {"id":"evt_000000000000","type":"server.connected","data":{}}\n\n')
                self.wfile.flush()
                while True:
                    try:
                        frame = sub.get(timeout=0.5)
                    except queue.Empty:
                        self.wfile.write(b": heartbeat\n\n")
                        self.wfile.flush()
                        continue
                    if frame is None:
                        return
                    self.wfile.write(b"data: " + json.dumps(frame).encode() + b"\n\n")
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return
            finally:
                fake._subs.remove(sub)

        do_GET = do_POST = do_DELETE = do_PATCH = do_PUT = _any

    return Handler


@contextmanager
def serve(fake: FakeOpenCode2 | None = None) -> Iterator[FakeOpenCode2]:
    """Run ``fake`` on a free loopback port until the block ends."""
    fake = fake or FakeOpenCode2()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    httpd.daemon_threads = True
    fake.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        for q in list(fake._subs):
            q.put(None)
        httpd.shutdown()
        httpd.server_close()
        thread.join()
