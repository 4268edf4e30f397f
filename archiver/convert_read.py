"""Any file OpenCode (or octel) leaves -> one session's normalised stream (pure: text in).

Shapes read, told apart by content rather than by file name:
- an octel archive (any version) or a recorded run (`{messages: {sid: [...]}, events, ...}`);
- `opencode export` output (`{info, messages}`), also with the `Exporting session: ses_…`
  line older versions printed before it, and OpenCode 2's export route
  (`/api/experimental/session/{id}/export`: `{data: {info, messages}}`, typed messages);
- a bare message list of either API generation, or a `{data: [...]}` envelope;
- `opencode run --format json` logs and event captures, as JSON lines or one JSON array, each
  event bare or under `{received, event}`, `{timestamp, event}` or `{payload}`; SSE text
  (`data: {...}` lines) too.
Anything else raises `NotASession` with a sentence saying what the file holds instead.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from archiver.claude.convert import from_claude
from archiver.convert import Converted, from_fixture, from_opencode
from archiver.convert_events import merged_status, permissions_from_opencode, status_from_opencode
from archiver.convert_log import is_event, sessions_from_events
from archiver.files import upgrade

__all__ = [
    "NotASession",
    "SessionStream",
    "parse_json_text",
    "read_session",
    "read_tree",
    "sessions_in",
    "stream_from_doc",
]


class NotASession(ValueError):
    """The input is JSON (or not) but holds no OpenCode session; the message says what it is."""


def _lines(text: str) -> list[Any]:
    out: list[Any] = []
    bad = 0
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("data:"):  # an SSE capture
            line = line[5:].strip()
        if not line or line[0] not in "{[":
            continue
        try:
            out.append(orjson.loads(line))
        except ValueError:
            glued = _glued(line)  # writers sharing one file: `{...}{...}` on one line
            out.extend(glued)
            bad += not glued
    if not out and bad:
        raise NotASession(f"{bad} line(s) look like JSON but none parses")
    return out


_DECODER = json.JSONDecoder()


def _glued(line: str) -> list[Any]:
    """The JSON values written one after another on one line (processes appending to the
    same log without a newline between); [] when the line is not that."""
    out: list[Any] = []
    at = 0
    try:
        while at < len(line):
            value, end = _DECODER.raw_decode(line, at)
            out.append(value)
            at = end
            while at < len(line) and line[at] in " \t,":
                at += 1
    except ValueError:
        return []
    return out if len(out) > 1 else []


def parse_json_text(text: str) -> Any:
    """One JSON document, or a list of the JSON values on each line (JSON lines, SSE).

    Lines before the first `{` or `[` line (a CLI's banner) are skipped, and so is a byte order
    mark (an editor on Windows saves one)."""
    text = text.removeprefix("\ufeff")
    start = 0
    if text.lstrip()[:1] not in ("{", "["):  # the common case skips the line walk
        for line in text.splitlines(keepends=True):
            if line.lstrip()[:1] in ("{", "[") or line.startswith("data:"):
                break
            start += len(line)
    body = text[start:] if start else text
    if not body.strip():
        raise NotASession("no JSON in it")
    try:
        return orjson.loads(body)
    except ValueError as e:
        if "\n" not in body.strip() and "data:" not in body[:200]:
            raise NotASession(f"not JSON ({e})") from None
    return _lines(body)


def _is_message(item: object) -> bool:
    if not isinstance(item, Mapping):
        return False
    if isinstance(item.get("info"), Mapping):
        return True
    return item.get("type") in ("user", "assistant", "synthetic", "system", "shell", "compaction") and (
        "content" in item or "text" in item or "id" in item
    )


def _describe(v: object) -> str:
    if isinstance(v, list):
        kinds = sorted({type(x).__name__ for x in v[:50]})
        return f"a JSON array of {', '.join(kinds) or 'nothing'}"
    if isinstance(v, Mapping):
        keys = ", ".join(sorted(map(str, v))[:6])
        return f"a JSON object with keys {keys or '(none)'}"
    return f"a JSON {type(v).__name__}"


def _from_events(events: Sequence[Any], session_id: str | None) -> Converted:
    logs = sessions_from_events(events)
    sid = session_id
    if sid is None and logs:
        roots = [s for s in logs.values() if s.parent is None and (s.infos or s.parts)]
        pool = roots or list(logs.values())
        sid = max(pool, key=lambda s: len(set(s.infos) | set(s.parts))).id
    if sid is None:
        return Converted([], merged_status([], events, ""), [])
    log = logs.get(sid)
    items = log.items() if log is not None else []
    return Converted(
        from_opencode(items, events=events, session_id=sid),
        merged_status([], events, sid),
        permissions_from_opencode(events, session_id=sid),
    )


def _archive(doc: Mapping[str, Any], session_id: str | None) -> Converted:
    try:
        doc = upgrade(dict(doc))
    except (ValueError, TypeError, AttributeError):
        return from_fixture(doc.get("messages"))
    sid = session_id or doc.get("session_id")
    sid = sid if isinstance(sid, str) else None
    if (doc.get("source") or {}).get("kind") == "claude_code":
        return from_claude(doc.get("messages") or [], (doc.get("claude") or {}).get("results") or [])
    events = doc.get("permission_events") or []
    return Converted(
        from_opencode(doc.get("messages"), events=events, session_id=sid),
        status_from_opencode(doc.get("status_history") or [], session_id=sid),
        permissions_from_opencode(events, session_id=sid),
    )


def stream_from_doc(doc: Any, session_id: str | None = None) -> Converted:
    """The normalised stream of a parsed document of any shape above."""
    if isinstance(doc, Mapping):
        msgs = doc.get("messages")
        if isinstance(msgs, list) and isinstance(doc.get("info"), Mapping):  # opencode export
            return Converted(from_opencode(msgs), [], [])
        if isinstance(msgs, list):
            return _archive(doc, session_id)
        if isinstance(msgs, Mapping):
            return from_fixture(doc, session_id)
        if isinstance(doc.get("events"), list):
            return _from_events(doc["events"], session_id)
        data = doc.get("data")
        if isinstance(data, list) or (isinstance(data, Mapping) and isinstance(data.get("messages"), list)):
            return stream_from_doc(data, session_id)
        if is_event(doc):
            return _from_events([doc], session_id)
        raise NotASession(f"{_describe(doc)}, not an OpenCode session, export, log or archive")
    if isinstance(doc, list):
        if not doc:
            return Converted([], [], [])
        head = doc[:20]
        if any(_is_message(x) for x in head):
            return Converted(from_opencode(doc), [], [])
        if any(is_event(x) for x in head):
            return _from_events(doc, session_id)
        raise NotASession(f"{_describe(doc)}, not messages or events of an OpenCode session")
    raise NotASession(f"{_describe(doc)}, not an OpenCode session")


@dataclass(frozen=True, slots=True)
class SessionStream:
    """One session of a file holding several (a run log, an event capture, a recorded run)."""

    session_id: str
    parent_id: str | None
    stream: Converted


def sessions_in(doc: Any) -> list[SessionStream]:
    """Every session a parsed event log or recorded run holds, parents before children, each
    converted on its own; [] for a document of one session (read it with `stream_from_doc`).
    Sessions with no message of their own (a parent known only by its children) are left out."""
    if isinstance(doc, Mapping) and isinstance(doc.get("messages"), Mapping):
        ids = [k for k in doc["messages"] if isinstance(k, str)]
        if len(ids) < 2:
            return []
        parents = _fixture_parents(doc)
        return _ordered([SessionStream(i, parents.get(i), from_fixture(doc, i)) for i in ids])
    events = doc.get("events") if isinstance(doc, Mapping) else doc
    if not isinstance(events, list) or not any(is_event(x) for x in events[:50]):
        return []
    logs = {k: v for k, v in sessions_from_events(events).items() if v.infos or v.parts}
    if len(logs) < 2:
        return []
    return _ordered([SessionStream(k, v.parent, _from_events(events, k)) for k, v in logs.items()])


def _fixture_parents(doc: Mapping[str, Any]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    sessions = doc.get("sessions")
    for info in sessions.values() if isinstance(sessions, Mapping) else sessions or []:
        if isinstance(info, Mapping) and isinstance(info.get("id"), str):
            parent = info.get("parentID")
            out[info["id"]] = parent if isinstance(parent, str) else None
    return out


def _ordered(found: list[SessionStream]) -> list[SessionStream]:
    """Parents before their children (breadth first), in order of first sight otherwise; a
    parent not among them makes its children roots."""
    known = {s.session_id for s in found}
    kids: dict[str | None, list[SessionStream]] = {}
    for s in found:
        kids.setdefault(s.parent_id if s.parent_id in known else None, []).append(s)
    out: list[SessionStream] = []
    queue = list(kids.get(None, []))
    while queue:
        s = queue.pop(0)
        out.append(s)
        queue.extend(kids.get(s.session_id, []))
    return out


def read_session(text: str, session_id: str | None = None) -> Converted:
    """Parse `text` (any shape above) and convert one session: `session_id`, else the root."""
    return read_tree(text, session_id, every=False)[0]


def read_tree(
    text: str, session_id: str | None = None, *, every: bool = True
) -> tuple[Converted, list[SessionStream]]:
    """`read_session`'s stream, and (with `every`) each session of a file holding several
    (`sessions_in`). The cycle collector is paused meanwhile: a session's JSON is hundreds of
    thousands of small containers, none of them garbage yet, and each collection would walk
    them all again."""
    paused = gc.isenabled()
    gc.disable()
    try:
        doc = parse_json_text(text)
        return stream_from_doc(doc, session_id), sessions_in(doc) if every else []
    finally:
        if paused:
            gc.enable()
