"""Each detector finding said in one sentence a person can check, and its evidence named by
turn and tool: the console, `octel sessions show` and any script read the same words.

Pure: the archive's messages are passed in (`Locator`), nothing is read here. A detector this
module does not know (an add-on) gets a plain sentence from its registered summary.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict, cast

from detectors import REGISTRY
from detectors.findings import FindingDict

__all__ = ["DescribedFinding", "EvidenceLinkDoc", "Locator", "Place", "describe", "describe_all"]


class EvidenceLinkDoc(TypedDict):
    """An id of a finding's evidence, named by turn and tool (``label``: "turn 2 · bash")."""

    id: str
    kind: Literal["part", "message"]
    label: str


class DescribedFinding(FindingDict):
    """A finding with its sentence and its evidence named; a stored one keeps its own keys."""

    sentence: str
    evidence_links: list[EvidenceLinkDoc]
    source: NotRequired[str]  # a stored finding's: archive or live
    detected_at: NotRequired[str | None]


@dataclass(frozen=True, slots=True)
class Place:
    """Where an id sits in the session: message and turn numbers count from 1."""

    message: int
    turn: int | None  # the assistant turn's number; None for a user message
    tool: str | None = None  # the tool of a tool part


class Locator:
    """Message and part ids of one archived session mapped to their message, turn and tool."""

    def __init__(self, messages: Iterable[Any]) -> None:
        self._at: dict[str, Place] = {}
        turn = 0
        for i, m in enumerate(messages):
            if not isinstance(m, Mapping):
                continue
            info = m.get("info") if isinstance(m.get("info"), Mapping) else {}
            assert isinstance(info, Mapping)
            here = None
            if info.get("role") == "assistant":
                turn += 1
                here = turn
            if isinstance(info.get("id"), str):
                self._at[info["id"]] = Place(i + 1, here)
            for p in m.get("parts") or []:
                if not isinstance(p, Mapping):
                    continue
                tool = p.get("tool") if p.get("type") == "tool" else None
                place = Place(i + 1, here, tool if isinstance(tool, str) else None)
                for key in ("id", "callID"):
                    if isinstance(p.get(key), str):
                        self._at.setdefault(p[key], place)

    def place(self, ident: str) -> Place | None:
        return self._at.get(ident)

    def turn_of_message(self, index: int) -> Place | None:
        """The place of the message numbered `index + 1` (a detector's start_index)."""
        return next((p for p in self._at.values() if p.message == index + 1 and p.tool is None), None)


def _times(n: Any) -> str:
    n = int(n) if isinstance(n, int | float) and not isinstance(n, bool) and abs(n) < 1e12 else 0
    if n <= 0:  # the evidence did not say how often
        return "over and over"
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


def _call(signature: str) -> str:
    """`bash {"command": "git status"}` as `git status` (bash): the part a person recognises."""
    tool, _, raw = signature.partition(" ")
    tool = _short(tool, 40) or "a tool"  # evidence is stored data: one line, whatever it holds
    try:
        args = json.loads(raw) if raw else {}
    except ValueError:
        args = raw
    if isinstance(args, Mapping):
        for k in ("command", "filePath", "path", "pattern", "url", "query", "description"):
            if isinstance(args.get(k), str):
                return f"`{_short(args[k])}` ({tool})"
        return f"{tool} with the same input"
    return f"{tool} `{_short(str(args))}`" if args else tool


def _short(s: str, n: int = 80) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _doom(ev: Mapping[str, Any]) -> str:
    given = ev.get("signature")
    sigs = [s for s in given if isinstance(s, str)] if isinstance(given, list) else []
    reps = ev.get("repetitions")
    if ev.get("signal") == "thrash":
        what = _call(sigs[0]) if sigs else "the same tool call"
        return f"{what} failed {_times(reps)} with the same answer, whatever was changed between"
    if len(sigs) <= 1:
        what = _call(sigs[0]) if sigs else "the same tool call"
        s = f"{what} ran {_times(reps)} in a row with the same input"
    else:
        calls = ", ".join(_call(x) for x in sigs[:3])
        s = f"the same {len(sigs)} calls ({calls}) repeated {_times(reps)} in a row"
    if ev.get("same_failure"):
        s += f", failing alike each time ({_short(str(ev['same_failure']), 60)})"
    elif ev.get("polling"):
        s += " (waiting or polling)"
    return s


def _retry(ev: Mapping[str, Any]) -> str:
    sig, n = ev.get("signal"), ev.get("count")
    if sig == "retries":
        why = _short(str(ev.get("message") or ""), 80)
        return f"the provider was retried {_times(ev.get('attempt'))}: {why}"
    if sig == "same_error":
        return f"tool calls failed {_times(n)} with the same error ({_short(str(ev.get('error') or ''), 60)})"
    if sig == "provider_errors":
        return f"the provider answered with an error {_times(n)} ({_short(str(ev.get('error') or ''), 60)})"
    return f"{_times(n).capitalize()} a tool call failed, one after another"


