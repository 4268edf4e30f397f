"""A session written step by step in the shape OpenCode stores it, for the detector corpus
and benchmarks: classic `{info, parts}` messages, recorder status polls and SSE events, all on
a fixed clock so that the same calls always give the same bytes."""

from __future__ import annotations

from typing import Any

__all__ = [
    "DENIED",
    "FILES",
    "T0",
    "Outcome",
    "Session",
    "bash",
    "edit",
    "finish_idle",
    "read",
    "run_busy",
]

T0 = 1_800_000_000_000  # ms; a fixed clock keeps the output stable

Outcome = tuple[Any, ...]


class Session:
    """A session written step by step, as OpenCode would store it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sid = f"ses_{name}"
        self.messages: list[dict[str, Any]] = []
        self.status: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self._n = 0
        self._clock = T0
        self._last_user = ""
        self.onset = -1  # index of the message where the stuck pattern begins (`begin`)

    def begin(self) -> None:
        """The stuck pattern begins with the next message."""
        self.onset = len(self.messages)

    def _id(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}_{self.name[:12]}{self._n:06d}"

    def _tick(self, ms: int = 500) -> int:
        self._clock += ms
        return self._clock

    def _part(self, mid: str, kind: str, **fields: Any) -> dict[str, Any]:
        return {"id": self._id("prt"), "sessionID": self.sid, "messageID": mid, "type": kind, **fields}

    def user(self, text: str, *, synthetic: bool = False, compaction: bool = False) -> None:
        mid = self._id("msg")
        self._last_user = mid
        info = {
            "id": mid,
            "sessionID": self.sid,
            "role": "user",
            "time": {"created": self._tick()},
            "agent": "build",
            "summary": {"diffs": []},
        }
        parts = (
            [self._part(mid, "compaction", auto=True, overflow=True)]
            if compaction
            else [self._part(mid, "text", text=text, **({"synthetic": True} if synthetic else {}))]
        )
        self.messages.append({"info": info, "parts": parts})

    def step(
        self,
        *,
        text: str | None = None,
        reasoning: str | None = None,
        tools: list[tuple[str, dict[str, Any], Outcome]] = (),  # type: ignore[assignment]
        finish: str | None = None,
        error: tuple[str, str] | None = None,
        output_tokens: int = 12,
        completed: bool = True,
        patch: list[str] | None = None,
        bare: bool = False,
        summary: bool = False,
    ) -> None:
        """One assistant step. A tool outcome is ("ok", out) | ("exit", code, out) |
        ("error", msg) | ("running",) | ("pending",) | ("aborted",)."""
        mid = self._id("msg")
        created = self._tick()
        parts: list[dict[str, Any]] = [] if bare else [self._part(mid, "step-start", snapshot="s")]
        if reasoning is not None:
            parts.append(self._part(mid, "reasoning", text=reasoning))
        if text is not None:
            parts.append(self._part(mid, "text", text=text))
        for tool, inp, outcome in tools:
            parts.append(self._tool(mid, tool, inp, outcome))
        if finish is None:
            finish = "tool-calls" if tools else "stop"
        tokens = {"input": 900, "output": output_tokens, "reasoning": 0, "cache": {"read": 0, "write": 0}}
        if completed and error is None and not bare:
            parts.append(self._part(mid, "step-finish", reason=finish, cost=0.001, tokens=tokens))
        if patch:
            parts.append(self._part(mid, "patch", hash="h", files=patch))
        info: dict[str, Any] = {
            "id": mid,
            "sessionID": self.sid,
            "role": "assistant",
            "parentID": self._last_user,
            "modelID": "m",
            "providerID": "p",
            "mode": "build",
            "agent": "build",
            "cost": 0.001,
            "tokens": tokens,
            "time": {"created": created},
        }
        if summary:
            info["summary"] = True
        if completed:
            info["time"]["completed"] = self._tick(200)
            if error is None:
                info["finish"] = finish
        if error is not None:
            info["error"] = {"name": error[0], "data": {"message": error[1]}}
            info["tokens"] = {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
        self.messages.append({"info": info, "parts": parts})

    def _tool(self, mid: str, tool: str, inp: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
        kind = outcome[0]
        t = {"start": self._tick(50), "end": self._tick(50)}
        state: dict[str, Any]
        if kind == "ok":
            state = {
                "status": "completed",
                "input": inp,
                "output": outcome[1],
                "title": tool,
                "metadata": {"exit": 0} if tool == "bash" else {},
                "time": t,
            }
        elif kind == "exit":
            state = {
                "status": "completed",
                "input": inp,
                "output": outcome[2],
                "title": tool,
                "metadata": {"exit": outcome[1], "output": outcome[2]},
                "time": t,
            }
        elif kind == "error":
            state = {"status": "error", "input": inp, "error": outcome[1], "time": t}
        elif kind == "aborted":
            state = {
                "status": "error",
                "input": inp,
                "error": "Tool execution aborted",
                "metadata": {"interrupted": True},
                "time": t,
            }
        else:  # running / pending
            state = {"status": kind, "input": inp, "time": {"start": t["start"]}}
        return self._part(mid, "tool", callID=f"call_{self._n}", tool=tool, state=state)

    def sample(
        self, kind: str | None, *, attempt: int = 0, pending: tuple[str, ...] = (), every_ms: int = 250
    ) -> None:
        """One status poll; `None` means the session was absent (idle)."""
        t = self._tick(every_ms)
        status: dict[str, Any] = {}
        if kind == "retry":
            status[self.sid] = {
                "type": "retry",
                "attempt": attempt,
                "message": "Provider is overloaded",
                "next": t + 2000,
            }
        elif kind is not None:
            status[self.sid] = {"type": kind}
        self.status.append(
            {"t": round((t - T0) / 1000, 3), "status": status, "pending_permissions": list(pending)}
        )

    def event(self, kind: str, **props: Any) -> None:
        ev = {"id": self._id("evt"), "type": kind, "properties": {"sessionID": self.sid, **props}}
        self.events.append({"received": self._tick(10), "event": ev})

    def ask(self, permission: str, patterns: list[str], call: str | None = None) -> str:
        rid = self._id("per")
        props: dict[str, Any] = {
            "id": rid,
            "permission": permission,
            "patterns": patterns,
            "metadata": {},
            "always": ["*"],
        }
        if call:
            props["tool"] = {"messageID": self.messages[-1]["info"]["id"], "callID": call}
        self.event("permission.asked", **props)
        return rid

    def reply(self, rid: str, reply: str) -> None:
        self.event("permission.replied", requestID=rid, reply=reply)

    def doc(self, description: str) -> dict[str, Any]:
        return {
            "scenario": self.name,
            "description": description,
            "root_id": self.sid,
            "messages": {self.sid: self.messages},
            "status_samples": self.status,
            "events": self.events,
        }


# --- small vocabulary of calls ------------------------------------------------------------


def bash(cmd: str) -> dict[str, Any]:
    return {"command": cmd}


def read(path: str) -> dict[str, Any]:
    return {"filePath": f"/work/app/{path}"}


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"filePath": f"/work/app/{path}", "oldString": old, "newString": new}


def run_busy(s: Session, n: int) -> None:
    for _ in range(n):
        s.sample("busy")


def finish_idle(s: Session, n: int = 3) -> None:
    for _ in range(n):
        s.sample(None)


DENIED = "The user has specified a rule which prevents you from using this specific tool call."
FILES = [f"src/mod_{i:02d}.py" for i in range(60)]
