"""What the real Claude Code CLI does around long answers and denied tools, read by the detectors.

The runs are the CLI's own stream-json output from the recorded corpus (development set):
answers cut by the output limit that the CLI asks to resume, then gives up on; tools denied in
print mode.
"""

from __future__ import annotations

from pathlib import Path

import detectors
from cli.detect_load import load_stream
from detectors.model import Text, ToolCall

DEV = Path(__file__).parents[1] / "corpus" / "claude" / "dev"


def _pattern(name: str) -> tuple[str, str | None]:
    s = load_stream(DEV / f"{name}.jsonl")
    found = detectors.score(s.messages, status=s.status, permissions=s.permissions)
    top = detectors.dominant(found)
    return detectors.worst_verdict(found), top.detector if top else None


def test_the_cli_giving_up_on_cut_answers_is_the_output_limit() -> None:
    s = load_stream(DEV / "cc_cutoff_00.jsonl")
    last = [m for m in s.messages if m.role == "assistant"][-1]
    assert (last.error, last.finish) == ("MessageOutputLengthError", "length")
    assert _pattern("cc_cutoff_00") == ("stuck", "output_limit")


def test_the_clis_resume_nudge_is_not_a_new_question() -> None:
    s = load_stream(DEV / "cc_again_01.jsonl")
    nudges = [
        m
        for m in s.messages
        if m.role == "user" and any(isinstance(p, Text) and p.synthetic for p in m.parts)
    ]
    assert len(nudges) == 3  # the CLI resumed three times before it gave up
    assert _pattern("cc_again_01") == ("stuck", "monologue")
    assert _pattern("cc_paste_01") == ("stuck", "turn_repetition")


def test_one_cut_answer_resumed_and_carried_on_is_healthy() -> None:
    for name in ("cc_ok_resumed_00", "cc_ok_resumed_01"):
        assert _pattern(name) == ("healthy", None)


def test_each_denied_call_counts_once() -> None:
    s = load_stream(DEV / "cc_denied_03.jsonl")
    denied = [p for m in s.messages for p in m.parts if isinstance(p, ToolCall) and p.denied]
    assert len(denied) == 4
    assert s.permissions == []  # the result's list names the same calls: no second count
    found = {f.detector: f for f in detectors.score(s.messages, permissions=s.permissions)}
    assert found["permission_deadlock"].verdict == "stuck"
    assert found["permission_deadlock"].evidence["count"] == 4


def test_one_denial_then_other_tools_is_healthy() -> None:
    assert _pattern("cc_ok_denied_once_00") == ("healthy", None)
