"""OpenHands' StuckDetector rules over octel's message model (an evaluation baseline only).

OpenHands sees a history of actions and observations. Here every tool call is an action
(tool, input and, on the first call of a message, the message's text as its `thought`, which
OpenHands compares too) followed by its observation; an assistant message without a tool call
is an agent message action (empty when it said nothing); a compaction or a context-overflow
error is a condensation. Observations compare as OpenHands compares them: a failed call is an
error observation (compared by its text), a bash result by command and exit code only, any
other result by its output. The five rules, checked after every message as OpenHands checks
after every step:

1. the last four actions equal and the last four observations equal;
2. the last three actions equal and the last three observations all errors;
3. the last three agent messages equal with no observation between them (monologue);
4. over the last six actions and observations, every other one equal (A B A B A B);
5. the last ten condensations with nothing else between two of them.

Left out: the IPython syntax-error variant of rule 2 (no IPython cell here) and the interactive
mode's cut at the last user message (runs are judged headless, as OpenHands does by default).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from detectors.baselines.base import Fire
from detectors.model import Compaction, Message, Text, ToolCall

__all__ = ["OpenHandsStuck"]


@dataclass(frozen=True, slots=True)
class _Event:
    kind: str  # "action" | "message" | "observation" | "error" | "condensation"
    key: tuple[object, ...]  # what OpenHands' equality compares
    index: int  # the message it came from

    @property
    def is_action(self) -> bool:
        return self.kind in ("action", "message")

    @property
    def is_observation(self) -> bool:
        return self.kind in ("observation", "error", "condensation")


def _observation(call: ToolCall, index: int) -> _Event:
    if call.status == "error":
        return _Event("error", ("error", call.error), index)
    if call.tool == "bash":  # CmdOutputObservation: command and exit code, not the output
        return _Event("observation", ("cmd", call.canonical_input, call.exit_code or 0), index)
    return _Event("observation", ("obs", call.tool, call.output), index)


class OpenHandsStuck:
    def __init__(self) -> None:
        self.fired: Fire | None = None
        self._history: list[_Event] = []
        self._messages: list[int] = []  # positions of agent message actions in the history
        self._condensations: list[int] = []
        self._seen = 0

    def feed(self, message: Message) -> None:
        self._seen += 1
        if self.fired is not None:
            return
        if message.role == "assistant":
            self._events(message)
        if message.error == "ContextOverflowError" or any(isinstance(p, Compaction) for p in message.parts):
            self._condensations.append(len(self._history))
            self._history.append(_Event("condensation", ("condensation",), message.index))
        self._check()

    def _events(self, m: Message) -> None:
        text = " ".join(p.text for p in m.parts if isinstance(p, Text) and not p.synthetic)
        calls = [p for p in m.parts if isinstance(p, ToolCall)]
        if not calls:
            if m.error == "ContextOverflowError":
                return  # no answer came: only the condensation
            self._messages.append(len(self._history))
            self._history.append(_Event("message", ("message", text), m.index))
            return
        for k, call in enumerate(calls):
            thought = text if k == 0 else ""
            self._history.append(
                _Event("action", ("action", call.tool, call.canonical_input, thought), m.index)
            )
            self._history.append(_observation(call, m.index))

    def _last(self, n: int) -> tuple[list[_Event], list[_Event]]:
        actions: list[_Event] = []
        observations: list[_Event] = []
        for e in reversed(self._history):
            if e.is_action and len(actions) < n:
                actions.append(e)
            elif e.is_observation and len(observations) < n:
                observations.append(e)
            if len(actions) == n and len(observations) == n:
                break
        return actions, observations

    def _fire(self, rule: str, pattern: str, start: int) -> None:
        self.fired = Fire(rule, pattern, self._seen, start)

    def _check(self) -> None:
        h = self._history
        if len(h) < 3:
            return
        acts, obs = self._last(4)
        same = len(acts) == 4 and len(obs) == 4 and all(a.key == acts[0].key for a in acts)
        if same and all(o.key == obs[0].key for o in obs):
            return self._fire("repeating_action_observation", "doom_loop", acts[-1].index)
        same = len(acts) >= 3 and len(obs) >= 3 and all(a.key == acts[0].key for a in acts[:3])
        if same and all(o.kind == "error" for o in obs[:3]):
            return self._fire("repeating_action_error", "doom_loop", acts[2].index)
        if len(self._messages) >= 3:
            first, *_, last = self._messages[-3:]
            said = [h[i].key for i in self._messages[-3:]]
            if all(s == said[0] for s in said) and not any(e.is_observation for e in h[first + 1 : last]):
                return self._fire("monologue", "monologue", h[first].index)
        if len(h) >= 6:
            acts, obs = self._last(6)
            if len(acts) == 6 and len(obs) == 6 and _every_other(acts) and _every_other(obs):
                return self._fire("repeating_action_observation_pattern", "doom_loop", acts[-1].index)
        if len(self._condensations) >= 10:
            last10 = self._condensations[-10:]
            for a, b in itertools.pairwise(last10):
                if all(e.kind == "condensation" for e in h[a + 1 : b]):
                    return self._fire("context_window_error", "compaction_loop", h[a].index)
        return None


def _every_other(events: list[_Event]) -> bool:
    k = [e.key for e in events]
    return k[0] == k[2] == k[4] and k[1] == k[3] == k[5]
