"""OpenCode's own doom-loop guard over octel's message model (an evaluation baseline only).

OpenCode's session processor, as each tool call arrives, takes the last three parts of the
assistant message being written; when all three are calls of the same tool, none pending,
with the same input (compared as JSON text), it asks the `doom_loop` permission. A message is
one model step, so the guard sees repetition only inside one answer: three identical calls in
a row in one step. Here it fires on that, as the ask would be raised. Inputs compare in octel's
canonical form (sorted keys), so key-order variants count as the same call: a little more
generous than OpenCode, which compares the text as the model wrote it.
"""

from __future__ import annotations

from detectors.baselines.base import Fire
from detectors.model import Message, Part, ToolCall

__all__ = ["OpenCodeDoomGuard"]

_THRESHOLD = 3


class OpenCodeDoomGuard:
    def __init__(self) -> None:
        self.fired: Fire | None = None
        self._seen = 0

    def feed(self, message: Message) -> None:
        self._seen += 1
        if self.fired is not None or message.role != "assistant":
            return
        parts: list[Part] = []
        for p in message.parts:
            parts.append(p)
            if isinstance(p, ToolCall) and _same_three(parts[-_THRESHOLD:], p):
                self.fired = Fire("doom_loop_ask", "doom_loop", self._seen, message.index)
                return


def _same_three(last: list[Part], call: ToolCall) -> bool:
    return len(last) == _THRESHOLD and all(
        isinstance(p, ToolCall)
        and p.tool == call.tool
        and p.status != "pending"
        and p.canonical_input == call.canonical_input
        for p in last
    )
