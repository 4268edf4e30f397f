"""The HTTP side of the fake OpenCode 2 server: its routes (a mixin of ``FakeOpenCode2``, in
``fake_server``) and the request handler, with Basic auth on every path, the web UI's HTML on
the root paths, ``{data, cursor}`` pages and the ``/api/event`` stream."""

from __future__ import annotations

import base64
import json
import queue
import socket
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from archiver.shape import RawJson as JsonObj

# ASSUMED: /api/info answers its object bare ({version, pid, urls, paths}), as the contract's
# route table and the generated client show it, not inside {data} (the contract's general rule).
ASSUMED_INFO_BARE = True
USER = "opencode"
HTML = b"<!doctype html><html><head><title>OpenCode</title></head><body></body></html>"


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


class V2Routes:
    """The /api routes over the fake's state (``sessions``, ``messages``, ``permissions``, …)."""

    sessions: dict[str, JsonObj]
    messages: dict[str, list[JsonObj]]
    permissions: dict[str, JsonObj]
    forms: dict[str, JsonObj]
    running: set[str]
    replies: list[tuple[str, str, JsonObj]]
    password: str
    version: str
    url: str
    _subs: list[queue.Queue[JsonObj | None]]
    _lock: Any

    def publish(self, type_: str, data: JsonObj, *, durable: bool = True) -> None:
        raise NotImplementedError

    def idle(
        self, sid: str, outcome: str = "succeeded", error: JsonObj | None = None, reason: str = "user"
    ) -> JsonObj:
        raise NotImplementedError

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
            if (
                parts[:2] == ["experimental", "session"]
                and parts[3:] == ["export"]
                and parts[2] in self.sessions
            ):
                # one session, children not included
                return 200, {"data": {"info": self.sessions[parts[2]], "messages": self.messages[parts[2]]}}
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
        if rest == ["form"]:
            return 200, {"data": [f for f in self.forms.values() if f["sessionID"] == sid]}
        if len(rest) == 2 and rest[0] == "form" and method == "DELETE":
            if self.forms.get(rest[1], {}).get("sessionID") != sid:
                return 404, {"_tag": "FormNotFoundError", "message": f"Form not found: {rest[1]}"}
            del self.forms[rest[1]]
            self.replies.append((sid, rest[1], {"cancelled": q.get("message", "")}))
            self.publish("form.cancelled", {"id": rest[1], "sessionID": sid}, durable=False)
            return 204, None
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


def handler(fake: Any) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            # headers and body go out in two writes: without this, Nagle's algorithm and
            # delayed ACKs add about 40 ms to every answer
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

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
