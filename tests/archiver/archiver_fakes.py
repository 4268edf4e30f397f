"""An in-memory OpenCode server as an httpx MockTransport handler, with fault injection."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

Fault = Callable[[httpx.Request], httpx.Response | None]


def session(
    sid: str,
    parent: str | None = None,
    *,
    title: str = "t",
    agent: str = "build",
    cost: float = 0.0,
    tokens: int = 0,
) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": sid,
        "title": title,
        "agent": agent,
        "version": "1.18.33",
        "directory": "/p",
        "cost": cost,
        "tokens": {"input": tokens, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
        "time": {"created": 1000, "updated": 2000},
    }
    if parent:
        rec["parentID"] = parent
    return rec


def message(sid: str, n: int, role: str = "assistant", text: str = "hello") -> dict[str, Any]:
    info: dict[str, Any] = {
        "id": f"msg_{n:06d}",
        "sessionID": sid,
        "role": role,
        "time": {"created": 1000 + n, "completed": 1001 + n},
    }
    if role == "assistant":
        info.update(
            cost=0.001,
            finish="stop",
            modelID="m",
            providerID="p",
            tokens={"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 1, "write": 0}},
        )
    return {"info": info, "parts": [{"id": f"prt_{n:06d}", "type": "text", "text": text}]}


@dataclass
class FakeOpenCode:
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    faults: dict[str, list[Fault]] = field(default_factory=dict)
    api_messages_empty: bool = True
    classic: bool = True
    log: list[str] = field(default_factory=list)

    def add(self, rec: dict[str, Any], n_messages: int = 2) -> None:
        sid = rec["id"]
        self.sessions[sid] = rec
        self.children.setdefault(sid, [])
        if rec.get("parentID"):
            self.children.setdefault(rec["parentID"], []).append(sid)
        self.messages[sid] = [
            message(sid, i, "user" if i % 2 == 0 else "assistant") for i in range(n_messages)
        ]

    def fault(self, path: str, *faults: Fault) -> None:
        self.faults.setdefault(path, []).extend(faults)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.log.append(path)
        queue = self.faults.get(path)
        if queue:
            resp = queue.pop(0)(request)
            if resp is not None:
                return resp
        return self._route(request, path)

    def _nf(self, sid: str) -> httpx.Response:
        return httpx.Response(
            404, json={"name": "NotFoundError", "data": {"message": f"Session not found: {sid}"}}
        )

    def _route(self, request: httpx.Request, path: str) -> httpx.Response:
        parts = path.strip("/").split("/")
        q = request.url.params
        if path == "/global/health":
            return httpx.Response(200, json={"healthy": True, "version": "1.18.33"})
        if parts[0] == "api":
            return self._api(parts[1:], q)
        if not self.classic or parts[0] != "session":
            return httpx.Response(404, text="Not Found")
        if len(parts) == 1:
            return httpx.Response(200, json=list(self.sessions.values()))
        sid = parts[1]
        if sid not in self.sessions:
            return self._nf(sid)
        if len(parts) == 2:
            return httpx.Response(200, json=self.sessions[sid])
        what = parts[2]
        if what == "children":
            return httpx.Response(
                200,
                json=[self.sessions.get(c, {"id": c, "parentID": sid}) for c in self.children.get(sid, [])],
            )
        if what in ("diff", "todo"):
            return httpx.Response(200, json=[])
        if what == "message":
            return self._classic_messages(sid, q)
        return httpx.Response(404, text="Not Found")

    def _classic_messages(self, sid: str, q: httpx.QueryParams) -> httpx.Response:
        msgs = self.messages.get(sid, [])
        if "limit" not in q:
            return httpx.Response(200, json=msgs)
        end = len(msgs)
        if "before" in q:
            end = int(base64.b64decode(q["before"]).decode())
        limit = int(q["limit"])
        start = max(0, end - limit)
        headers = {}
        if start > 0:
            headers["X-Next-Cursor"] = base64.b64encode(str(start).encode()).decode()
        return httpx.Response(200, json=msgs[start:end], headers=headers)

    def _api(self, parts: list[str], q: httpx.QueryParams) -> httpx.Response:
        if parts == ["session"]:
            data = []
            for s in self.sessions.values():
                v2 = {k: v for k, v in s.items() if k != "directory"}
                v2["location"] = {"directory": s.get("directory")}
                data.append(v2)
            return httpx.Response(200, json={"data": data, "cursor": {}})
        sid = parts[1]
        if sid not in self.sessions:
            return self._nf(sid)
        if len(parts) == 2:
            return httpx.Response(200, json={"data": self.sessions[sid]})
        if parts[2] == "message":
            data = [] if self.api_messages_empty else self.messages.get(sid, [])
            return httpx.Response(200, json={"data": data, "cursor": {}})
        return httpx.Response(404, text="Not Found")


def recording_deletes(fake: FakeOpenCode) -> list[str]:
    """Answer every DELETE of ``fake`` with success and return the list its paths go into."""
    deleted: list[str] = []
    orig = fake.handle

    def handle(req: httpx.Request) -> httpx.Response:
        if req.method == "DELETE":
            deleted.append(req.url.path)
            return httpx.Response(200, json=True)
        return orig(req)

    fake.handle = handle  # type: ignore[method-assign]
    return deleted


def status(code: int, body: Any = None) -> Fault:
    return lambda req: httpx.Response(code, json=body if body is not None else {"error": code})


def raw(code: int, content: bytes, ctype: str = "application/json") -> Fault:
    return lambda req: httpx.Response(code, content=content, headers={"content-type": ctype})


def raises(exc: type[Exception]) -> Fault:
    def _f(req: httpx.Request) -> httpx.Response:
        raise exc("injected", request=req)  # type: ignore[call-arg]

    return _f


def tree(depths: list[int], n_messages: int = 2) -> FakeOpenCode:
    """A chain-ish tree: depths[i] children at level i (each child hangs under the first node)."""
    fake = FakeOpenCode()
    fake.add(session("ses_root", cost=0.5, tokens=10), n_messages)
    level = ["ses_root"]
    for d, width in enumerate(depths, start=1):
        nxt = []
        for i in range(width):
            sid = f"ses_d{d}_{i}"
            fake.add(
                session(
                    sid, level[0], title=f"job {i} (@general subagent)", agent="general", cost=0.1, tokens=5
                ),
                n_messages,
            )
            nxt.append(sid)
        level = nxt
    return fake


def tree_from_fixture(fx: dict[str, Any]) -> Any:
    """A TreeSnapshot as the walk would return it for a captured run."""
    from archiver.walk import SessionSnapshot, TreeSnapshot

    by_id = {s["id"]: s for s in fx["sessions"] if isinstance(s, dict) and "id" in s}
    depth = {fx["root_id"]: 0}
    order = [fx["root_id"]]
    for sid in order:
        for c in fx["children"].get(sid, []):
            depth[c] = depth[sid] + 1
            order.append(c)
    snaps = [
        SessionSnapshot(
            sid,
            by_id[sid].get("parentID"),
            depth[sid],
            session=by_id[sid],
            messages=fx["messages"][sid],
            messages_family="classic",
            diff=[],
            todo=[],
        )
        for sid in order
        if sid in by_id
    ]
    return TreeSnapshot(fx["root_id"], "http://127.0.0.1:4096", fx["opencode_version"], snaps, [])


def recorded_status(fx: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for sample in fx.get("status_samples", []):
        for sid, st in sample["status"].items():
            out.setdefault(sid, []).append({"t": sample["t"], **st})
    return out


def recorded_permissions(fx: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for ev in fx.get("events", []):
        e = ev["event"]
        if str(e.get("type", "")).startswith("permission."):
            out.setdefault(e["properties"].get("sessionID", ""), []).append(ev)
    return out


class LoopbackServer:
    """Serves a FakeOpenCode over real HTTP on 127.0.0.1 (optionally with per-request latency)."""

    def __init__(self, fake: FakeOpenCode, latency: float = 0.0, cache: bool = False) -> None:
        import socket
        import threading
        import time
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        outer = self
        self.fake, self.latency = fake, latency
        # GET answers kept once built, so a benchmark measures the client, not this server
        answers: dict[str, tuple[int, list[tuple[str, str]], bytes]] = {}

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                # headers and body go out in two writes: without this, Nagle's algorithm and
                # delayed ACKs add about 40 ms to every answer
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _serve(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                if outer.latency:
                    time.sleep(outer.latency)
                hit = answers.get(self.path) if cache and self.command == "GET" else None
                if hit is None:
                    req = httpx.Request(self.command, f"http://127.0.0.1{self.path}", content=body)
                    resp = outer.fake.handle(req)
                    hit = (
                        resp.status_code,
                        [
                            (k, v)
                            for k, v in resp.headers.items()
                            if k.lower() not in ("content-length", "transfer-encoding")
                        ],
                        resp.read(),
                    )
                    if cache and self.command == "GET":
                        answers[self.path] = hit
                code, headers, data = hit
                self.send_response(code)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
