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

import itertools
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer

from fake_http import ASSUMED_INFO_BARE, V2Routes, handler

from archiver.shape import RawJson as JsonObj

__all__ = ["ASSUMED_INFO_BARE", "FakeOpenCode2", "serve"]

VERSION = "2.1.2"
_SES_TOP = 10**12  # session ids sort descending: newer sessions have smaller ids


def _zero_tokens() -> JsonObj:
    return {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}


@dataclass
class FakeOpenCode2(V2Routes):
    password: str = "fake-oc2-password"
    version: str = VERSION
    url: str = ""
    sessions: dict[str, JsonObj] = field(default_factory=dict)
    messages: dict[str, list[JsonObj]] = field(default_factory=dict)
    permissions: dict[str, JsonObj] = field(default_factory=dict)
    forms: dict[str, JsonObj] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)
    requests: list[tuple[str, str]] = field(default_factory=list)
    replies: list[tuple[str, str, JsonObj]] = field(default_factory=list)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _subs: list[queue.Queue[JsonObj | None]] = field(default_factory=list)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    # ---- ids, events -------------------------------------------------------------------
    def _n(self) -> int:
        return next(self._ids)

    def publish(
        self, type_: str, data: JsonObj, *, durable: bool = True, created: int | None = None, ident: str = ""
    ) -> None:
        n = self._n()
        frame: JsonObj = {
            "id": ident or f"evt_{n:012d}",
            "created": created if created is not None else int(time.time() * 1000),
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
        # ASSUMED: the user message keeps its inbox item's id (the contract: a supplied id is kept)
        item = {"type": "user", "payload": {"text": text}, "delivery": "steer"}
        self.publish("session.inbox.enqueued", {"sessionID": sid, "inboxID": msg["id"], "item": item})
        self.running.add(sid)
        self.publish("session.execution.started", {"sessionID": sid})
        # the stored message dates from its delivery, as a recorded 2.0.15 stream shows
        delivered = {"sessionID": sid, "inboxID": msg["id"]}
        self.publish("session.inbox.delivered", delivered, created=msg["time"]["created"])
        return msg

    def _content_events(self, sid: str, mid: str, content: list[JsonObj]) -> None:
        """What the stream says of each content item of a step, as a real server streams it."""
        base = {"sessionID": sid, "assistantMessageID": mid}
        for ordinal, item in enumerate(content):
            if item["type"] in ("text", "reasoning"):
                kind = item["type"]
                self.publish(f"session.{kind}.started", {**base, "ordinal": ordinal})
                self.publish(
                    f"session.{kind}.delta",
                    {**base, "ordinal": ordinal, "delta": item["text"]},
                    durable=False,
                )
                self.publish(f"session.{kind}.ended", {**base, "ordinal": ordinal, "text": item["text"]})
            elif item["type"] == "tool":
                call, state = {**base, "id": item["id"]}, item["state"]
                t = item.get("time", {})  # the stream's times are the stored call's
                self.publish(
                    "session.tool.input.started", {**call, "name": item["name"]}, created=t.get("created")
                )
                self.publish("session.tool.called", {**call, "input": state["input"], "executed": True})
                meta = {"metadata": state["metadata"]} if "metadata" in state else {}
                if state["status"] == "error":
                    self.publish(
                        "session.tool.failed",
                        {**call, "error": state["error"], **meta, "executed": True},
                        created=t.get("completed"),
                    )
                else:
                    out = {"content": state.get("content", []), **meta, "executed": True}
                    self.publish("session.tool.success", {**call, **out}, created=t.get("completed"))

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
        self._content_events(sid, msg["id"], content)
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
            created=msg["time"]["completed"],  # the step ends when its message says it completed
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
            "time": {"created": (now := int(time.time() * 1000)), "completed": now + 1},
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

    def compaction(self, sid: str, summary: str, *, ended: bool = True) -> JsonObj:
        self.publish("session.compaction.started", {"sessionID": sid, "reason": "auto"})
        if not ended:
            return {}
        self.publish("session.compaction.ended", {"sessionID": sid, "reason": "auto", "text": summary})
        return self._add(
            sid, {"type": "compaction", "status": "completed", "reason": "auto", "summary": summary}
        )

    def form(self, sid: str, title: str = "Which database?") -> str:
        """A question: a form of one field (the contract marks forms [M])."""
        fid = f"frm_{self._n():012d}"
        field_ = {"key": "answer", "type": "string", "title": title}
        self.forms[fid] = {"id": fid, "sessionID": sid, "title": title, "fields": [field_]}
        self.publish("form.created", {"form": self.forms[fid]}, durable=False)
        return fid

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
        # the idle marker is stored under the execution event's id (V2.md §6.2)
        ident = "evt_" + msg["id"].removeprefix("msg_")
        self.publish(
            f"session.execution.{outcome}",
            {"sessionID": sid, **extra},
            ident=ident,
            created=msg["time"]["created"],
        )
        return msg

    def ask(self, sid: str, action: str = "shell", resources: tuple[str, ...] = ("rm -rf build",)) -> str:
        rid = f"per_{self._n():012d}"
        req = {"id": rid, "sessionID": sid, "action": action, "resources": list(resources), "save": ["*"]}
        self.permissions[rid] = req
        self.publish("permission.asked", req, durable=False)
        return rid


@contextmanager
def serve(fake: FakeOpenCode2 | None = None) -> Iterator[FakeOpenCode2]:
    """Run ``fake`` on a free loopback port until the block ends."""
    fake = fake or FakeOpenCode2()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler(fake))
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
