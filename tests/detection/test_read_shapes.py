"""Every shape OpenCode leaves reads as the same session: exports (with or without the banner
older versions printed), `opencode run --format json` logs, event captures as JSON lines or a
JSON array under each common wrapper; what is not a session is refused with a sentence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from archiver.convert import from_fixture
from archiver.convert_read import NotASession, read_session
from detectors import score, worst_verdict
from detectors.model import ToolCall

FIXTURES = Path(__file__).parents[1] / "fixtures" / "opencode"
SCENARIOS = (
    "healthy",
    "doom_loop",
    "reasoning_loop",
    "permission_deadlock",
    "context_overflow",
    "subagent_tree",
    "tool_errors",
)


def _fx(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return doc


def _wrapped(events: list[dict[str, Any]], how: str) -> str:
    if how == "jsonl_received":
        return "\n".join(json.dumps(e) for e in events)
    if how == "array_timestamp":
        return json.dumps([{"timestamp": e["received"], "event": e["event"]} for e in events])
    if how == "global_payload":
        return json.dumps([{"directory": "/p", "payload": e["event"]} for e in events])
    if how == "sse_text":
        return "".join(f"data: {json.dumps(e['event'])}\n\n" for e in events)
    assert how == "bare_lines"
    return "\n".join(json.dumps(e["event"]) for e in events)


def _verdict(text: str) -> tuple[int, str, list[str]]:
    c = read_session(text)
    found = score(c.messages, status=c.status, permissions=c.permissions)
    tools = [p.tool for m in c.messages for p in m.parts if isinstance(p, ToolCall)]
    return len(c.messages), worst_verdict(found), tools


WRAPPERS = ["jsonl_received", "array_timestamp", "global_payload", "sse_text", "bare_lines"]


@pytest.mark.parametrize("how", WRAPPERS)
@pytest.mark.parametrize("name", SCENARIOS)
def test_an_event_capture_reads_as_the_recorded_session(name: str, how: str) -> None:
    fx = _fx(name)
    ref = from_fixture(fx)
    found = score(ref.messages, status=ref.status, permissions=ref.permissions)
    expected = (
        len(ref.messages),
        worst_verdict(found),
        [p.tool for m in ref.messages for p in m.parts if isinstance(p, ToolCall)],
    )
    assert _verdict(_wrapped(fx["events"], how)) == expected


def test_status_events_keep_their_times_under_any_wrapper() -> None:
    events = _fx("retry_cascade")["events"]
    for how in ("jsonl_received", "array_timestamp"):
        c = read_session(_wrapped(events, how))
        retries = [s for s in c.status if s.type == "retry"]
        assert retries and all(s.t is not None and s.t > 1e9 for s in retries)
        assert max(s.attempt for s in retries) >= 3


def test_an_opencode_run_json_log() -> None:
    c = read_session((FIXTURES / "run_format_json.jsonl").read_text())
    assert [m.role for m in c.messages] == ["assistant"] * 3
    assert [m.finish for m in c.messages] == ["tool-calls", "tool-calls", "stop"]
    calls = [p for m in c.messages for p in m.parts if isinstance(p, ToolCall)]
    assert [(p.tool, p.exit_code) for p in calls] == [("bash", 0), ("bash", 1)]


def test_a_run_log_error_line_lands_on_the_last_step() -> None:
    line = {
        "type": "error",
        "timestamp": 1796060798729,
        "sessionID": "ses_a",
        "error": {"name": "APIError", "data": {"message": "Provider is overloaded"}},
    }
    text = (FIXTURES / "run_format_json.jsonl").read_text().replace("ses_dd26eaa43ffeqvETR6zFrgD2Cx", "ses_a")
    c = read_session(text + json.dumps(line) + "\n")
    assert c.messages[-1].error == "APIError"


@pytest.mark.parametrize("banner", ["", "Exporting session: ses_dd26eaa43ffeqvETR6zFrgD2Cx\n"])
def test_an_export_with_or_without_the_banner(banner: str) -> None:
    text = (FIXTURES / "export.json").read_text()
    c = read_session(banner + text)
    assert [m.role for m in c.messages] == ["user", "assistant", "assistant", "assistant"]


def test_events_of_several_sessions_pick_the_root_or_the_one_asked_for() -> None:
    fx = _fx("subagent_tree")
    text = _wrapped(fx["events"], "jsonl_received")
    assert len(read_session(text).messages) == len(from_fixture(fx).messages)
    child = next(s for s in fx["messages"] if s != fx["root_id"])
    assert len(read_session(text, child).messages) == len(from_fixture(fx, child).messages)


def test_events_without_messages_give_no_messages() -> None:
    status_only = [
        e
        for e in _fx("healthy")["events"]
        if e["event"]["type"].startswith("session.") and e["event"]["type"] != "session.created"
    ]
    c = read_session(json.dumps(status_only))
    assert c.messages == []


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[1, 2, 3]", "array of int"),
        ('{"a": 1}', "keys a"),
        ("hello", "no JSON"),
        ("{nope", "not JSON"),
        ('"text"', "no JSON"),
    ],
)
def test_what_is_not_a_session_is_refused_with_a_reason(text: str, says: str) -> None:
    with pytest.raises(NotASession, match=says):
        read_session(text)
