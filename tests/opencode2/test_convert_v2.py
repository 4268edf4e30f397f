"""OpenCode 2 messages in the detector model and the per-turn metrics (pure, no server)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from archiver import convert_v2
from archiver.convert import from_opencode
from archiver.metrics import per_turn, totals
from detectors.model import Compaction, Retry, ToolCall

TOK = {"input": 10, "output": 4, "reasoning": 1, "cache": {"read": 3, "write": 2}}
MESSAGES: list[dict[str, Any]] = [
    {"id": "msg_1", "type": "user", "text": "go", "time": {"created": 1000}},
    {
        "id": "msg_2",
        "type": "assistant",
        "agent": "build",
        "model": {"id": "m", "providerID": "p"},
        "finish": "tool-calls",
        "cost": 0.25,
        "tokens": TOK,
        "time": {"created": 1001, "completed": 1002},
        "retry": {
            "attempt": 2,
            "at": 5000,
            "error": {"type": "provider.rate-limit", "message": "429 slow down"},
        },
        "content": [
            {
                "type": "tool",
                "id": "call_1",
                "name": "shell",
                "state": {
                    "status": "completed",
                    "input": {"command": "make"},
                    "content": [{"type": "text", "text": "ok"}],
                    "metadata": {"exit": 2},
                },
            },
            {
                "type": "tool",
                "id": "call_2",
                "name": "subagent",
                "state": {"status": "streaming", "input": "{"},
            },
            {"type": "hologram", "id": "x"},
        ],
    },
    {
        "id": "msg_3",
        "type": "shell",
        "shellID": "sh_1",
        "command": "ls",
        "status": "timeout",
        "output": {"output": "a\nb", "cursor": 3, "size": 3, "truncated": False},
        "time": {"created": 1003},
    },
    {
        "id": "msg_4",
        "type": "compaction",
        "status": "completed",
        "reason": "auto",
        "summary": "s",
        "cost": 0.5,
        "tokens": TOK,
        "time": {"created": 1004},
    },
    {
        "id": "msg_5",
        "type": "assistant",
        "agent": "build",
        "model": {},
        "content": [],
        "cost": 0.125,
        "time": {"created": 1005, "completed": 1006},
    },
    {
        "id": "msg_6",
        "type": "idle",
        "outcome": "failed",
        "error": {"type": "provider.internal", "message": "503"},
        "time": {"created": 1007},
    },
]


def test_v2_messages_in_the_detector_model() -> None:
    msgs = from_opencode(MESSAGES)
    assert [m.id for m in msgs] == ["msg_1", "msg_2", "msg_3", "msg_4", "msg_5"]
    step = msgs[1]
    calls = [p for p in step.parts if isinstance(p, ToolCall)]
    assert [(c.tool, c.status) for c in calls] == [("bash", "completed"), ("task", "pending")]
    assert calls[0].exit_code == 2 and calls[0].output == "ok"
    assert [(p.attempt, p.error) for p in step.parts if isinstance(p, Retry)] == [(2, "429 slow down")]
    shell = msgs[2].parts[0]
    assert isinstance(shell, ToolCall) and shell.tool == "bash" and shell.timed_out and shell.output == "a\nb"
    assert isinstance(msgs[3].parts[0], Compaction) and msgs[3].parts[0].auto
    # the failed execution is pinned on the step it ended
    assert (msgs[4].error, msgs[4].error_message) == ("provider.internal", "503")


def test_interrupted_execution_reads_as_an_abort() -> None:
    items = [
        *MESSAGES[:2],
        {"id": "msg_9", "type": "idle", "outcome": "interrupted", "time": {"created": 9999}},
    ]
    assert from_opencode(items)[-1].error == "MessageAbortedError"
    assert convert_v2.execution(items) == {"outcome": "interrupted", "error": None, "message_id": "msg_9"}
    assert convert_v2.execution([], {"outcome": "succeeded"})["outcome"] == "succeeded"  # type: ignore[index]
    assert convert_v2.execution(MESSAGES[:2]) is None


def test_per_step_tokens_and_cost() -> None:
    view = convert_v2.metrics_view(MESSAGES)
    turns = per_turn(view)
    assert [t["message_id"] for t in turns] == ["msg_2", "msg_4", "msg_5"], (
        "a compaction that spent is a step"
    )
    assert [t["cost"] for t in turns] == [0.25, 0.5, 0.125]
    assert turns[0]["tokens"] == {"input": 10, "output": 4, "reasoning": 1, "cache_read": 3, "cache_write": 2}
    assert turns[0]["model"] == "m" and turns[0]["tool_calls"] == 2 and turns[1]["summary"]
    own = totals(view, turns)
    assert own["cost"] == 0.875 and own["user_messages"] == 1 and own["messages"] == len(MESSAGES)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "id",
                    "type",
                    "content",
                    "state",
                    "time",
                    "retry",
                    "error",
                    "output",
                    "outcome",
                    "tokens",
                    "model",
                ]
            ),
            kids,
            max_size=5,
        )
    ),
    max_leaves=20,
)
_kinds = st.sampled_from(["assistant", "user", "shell", "compaction", "idle", "synthetic", "later-kind"])


@given(
    st.lists(
        st.builds(lambda k, rest: {**rest, "type": k} if isinstance(rest, dict) else rest, _kinds, _json)
    )
)
def test_any_v2_json_never_breaks_the_converters(items: list[Any]) -> None:
    from_opencode(items)
    per_turn(convert_v2.metrics_view(items))
    convert_v2.execution(items)
