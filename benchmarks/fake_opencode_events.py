"""A stand-in OpenCode server for the live benchmarks, run as its own process (so its CPU is not
the watcher's): `/event` streams SESSIONS busy sessions emitting RATE events a second each,
every event stamped with the time it was sent; `/session/status`, `/session` and `/permission`
answer as OpenCode does. With `--ask-after S` a permission ask on one session is sent S seconds
after the stream starts (and listed by `/permission` from then on); `--no-events` answers
`/event` with 404, so a watcher falls back to polling.

    python benchmarks/fake_opencode_events.py PORT [--sessions 200] [--rate 50] [--ask-after 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

ASK_SESSION = "ses_bench000000"


def _sid(i: int) -> str:
    return f"ses_bench{i:06d}"


def _ask_id(t: float) -> str:
    return "per_" + format((int(t * 1000) % (1 << 36)) << 12 | 1, "012x") + "bench"


class Server:
    def __init__(self, sessions: int, rate: float, ask_after: float | None, events: bool) -> None:
        self.sessions, self.rate, self.ask_after, self.events = sessions, rate, ask_after, events
        self.started = time.time()
        self.ask: dict[str, object] | None = None

    def _maybe_ask(self) -> None:
        if self.ask is None and self.ask_after is not None and time.time() - self.started >= self.ask_after:
            t = time.time()
            self.ask = {
                "id": _ask_id(t),
                "sessionID": ASK_SESSION,
                "permission": "bash",
                "patterns": ["git push *"],
                "t_emit": t,
            }

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                path = line.decode().split(" ")[1]
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
                if path.startswith("/event"):
                    await self._stream(writer)
                    return
                self._maybe_ask()
                body = self._answer(path)
                code = "200 OK" if body is not None else "404 Not Found"
                data = json.dumps(body if body is not None else {"error": "not found"}).encode()
                writer.write(
                    f"HTTP/1.1 {code}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return

    def _answer(self, path: str) -> object | None:
        if path.startswith("/session/status"):
            return {_sid(i): {"type": "busy"} for i in range(self.sessions)}
        if path == "/session" or path.startswith("/session?"):
            return [
                {"id": _sid(i), "title": f"bench {i}", "time": {"created": 1, "updated": 1}}
                for i in range(self.sessions)
            ]
        if path.startswith("/permission"):
            return [self.ask] if self.ask else []
        if path.startswith("/session/ses_"):
            sid = path.split("/")[2].split("?")[0]
            return {"id": sid, "title": sid, "time": {"created": 1, "updated": 1}}
        if path.startswith("/global/health"):
            return {"healthy": True, "version": "1.18.33"}
        return None

    async def _stream(self, writer: asyncio.StreamWriter) -> None:
        if not self.events:
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}")
            await writer.drain()
            return
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n")
        self.started = time.time()
        n = 0
        for i in range(self.sessions):
            ev = {"type": "session.status", "properties": {"sessionID": _sid(i), "status": {"type": "busy"}}}
            writer.write(b"data: " + json.dumps(ev).encode() + b"\n\n")
        tick = 0.01
        per_tick = self.sessions * self.rate * tick
        carry = 0.0
        asked = False
        next_t = time.time()
        while True:
            carry += per_tick
            now = time.time()
            lines = []
            while carry >= 1:
                carry -= 1
                i = n % self.sessions
                pid = f"prt_{i}_{n // self.sessions % 50}"
                part = {
                    "id": pid,
                    "messageID": f"msg_{i}",
                    "sessionID": _sid(i),
                    "type": "text",
                    "text": "x" * 60,
                }
                props = {"sessionID": _sid(i), "part": part, "t_emit": now}
                lines.append(
                    b"data: " + json.dumps({"type": "message.part.updated", "properties": props}).encode()
                )
                n += 1
            self._maybe_ask()
            if self.ask is not None and not asked:
                asked = True
                ev = {"type": "permission.asked", "properties": self.ask}
                lines.append(b"data: " + json.dumps(ev).encode())
            writer.write(b"\n\n".join(lines) + b"\n\n" if lines else b"")
            await writer.drain()
            next_t += tick
            await asyncio.sleep(max(0.0, next_t - time.time()))


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--rate", type=float, default=50.0)
    ap.add_argument("--ask-after", type=float, default=None)
    ap.add_argument("--no-events", action="store_true")
    a = ap.parse_args()
    srv = Server(a.sessions, a.rate, a.ask_after, not a.no_events)
    server = await asyncio.start_server(srv.handle, "127.0.0.1", a.port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
