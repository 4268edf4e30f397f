"""`octel detect`'s reader against what a user really feeds it: real exports, event captures
and `opencode run` logs with any value anywhere replaced by anything, under any wrapper, cut
at any byte, with the banner line, blank or empty. It reads a session or refuses with a
sentence (`NotASession`), and the detectors score what it read: never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from json_mutation import any_json, replace_inside

from archiver.convert_read import NotASession, read_session
from detectors import score

FIXTURES = Path(__file__).parents[1] / "fixtures" / "opencode"
_FX = json.loads((FIXTURES / "doom_loop.json").read_text())
_EXPORT = json.loads((FIXTURES / "export.json").read_text())
_RUN_LOG = [json.loads(x) for x in (FIXTURES / "run_format_json.jsonl").read_text().splitlines() if x]
_EVENTS = [e["event"] for e in _FX["events"]][:60]

_json = any_json(70)


@st.composite
def _mutated(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with up to three values somewhere inside replaced by anything."""
    for _ in range(draw(st.integers(0, 3))):
        value = replace_inside(draw, value, _json, depth=(1, 8), odds=4)
    return value


@st.composite
def _texts(draw: st.DrawFn) -> str:
    shape = draw(st.sampled_from(["export", "banner", "events", "events_array", "wrapped", "run_log"]))
    if shape in ("export", "banner"):
        text = json.dumps(draw(_mutated(_EXPORT)))
        text = f"Exporting session: {_EXPORT['info']['id']}\n{text}" if shape == "banner" else text
    elif shape == "run_log":
        text = "\n".join(json.dumps(x) for x in draw(_mutated(_RUN_LOG)))
    else:
        events = draw(_mutated(_EVENTS))
        wrapper = draw(st.sampled_from(["events", "data", "items", "payload"]))
        text = (
            "\n".join(json.dumps(e) for e in events)
            if shape == "events"
            else json.dumps(events if shape == "events_array" else {wrapper: events})
        )
    if draw(st.integers(0, 4)) == 0:  # cut anywhere: a capture still being written
        text = text[: draw(st.integers(0, len(text)))]
    return text


@given(_texts())
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
def test_any_opencode_input_reads_as_a_session_or_is_refused_with_a_sentence(text: str) -> None:
    try:
        got = read_session(text)
    except NotASession as e:
        event("refused")
        assert str(e)
        return
    event(f"read {min(len(got.messages), 3)}+ messages")
    score(got.messages, status=got.status, permissions=got.permissions)


def test_a_byte_order_mark_or_a_banner_before_an_export_is_skipped() -> None:
    text = json.dumps(_EXPORT)
    want = len(read_session(text).messages)
    assert want > 0
    for prefix in (
        "\ufeff",
        f"Exporting session: {_EXPORT['info']['id']}\r\n",
        "\ufeffExporting session: x\n",
    ):
        assert len(read_session(prefix + text).messages) == want


def test_a_run_log_tool_named_by_a_list_is_read_not_a_traceback() -> None:
    # found by the property above: a tool name that is no text was looked up as a key
    bad = [dict(x) for x in _RUN_LOG]
    for x in bad:
        if x.get("type") == "tool_use":
            x["part"] = {**x["part"], "tool": ["bash"]}
    got = read_session("\n".join(json.dumps(x) for x in bad))
    score(got.messages, status=got.status, permissions=got.permissions)
