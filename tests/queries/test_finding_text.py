"""Findings said in one sentence, evidence named by turn and tool (pure, property-tested)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from telemetry.queries.finding_text import Locator, describe, describe_all


def _messages() -> list[dict[str, Any]]:
    def tool(pid: str) -> dict[str, Any]:
        return {"id": pid, "type": "tool", "tool": "bash", "callID": "c" + pid}

    return [
        {"info": {"id": "m1", "role": "user"}, "parts": [{"id": "p0", "type": "text"}]},
        {"info": {"id": "m2", "role": "assistant"}, "parts": [tool("p1")]},
        {"info": {"id": "m3", "role": "assistant"}, "parts": [tool("p2")]},
        {"info": {"id": "m4", "role": "assistant"}, "parts": [tool("p3")]},
    ]


def test_a_doom_loop_reads_as_what_ran_how_often_and_from_which_turn() -> None:
    f = {
        "detector": "doom_loop",
        "verdict": "stuck",
        "start_index": 1,
        "evidence": {
            "period": 1,
            "repetitions": 3,
            "signature": ['bash {"command":"git status --short"}'],
            "polling": False,
            "same_failure": None,
            "message_ids": ["m2", "m3", "m4"],
            "part_ids": ["p1", "p2", "p3"],
            "active": True,
        },
    }
    got = describe(f, Locator(_messages()))
    assert got["sentence"] == (
        "`git status --short` (bash) ran 3 times in a row with the same input, from turn 1 (message 2)."
    )
    # each message is reached through its part: no second link to the same message
    assert [x["label"] for x in got["evidence_links"]] == ["turn 1 · bash", "turn 2 · bash", "turn 3 · bash"]
    assert [x["id"] for x in got["evidence_links"]] == ["p1", "p2", "p3"]


def test_without_the_archive_ids_are_still_links() -> None:
    f = {"detector": "silent_stop", "start_index": -1, "evidence": {"message_ids": ["msg_abcdef123456"]}}
    (got,) = describe_all([f], None)
    assert got["sentence"] == "The last turn ended empty and the session went idle."
    assert got["evidence_links"] == [
        {"id": "msg_abcdef123456", "kind": "message", "label": "message …123456"}
    ]


def test_an_unknown_detector_says_its_registered_summary_or_its_name() -> None:
    got = describe({"detector": "my_addon", "evidence": {}}, None, "something odd happened")
    assert got["sentence"] == "Something odd happened."
    assert describe({"detector": "x", "evidence": None}, None)["sentence"] == "X."


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
_names = st.sampled_from(
    [
        "doom_loop",
        "retry_cascade",
        "permission_deadlock",
        "monologue",
        "compaction_loop",
        "no_progress",
        "empty_reasoning",
        "silent_stop",
        "other",
    ]
)
_keys = st.sampled_from(
    [
        "signature",
        "repetitions",
        "signal",
        "count",
        "part_ids",
        "message_ids",
        "text",
        "finish",
        "steps",
        "permissions",
        "waited_s",
        "same_failure",
        "error",
        "attempt",
    ]
)


@given(name=_names, evidence=st.dictionaries(_keys, _json, max_size=6), start=st.integers(-1, 10))
def test_any_evidence_gives_one_sentence_and_only_string_ids(name: str, evidence: Any, start: int) -> None:
    got = describe({"detector": name, "evidence": evidence, "start_index": start}, Locator(_messages()))
    s = got["sentence"]
    assert isinstance(s, str) and s.endswith(".") and "\n" not in s and s[:1] == s[:1].upper()
    assert all(isinstance(x["id"], str) and x["label"] for x in got["evidence_links"])


def test_a_signature_of_odd_shape_still_gives_one_line() -> None:
    for evidence in ({"signature": {"\n": None}}, {"signature": ["\n\n {}"]}, {"signature": "x\ny"}):
        got = describe(
            {"detector": "doom_loop", "evidence": evidence, "start_index": 0}, Locator(_messages())
        )
        assert "\n" not in got["sentence"] and got["sentence"].endswith("."), evidence


def test_evidence_quoted_in_a_sentence_stays_on_one_line() -> None:
    """Found by the property above: a permission or a finish reason holding a line break broke
    the sentence in two, and a permission that was not a string lost the whole sentence (it
    read "Permission_deadlock.")."""
    asked = {"permissions": ["bash\nrm -rf", 3, None, "edit"], "waited_s": 61.6}
    got = describe({"detector": "permission_deadlock", "evidence": asked}, None)
    assert got["sentence"] == "An ask for bash rm -rf, edit waited for 62 s with no reply."
    stop = {"finish": "tool-calls\n\nlength"}
    got = describe({"detector": "silent_stop", "evidence": stop}, None)
    said = "The last turn ended empty (finish: tool-calls length) and the session went idle."
    assert got["sentence"] == said


def test_a_wait_that_is_no_finite_number_is_left_unsaid() -> None:
    """Found by the property above: `waited_s` infinity (JSON allows it as `Infinity`) raised
    OverflowError instead of giving a sentence."""
    for waited in (float("inf"), float("-inf"), float("nan"), True, 1e300):
        got = describe({"detector": "permission_deadlock", "evidence": {"waited_s": waited}}, None)
        assert got["sentence"] == "An ask for a permission waited with no reply.", waited
    got = describe({"detector": "permission_deadlock", "evidence": {"waited_s": 61.6}}, None)
    assert got["sentence"] == "An ask for a permission waited for 62 s with no reply."
