"""Tiny builder of normalised streams for detector tests."""

from __future__ import annotations

import json
from typing import Any

from detectors.model import (
    Compaction,
    Message,
    Part,
    Patch,
    Reasoning,
    StepFinish,
    Text,
    ToolCall,
    ToolStatus,
)


def call(
    tool: str,
    inp: dict[str, Any] | None = None,
    *,
    status: ToolStatus = "completed",
    output: str = "ok",
    error: str = "",
    exit: int | None = None,
) -> ToolCall:
    return ToolCall(
        part_id="",
        tool=tool,
        canonical_input=json.dumps(inp or {}, sort_keys=True, separators=(",", ":")),
        status=status,
        output=output,
        error=error,
        exit_code=exit,
    )


def bash(cmd: str, *, exit: int = 0, output: str = "ok") -> ToolCall:
    return call("bash", {"command": cmd}, exit=exit, output=output)


def read(path: str, *, error: str = "") -> ToolCall:
    return call("read", {"filePath": path}, status="error" if error else "completed", error=error)


def edit(path: str, n: int = 0) -> ToolCall:
    return call("edit", {"filePath": path, "oldString": f"a{n}", "newString": f"b{n}"})


class Stream:
    """Messages appended in order, with ids and part ids filled in."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def _pid(self, k: int) -> str:
        return f"prt_{len(self.messages):04d}_{k:02d}"

    def user(self, text: str = "go") -> Stream:
        i = len(self.messages)
        self.messages.append(Message(f"msg_{i:04d}", "user", i, (Text(self._pid(0), text),)))
        return self

    def step(
        self,
        *calls: ToolCall,
        text: str | None = None,
        reasoning: str | None = None,
        error: str | None = None,
        completed: bool = True,
        finish: str | None = None,
        output_tokens: int = 10,
        patch: tuple[str, ...] = (),
        compaction: bool = False,
    ) -> Stream:
        i = len(self.messages)
        parts: list[Part] = []
        if reasoning is not None:
            parts.append(Reasoning(self._pid(len(parts)), reasoning))
        if text is not None:
            parts.append(Text(self._pid(len(parts)), text))
        for c in calls:
            parts.append(
                ToolCall(
                    self._pid(len(parts)),
                    c.tool,
                    c.canonical_input,
                    c.status,
                    c.output,
                    c.error,
                    c.exit_code,
                    f"call_{i}_{len(parts)}",
                    c.interrupted,
                    c.timed_out,
                )
            )
        if compaction:
            parts.append(Compaction(self._pid(len(parts)), True, True))
        if completed and error is None:
            fin = finish or ("tool-calls" if calls else "stop")
            parts.append(StepFinish(self._pid(len(parts)), fin, output_tokens))
        if patch:
            parts.append(Patch(self._pid(len(parts)), patch))
        self.messages.append(
            Message(
                f"msg_{i:04d}",
                "assistant",
                i,
                tuple(parts),
                finish=None if error or not completed else (finish or ("tool-calls" if calls else "stop")),
                error=error,
                output_tokens=0 if error else output_tokens,
                completed=completed,
            )
        )
        return self

    def repeat(self, n: int, *calls: ToolCall, **kw: Any) -> Stream:
        for _ in range(n):
            self.step(*calls, **kw)
        return self
