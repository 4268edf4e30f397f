"""Empty or reasoning-only loops and the silent stop."""

from __future__ import annotations

from detstreams import Stream, bash, call

from detectors import Finding, score
from detectors.model import StatusSample

IDLE = (StatusSample("busy"), StatusSample("idle"))


def finding(s: Stream, name: str, status: tuple[StatusSample, ...] = ()) -> Finding:
    return next(f for f in score(s.messages, status=status, include_healthy=True) if f.detector == name)


def test_reasoning_only_turns_in_a_row_are_stuck() -> None:
    s = Stream().user().repeat(5, reasoning="hmm", finish="tool-calls", output_tokens=3)
    f = finding(s, "empty_reasoning")
    assert f.verdict == "stuck"
    assert f.evidence["reasoning_only"] == 5
    assert f.start_index == 1


def test_empty_completions_count_too() -> None:
    s = Stream().user().repeat(3, output_tokens=0, finish="unknown")
    f = finding(s, "empty_reasoning")
    assert f.verdict == "stuck"
    assert f.evidence["zero_output"] == 3
    assert finding(Stream().user().repeat(2, output_tokens=0), "empty_reasoning").verdict == "healthy"


def test_a_turn_that_only_calls_a_tool_is_activity() -> None:
    s = Stream().user()
    for _ in range(4):
        s.step(reasoning="think").step(bash("sleep 5"))
    assert finding(s, "empty_reasoning").verdict == "healthy"


def test_long_reasoning_before_a_big_edit_is_healthy() -> None:
    big = call("write", {"filePath": "a.py", "content": "x" * 5000})
    s = Stream().user().repeat(2, reasoning="plan " * 2000, output_tokens=0).step(big, patch=("a.py",))
    s.step(text="Done.")
    assert finding(s, "empty_reasoning").verdict == "healthy"
    assert finding(s, "silent_stop", IDLE).verdict == "healthy"


def test_errors_and_turns_in_flight_are_not_empty_turns() -> None:
    s = Stream().user().repeat(5, error="MessageAbortedError").repeat(5, completed=False)
    assert finding(s, "empty_reasoning").verdict == "healthy"


def test_silent_stop_needs_an_idle_session() -> None:
    s = Stream().user().step(bash("ls")).step(output_tokens=0)
    assert finding(s, "silent_stop", IDLE).verdict == "stuck"
    assert finding(s, "silent_stop", (StatusSample("busy"),)).verdict == "healthy"
    assert finding(s, "silent_stop").verdict == "suspect"  # no status history at all


def test_a_last_turn_with_text_is_not_silent() -> None:
    s = Stream().user().step(bash("ls")).step(text="All done.")
    assert finding(s, "silent_stop", IDLE).verdict == "healthy"


def test_a_new_prompt_after_the_empty_turn_is_not_a_stop() -> None:
    s = Stream().user().step(output_tokens=0).user("carry on")
    assert finding(s, "silent_stop", IDLE).verdict == "healthy"
