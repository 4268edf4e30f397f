"""A V2 message read as 1.x (`v1_message`, what the mirror keeps) reads back as itself
(`v2_message`): a tree rescued from the mirror of a 2.x server keeps V2's own shapes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tower.messages_v2 import v1_message, v1_session
from tower.messages_v2_back import v2_message, v2_session

SID = "ses_0999999999999Fk"

_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=False), st.text(max_size=5)
)
_json: Any = st.recursive(
    _scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_extra = st.dictionaries(
    st.sampled_from(["metadata", "native", "x", "~drop", "v2", "time"]), _json, max_size=2
)


def _with(base: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.tuples(base, _extra).map(lambda t: {**t[1], **t[0]})


_state = st.fixed_dictionaries(
    {"status": st.sampled_from(["streaming", "running", "completed", "error", "odd"]), "input": _json},
    optional={
        "content": st.lists(
            st.one_of(
                st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=8)}),
                st.fixed_dictionaries({"type": st.just("file"), "uri": st.text(max_size=5)}),
            ),
            max_size=2,
        ),
        "error": st.one_of(st.fixed_dictionaries({"message": st.text(max_size=5)}), _json),
        "metadata": _json,
    },
)
_item = st.one_of(
    _with(st.fixed_dictionaries({"type": st.sampled_from(["text", "reasoning"]), "text": _json})),
    _with(
        st.fixed_dictionaries(
            {"type": st.just("tool"), "id": st.text(max_size=6), "name": _json, "state": _state},
            optional={
                "time": st.fixed_dictionaries({"created": st.integers(0, 9)}, optional={"completed": _json})
            },
        )
    ),
    st.fixed_dictionaries({"type": st.just("file"), "uri": st.text(max_size=5)}),
    _json,
)
_message = _with(
    st.fixed_dictionaries(
        {
            "id": st.text(min_size=1, max_size=8).map(lambda s: f"msg_{s}"),
            "type": st.sampled_from(["user", "assistant", "synthetic", "compaction", "shell"]),
        },
        optional={
            "time": st.fixed_dictionaries({"created": _json}, optional={"completed": _json}),
            "text": _json,
            "summary": _json,
            "content": st.lists(_item, max_size=4),
            "agent": _json,
            "model": _json,
            "cost": _json,
            "tokens": _json,
            "finish": _json,
            "error": _json,
            "retry": _json,
            "command": _json,
            "output": _json,
        },
    )
)


@settings(max_examples=300, deadline=None)
@given(_message)
def test_every_v2_message_reads_back_as_itself(msg: dict[str, Any]) -> None:
    m = v1_message(msg, SID)
    assert m is not None
    assert v2_message(m) == msg


def test_a_message_says_in_1x_what_1x_can_say_and_keeps_the_rest_aside() -> None:
    shell = {
        "id": "msg_1",
        "type": "shell",
        "command": "ls",
        "output": {"output": "a"},
        "time": {"created": 1},
    }
    m = v1_message(shell, SID)
    assert m is not None and m["info"]["role"] == "user" and m["parts"][0]["text"] == "$ ls\na"
    assert m["info"]["v2"]["type"] == "shell" and v2_message(m) == shell
    step = {
        "id": "msg_2",
        "type": "assistant",
        "agent": "build",
        "model": {"id": "m", "providerID": "p"},
        "cost": 0.5,
        "tokens": {"input": 3, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}},
        "time": {"created": 2, "completed": 3},
        "content": [{"type": "text", "text": "done"}],
    }
    m = v1_message(step, SID)
    assert m is not None and "v2" not in m["info"] and "v2" not in m["parts"][0]  # nothing aside
    assert v2_message(m) == step


def test_a_session_record_reads_back_without_the_directory_it_was_given() -> None:
    rec = {"id": SID, "location": {"directory": "/w"}, "projectID": "p", "time": {"created": 1}}
    assert v1_session(rec)["directory"] == "/w" and v2_session(v1_session(rec)) == rec