def _permission(ev: Mapping[str, Any]) -> str:
    sig = ev.get("signal")
    if sig == "denials":
        return f"permission was denied {_times(ev.get('count'))}, and the agent kept asking"
    if sig == "hanging_calls":
        return (
            f"{len(ev.get('part_ids') or [])} tool call(s) hung without an answer while the session sat idle"
        )
    given = ev.get("permissions")
    names = [_short(p, 40) for p in given if isinstance(p, str)] if isinstance(given, list) else []
    perms = ", ".join(n for n in names if n) or "a permission"
    waited = ev.get("waited_s")
    # a wait that is no finite number (NaN, infinity in a stored JSON) is left unsaid, not raised
    took = ""
    if isinstance(waited, int | float) and not isinstance(waited, bool) and abs(waited) < 1e12:
        took = f" for {round(waited)} s"
    return f"an ask for {perms} waited{took} with no reply"


_SENTENCES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "doom_loop": _doom,
    "retry_cascade": _retry,
    "permission_deadlock": _permission,
    "monologue": lambda ev: (
        f"the same text was said {_times(ev.get('repeats'))} with nothing done between: "
        f"“{_short(str(ev.get('text') or ''), 60)}”"
    ),
    "compaction_loop": lambda ev: f"the context was compacted {_times(ev.get('compactions'))}",
    "no_progress": lambda ev: (
        f"{ev.get('repeated_calls', '?')} of {ev.get('calls', '?')} tool calls over "
        f"{ev.get('steps', '?')} steps repeated an earlier call, and no file changed"
    ),
    "empty_reasoning": lambda ev: (
        f"{_times(ev.get('empty_turns')).capitalize()} a turn ended with no text and no tool call"
    ),
    "silent_stop": lambda ev: _silent(ev),
}


def _silent(ev: Mapping[str, Any]) -> str:
    if ev.get("signal") == "announced":
        s = f"{_times(ev.get('count')).capitalize()} a turn said what it would do next"
        s += " and ended without doing it"
        if ev.get("nudged"):
            s += f" (a person had to say “proceed” {_times(ev.get('nudged'))})"
        if ev.get("text"):
            s += f": “{_short(str(ev['text']), 60)}”"
        return s
    return (
        "the last turn ended empty"
        + (f" (finish: {ev['finish']})" if ev.get("finish") else "")
        + " and the session went idle"
    )


def _where(f: Mapping[str, Any], loc: Locator | None) -> str:
    start = f.get("start_index")
    if not isinstance(start, int) or start < 0:
        return ""
    place = loc.turn_of_message(start) if loc is not None else None
    if place is not None and place.turn is not None:
        return f", from turn {place.turn} (message {start + 1})"
    return f", from message {start + 1}"


def _label(ident: str, kind: str, loc: Locator | None) -> str:
    p = loc.place(ident) if loc is not None else None
    if p is None:
        return f"{kind} …{ident[-6:]}"
    head = f"turn {p.turn}" if p.turn is not None else f"message {p.message}"
    return f"{head} · {p.tool}" if p.tool else head


# the evidence keys whose ids are linked, parts first (a message a part sits in is not linked again)
_LINKED: tuple[tuple[Literal["part", "message"], str], ...] = (
    ("part", "part_ids"),
    ("message", "message_ids"),
)


def describe(f: Mapping[str, Any], loc: Locator | None, summary: str | None = None) -> DescribedFinding:
    """`f` (a finding as the queries return it) with `sentence` and `evidence_links`
    [{id, kind, label}] added; `label` is "turn 2 · bash" when the archive places the id."""
    ev = f.get("evidence") if isinstance(f.get("evidence"), Mapping) else {}
    assert isinstance(ev, Mapping)
    say = _SENTENCES.get(str(f.get("detector")))
    try:
        text = say(ev) if say else (summary or str(f.get("detector")))
    except (TypeError, ValueError, AttributeError):  # evidence of an older shape
        text = summary or str(f.get("detector"))
    text = " ".join(text.split())  # one line, whatever stored evidence a sentence quotes
    text = text[:1].upper() + text[1:] + _where(f, loc) + "."
    links: list[EvidenceLinkDoc] = []
    shown: set[int] = set()  # messages a part link already points into
    kinds: tuple[tuple[Literal["part", "message"], str], ...] = (
        ("part", "part_ids"),
        ("message", "message_ids"),
    )
    for kind, key in kinds:
        ids = ev.get(key)
        for ident in ids if isinstance(ids, list) else []:
            if not isinstance(ident, str) or not ident:
                continue
            p = loc.place(ident) if loc is not None else None
            if kind == "message" and p is not None and p.message in shown:
                continue
            if p is not None:
                shown.add(p.message)
            links.append({"id": ident, "kind": kind, "label": _label(ident, kind, loc)})
    # `f` is a finding as it was kept (an archive's, the store's, a live row's): its keys as they are
    return cast("DescribedFinding", {**f, "sentence": text, "evidence_links": links})


def describe_all(
    findings: Iterable[Mapping[str, Any]], messages: Iterable[Any] | None
) -> list[DescribedFinding]:
    """Every finding described; `messages` of the archive when it could be read, else None."""
    summaries = {s.name: s.summary for s in REGISTRY.specs()}
    loc = Locator(messages) if messages is not None else None
    return [describe(f, loc, summaries.get(str(f.get("detector")))) for f in findings]
