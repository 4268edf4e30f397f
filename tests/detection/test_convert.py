"""The converter: captured fixtures of both shapes read right; malformed JSON never crashes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archiver.convert import (
    MAX_OUTPUT,
    canonical_json,
    from_fixture,
    from_opencode,
    message_from_opencode,
    permissions_from_opencode,
    status_from_opencode,
)
from detectors import score
from detectors.model import Compaction, Patch, Reasoning, StepFinish, Text, ToolCall

FIXTURES = Path(__file__).parents[1] / "fixtures" / "opencode"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def test_classic_messages_from_a_real_run() -> None:
    c = from_fixture(fixture("healthy"))
    assert [m.role for m in c.messages] == ["user", "assistant", "assistant", "assistant", "assistant"]
    assert [m.index for m in c.messages] == [0, 1, 2, 3, 4]
    first = c.messages[1]
    assert isinstance(first.parts[0], Text)
    call = next(p for p in first.parts if isinstance(p, ToolCall))
    assert call.tool == "bash"
    assert json.loads(call.canonical_input)["command"] == "ls -la"
    assert call.status == "completed" and call.exit_code == 0
    assert isinstance(first.parts[-1], StepFinish) and first.parts[-1].reason == "tool-calls"
    assert any(isinstance(p, Reasoning) for p in c.messages[2].parts)
    patch = next(p for p in c.messages[3].parts if isinstance(p, Patch))
    assert patch.files and all(isinstance(f, str) for f in patch.files)
    assert c.messages[-1].finish == "stop" and c.messages[-1].completed
    assert c.status[0].t is not None and c.status[-1].type == "idle"


def test_errors_aborts_and_tool_failures() -> None:
    aborted = from_fixture(fixture("aborted")).messages[-1]
    assert aborted.error == "MessageAbortedError" and aborted.finish is None
    assert next(p for p in aborted.parts if isinstance(p, ToolCall)).interrupted
    tools = [
        p for m in from_fixture(fixture("tool_errors")).messages for p in m.parts if isinstance(p, ToolCall)
    ]
    assert tools[0].status == "completed" and tools[0].exit_code not in (None, 0)
    assert tools[2].status == "error" and tools[2].error.startswith("File not found")
    assert any(t.tool == "invalid" for t in tools)


def test_a_context_overflow_event_is_pinned_on_its_empty_step() -> None:
    msgs = from_fixture(fixture("context_overflow")).messages
    assert msgs[1].error == "ContextOverflowError" and msgs[1].parts == ()
    assert any(isinstance(p, Compaction) and p.overflow for p in msgs[2].parts)
    assert msgs[3].summary is True


def test_permission_events_and_pending_ids_in_status() -> None:
    c = from_fixture(fixture("permission_deadlock"))
    assert [(p.kind, p.permission, p.patterns) for p in c.permissions] == [("asked", "bash", ("ls -la",))]
    assert c.permissions[0].call_id.startswith("call_")
    assert any(c.permissions[0].request_id in s.pending_permissions for s in c.status)
    guard = from_fixture(fixture("doom_loop_guard")).permissions
    assert [p.kind for p in guard] == ["asked", "replied", "asked", "replied"]
    assert guard[0].permission == "doom_loop" and guard[1].reply == "once"


def test_status_samples_of_a_retry_run() -> None:
    c = from_fixture(fixture("retry_cascade"))
    assert max(s.attempt for s in c.status if s.type == "retry") == 3
    assert {s.type for s in c.status} == {"busy", "retry", "idle"}


def test_bare_statuses_and_other_sessions() -> None:
    bare = status_from_opencode([{"type": "retry", "attempt": 2, "next": 1}, {"type": "nope"}, 5])
    assert [(s.type, s.attempt) for s in bare] == [("retry", 2)]
    mapped = status_from_opencode([{"t": 1, "status": {"other": {"type": "busy"}}}], session_id="mine")
    assert [s.type for s in mapped] == ["idle"]


def test_api_generation_messages() -> None:
    data = {
        "data": [
            {"id": "msg_1", "type": "user", "text": "Fix it", "time": {"created": 1}},
            {
                "id": "msg_2",
                "type": "assistant",
                "agent": "build",
                "model": {"id": "m", "providerID": "p"},
                "time": {"created": 2, "completed": 3},
                "finish": "tool-calls",
                "tokens": {"input": 1, "output": 7, "reasoning": 2, "cache": {"read": 0, "write": 0}},
                "snapshot": {"files": ["a.py"]},
                "content": [
                    {"type": "reasoning", "id": "r1", "text": "think"},
                    {"type": "text", "id": "t1", "text": "Running."},
                    {
                        "type": "tool",
                        "id": "c1",
                        "name": "bash",
                        "time": {"created": 2},
                        "state": {
                            "status": "completed",
                            "input": {"command": "ls", "a": 1},
                            "structured": {"exit": 2},
                            "content": [{"type": "text", "text": "out"}],
                        },
                    },
                    {
                        "type": "tool",
                        "id": "c2",
                        "name": "read",
                        "time": {"created": 2},
                        "state": {
                            "status": "error",
                            "input": {},
                            "content": [],
                            "structured": {},
                            "error": {"type": "unknown", "message": "File not found: x"},
                        },
                    },
                    {
                        "type": "tool",
                        "id": "c3",
                        "name": "bash",
                        "time": {"created": 2},
                        "state": {"status": "pending", "input": '{"command": "ls", "a": 1}'},
                    },
                ],
            },
            {
                "id": "msg_3",
                "type": "compaction",
                "reason": "auto",
                "summary": "s",
                "recent": "r",
                "time": {"created": 4},
            },
            {
                "id": "msg_4",
                "type": "shell",
                "callID": "x",
                "command": "ls",
                "output": "a",
                "time": {"created": 5},
            },
            {"id": "msg_5", "type": "agent-switched", "agent": "plan", "time": {"created": 6}},
            {
                "id": "msg_6",
                "type": "assistant",
                "agent": "b",
                "model": {},
                "content": [],
                "time": {"created": 7},
                "error": {"type": "unknown", "message": "boom"},
            },
        ],
        "cursor": {},
    }
    msgs = from_opencode(data)
    assert [m.id for m in msgs] == ["msg_1", "msg_2", "msg_3", "msg_4", "msg_6"]
    assert [m.index for m in msgs] == [0, 1, 2, 3, 4]
    a = msgs[1]
    assert a.finish == "tool-calls" and a.output_tokens == 7 and a.reasoning_tokens == 2 and a.completed
    calls = [p for p in a.parts if isinstance(p, ToolCall)]
    assert calls[0].canonical_input == '{"a":1,"command":"ls"}' and calls[0].exit_code == 2
    assert calls[0].output == "out"
    assert calls[1].status == "error" and calls[1].error == "File not found: x"
    assert calls[2].status == "pending" and calls[2].canonical_input == calls[0].canonical_input
    assert any(isinstance(p, Patch) and p.files == ("a.py",) for p in a.parts)
    assert isinstance(msgs[2].parts[0], Compaction)
    assert msgs[4].error == "unknown" and msgs[4].error_message == "boom"


def test_v2_permission_events() -> None:
    events = [
        {
            "payload": {
                "id": "evt_1",
                "type": "permission.v2.asked",
                "properties": {"id": "per_1", "sessionID": "s", "action": "read", "resources": [".env"]},
            }
        },
        {
            "id": "evt_2",
            "type": "permission.v2.replied",
            "data": {"sessionID": "s", "requestID": "per_1", "reply": "reject"},
        },
        {"id": "evt_3", "type": "permission.asked", "properties": {"id": "per_2", "sessionID": "other"}},
    ]
    got = permissions_from_opencode(events, session_id="s")
    assert [(p.kind, p.request_id, p.permission, p.patterns, p.reply) for p in got] == [
        ("asked", "per_1", "read", (".env",), ""),
        ("replied", "per_1", "", (), "reject"),
    ]


def test_canonical_input_ignores_key_order_and_cuts_long_outputs() -> None:
    assert canonical_json({"b": 1, "a": {"d": 2, "c": 3}}) == canonical_json({"a": {"c": 3, "d": 2}, "b": 1})
    assert canonical_json("not json") == "not json"
    item = {
        "info": {"id": "m", "role": "assistant"},
        "parts": [{"type": "tool", "tool": "bash", "state": {"status": "completed", "output": "x" * 99999}}],
    }
    (msg,) = from_opencode([item])
    assert len(msg.parts[0].output) == MAX_OUTPUT  # type: ignore[union-attr]
    assert msg.completed is False


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)
keys = st.sampled_from(
    [
        "info",
        "parts",
        "type",
        "state",
        "status",
        "input",
        "role",
        "id",
        "tool",
        "error",
        "time",
        "completed",
        "data",
        "content",
        "name",
        "tokens",
        "event",
        "properties",
        "received",
        "t",
        "pending_permissions",
        "messages",
        "root_id",
        "events",
    ]
)
shaped = st.recursive(
    json_values,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=6),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(shaped, json_values))
def test_arbitrary_json_never_crashes_the_converter_or_a_detector(doc: Any) -> None:
    c = from_fixture(doc)
    msgs = from_opencode(doc, events=doc if isinstance(doc, list) else ())
    stat = status_from_opencode(doc if isinstance(doc, list) else [doc])
    perms = permissions_from_opencode(doc if isinstance(doc, list) else [doc])
    for m, s, p in ((c.messages, c.status, c.permissions), (msgs, stat, perms)):
        for f in score(m, status=s, permissions=p, include_healthy=True):
            json.dumps(f.to_dict())


def test_status_events_join_the_polls_on_one_clock() -> None:
    rec = fixture("permission_deadlock")
    c = from_fixture(rec)
    assert c.status[-1].type == "idle"  # idle is only ever an event
    times = [s.t for s in c.status]
    assert times == sorted(times)
    found = score(c.messages, status=c.status, permissions=c.permissions)
    assert [(f.detector, f.verdict) for f in found] == [("permission_deadlock", "stuck")]
    assert found[0].evidence["idle"] is True


def test_one_message_at_a_time_for_a_live_probe() -> None:
    items = fixture("doom_loop")["messages"][fixture("doom_loop")["root_id"]]
    whole = from_opencode(items)
    assert [message_from_opencode(item, i) for i, item in enumerate(items)] == whole
    assert message_from_opencode("junk", 0) is None
    assert message_from_opencode({"info": {"role": "user", "id": 3}, "parts": 5}, 0) is not None


def test_the_fast_path_builds_what_the_general_converter_builds() -> None:
    """Every stored session of the fixtures and both corpora: same records either way."""
    from pathlib import Path

    from archiver.convert import from_opencode
    from archiver.convert_fast import classic_messages

    tests = Path(__file__).parents[1]
    files = [
        *(tests / "fixtures" / "opencode").glob("*.json"),
        *(tests / "corpus").glob("*.json"),
        *(tests / "corpus" / "real").glob("*/*.json"),
    ]
    compared = 0
    for f in files:
        if f.name.endswith(".label.json"):
            continue
        doc = json.loads(f.read_text())
        msgs = doc.get("messages") if isinstance(doc, dict) else doc
        for items in msgs.values() if isinstance(msgs, dict) else [msgs]:
            fast = classic_messages(items)
            if fast is not None:
                compared += 1
                assert fast[0] == from_opencode(items, fast=False), f
    assert compared >= 200


def test_the_fast_path_gives_way_on_an_unexpected_shape() -> None:
    from archiver.convert_fast import classic_messages

    item = {"info": {"id": "m", "role": "assistant", "time": {}}, "parts": [{"type": "retry", "id": "p"}]}
    assert classic_messages([item]) is None
    assert (
        classic_messages([{"info": {"id": "m", "role": "user"}, "parts": [{"type": "text", "text": 3}]}])
        is None
    )
