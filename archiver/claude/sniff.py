"""What a file Claude Code wrote holds, told from its content, never its name (pure).

Users keep these files under any name: a subagent transcript as ``agent-*.jsonl`` or renamed,
stream-json output as ``.log`` or ``.json``, a transcript a hook rewrote as one JSON array or
published pretty-printed (each line an indented object, as ``jq .`` writes it), the
``--output-format json`` result of a run (one line, or pretty-printed), a ``Workflow`` run's
``journal.jsonl``. ``kind_of`` reads the first bytes of a file and says which; ``as_lines`` turns
a JSON array of lines, or pretty-printed lines, back into JSON Lines for the readers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Literal

import orjson

__all__ = ["REWRITTEN", "Kind", "as_lines", "kind_of"]

Kind = Literal["transcript", "subagent", "stream", "result", "array", "pretty", "journal"]
# what ``as_lines`` rewrites as JSON Lines before a reader sees it
REWRITTEN: frozenset[Kind] = frozenset({"array", "pretty"})

_STREAM = re.compile(rb'"(claude_code_version|parent_tool_use_id)"\s*:|"subtype"\s*:\s*"init"')
_SESSION = re.compile(rb'"sessionId"\s*:')
_BOOKKEEPING_ONLY = frozenset({"summary", "file-history-snapshot", "custom-title", "tag"})
# a Workflow run's journal: its agents' progress, no conversation (the agents' transcripts lie
# beside it); its result lines name the session, so it is told apart before transcripts are
_JOURNAL = frozenset({"launched", "started", "result", "failed"})
_SPACE = re.compile(r"\s*")
_RESULT_KEYS = re.compile(rb'"(total_cost_usd|num_turns|duration_api_ms)"\s*:')


def _objects(text: bytes) -> list[dict[str, object]]:
    """The JSON objects of the first whole lines of ``text`` (a cut last line left out)."""
    out = []
    for line in text.split(b"\n")[:20]:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def kind_of(head: bytes) -> Kind | None:
    """Which Claude Code file ``head`` (a file's first bytes) starts, from its lines' top-level
    keys: a session transcript, a subagent's, stream-json output, a run's result object, a JSON
    array of transcript or stream-json lines, such lines pretty-printed; None when it is none of
    them."""
    text = head.lstrip()
    if text.startswith(b"[") and re.match(rb"\[\s*\{", text):
        return "array" if _SESSION.search(text) or _STREAM.search(text) else None
    objs = _objects(text)
    if not objs and text.startswith(b"{"):
        return _pretty_result(text) or _pretty_lines(text)
    for o in objs:
        if "parent_tool_use_id" in o or (o.get("type") == "system" and o.get("subtype") == "init"):
            return "stream"
    if all(o.get("type") in _JOURNAL and "message" not in o and "uuid" not in o for o in objs) and any(
        "agentId" in o for o in objs
    ):
        return "journal"
    for o in objs:
        if "sessionId" in o:
            return "subagent" if o.get("isSidechain") is True and o.get("agentId") else "transcript"
    if objs and objs[0].get("type") == "result" and "session_id" in objs[0]:
        return "result"
    if objs and all(o.get("type") in _BOOKKEEPING_ONLY for o in objs):
        return "transcript"
    return None


def _pretty_result(text: bytes) -> Kind | None:
    """A run's result object written over several lines (``jq .``, an editor): the whole of it
    when ``text`` holds it all, else its keys near the start."""
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:  # cut at the head's end (JSON Lines cut in their first line are no result)
        if b"\n{" in text:
            return None
        typed = re.search(rb'"type"\s*:\s*"result"', text) and re.search(rb'"session_id"\s*:', text)
        return "result" if typed and _RESULT_KEYS.search(text) else None
    return "result" if isinstance(obj, dict) and obj.get("type") == "result" and "session_id" in obj else None


def _pretty_lines(text: bytes) -> Kind | None:
    """Transcript or stream-json lines each written over several lines: the first object (whole
    in ``text``) says which."""
    first = next(_values(text.decode("utf-8", "replace")), None)
    if not isinstance(first, dict):
        return None
    kind = kind_of(orjson.dumps(first))
    return "pretty" if kind in ("transcript", "subagent", "stream") else None


def _values(text: str) -> Iterator[object]:
    """The JSON values one after another in ``text``, up to the first that does not parse."""
    decoder, i = json.JSONDecoder(), 0
    while (i := _SPACE.match(text, i).end()) < len(text):  # type: ignore[union-attr]
        try:
            value, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            return
        yield value


def as_lines(data: bytes) -> bytes | None:
    """A JSON array of objects, or objects written over several lines each, as JSON Lines; None
    when ``data`` is neither."""
    try:
        items = orjson.loads(data)
    except orjson.JSONDecodeError:
        items = list(_values(data.decode("utf-8", "replace")))
    if isinstance(items, dict):  # one line, pretty-printed
        items = [items]
    if not isinstance(items, list) or not items:
        return None
    return b"".join(_line(o) + b"\n" for o in items if isinstance(o, dict))


def _line(obj: dict[str, object]) -> bytes:
    try:
        return orjson.dumps(obj)
    except TypeError:  # an integer past 64 bits: the slower encoder keeps it
        return json.dumps(obj, ensure_ascii=False).encode()
