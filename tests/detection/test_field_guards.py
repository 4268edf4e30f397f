"""Patterns real runs of both agents showed, each with the healthy run it must not be confused
with: a thrash with small edits between identical failures (and a build failing four times,
then fixed); retries of an overloaded provider ending empty (named retry_cascade, not
silent_stop); a turn that announces work and stops; a turn narrating its searches ("Now let
me …") that is no repetition; polling a running build that is no loop."""

from __future__ import annotations

from detstreams import Stream, bash, edit, read
from hypothesis import given
from hypothesis import strategies as st

from detectors import Finding, Probe, dominant, score, worst_verdict
from detectors.model import StatusSample

IDLE = (StatusSample("idle", t=9.0),)
FAIL = "src/parser.ts(12,5): error TS2304: Cannot find name 'Token'.\nFound 1 error."


def _by_name(s: Stream, status: tuple[StatusSample, ...] = IDLE) -> dict[str, Finding]:
    return {f.detector: f for f in score(s.messages, status=status, include_healthy=True)}


def _thrash(tries: int, *, fixed: bool, varied: bool = False) -> Stream:
    s = Stream().user("make the build pass")
    for i in range(tries):
        out = FAIL.replace("12,5", f"{12 + i},5").replace("Token", f"Token{i}") if varied else FAIL
        s.step(bash("npm run build", exit=2, output=out))
        s.step(edit("src/parser.ts", i), text="A small change.")
    if fixed:
        s.step(bash("npm run build", exit=0, output="Build succeeded"))
    return s.step(text="Done." if fixed else "Still failing.")


@given(st.integers(min_value=5, max_value=12))
def test_identical_failures_with_small_edits_between_are_a_thrash(tries: int) -> None:
    found = _by_name(_thrash(tries, fixed=False))
    f = found["doom_loop"]
    assert f.verdict == "stuck" and f.evidence["signal"] == "thrash" and f.evidence["repetitions"] == tries
    named = dominant(found.values())
    assert named is not None and named.detector == "doom_loop"


@given(st.integers(min_value=1, max_value=12))
def test_a_build_that_fails_then_is_fixed_is_not_stuck(tries: int) -> None:
    assert _by_name(_thrash(tries, fixed=True))["doom_loop"].verdict == "healthy"


@given(st.integers(min_value=2, max_value=12))
def test_a_build_failing_differently_each_time_is_being_fixed(tries: int) -> None:
    assert _by_name(_thrash(tries, fixed=False, varied=True))["doom_loop"].verdict == "healthy"


def test_a_build_failing_four_times_then_fixed_is_healthy_at_the_end() -> None:
    s = _thrash(4, fixed=True)
    assert worst_verdict(_by_name(s).values()) == "healthy"
    p = Probe()
    for m in s.messages:
        p.feed(m)
        assert worst_verdict(p.findings()) != "stuck"  # not even on the way


def test_the_same_known_failure_now_and_then_in_a_long_session_is_no_thrash() -> None:
    s = Stream().user()
    for i in range(8):
        s.step(bash("pytest -q tests/test_slow.py", exit=1, output="1 failed"))
        for k in range(5):
            s.step(read(f"src/m{i}_{k}.py"))
        s.step(edit(f"src/m{i}.py", i))
    assert _by_name(s)["doom_loop"].verdict == "healthy"


@given(st.integers(min_value=1, max_value=8))
def test_retries_of_an_overloaded_provider_ending_empty_are_a_retry_cascade(attempts: int) -> None:
    s = Stream().user().step(read("a.py")).step(output_tokens=0)
    status = (
        StatusSample("busy", t=0.0),
        *(StatusSample("retry", n, t=float(n), message="Overloaded") for n in range(1, attempts + 1)),
        StatusSample("idle", t=99.0),
    )
    found = score(s.messages, status=status)
    named = dominant(found)
    assert named is not None and named.detector == "retry_cascade" and named.verdict == "stuck"
    assert named.evidence["gave_up"] is True


def test_a_retry_that_recovered_is_healthy() -> None:
    s = Stream().user().step(read("a.py")).step(text="All done.")
    status = (StatusSample("retry", 1, t=1.0, message="Overloaded"), StatusSample("idle", t=9.0))
    assert worst_verdict(score(s.messages, status=status)) == "healthy"


@given(
    st.sampled_from(["Let me run the tests.", "Now I'll fix the import:", "Next, let me check the config."])
)
def test_a_last_turn_that_only_announces_work_is_a_silent_stop(announce: str) -> None:
    s = Stream().user().step(read("a.py")).step(text=f"I see the problem. {announce}")
    f = _by_name(s)["silent_stop"]
    assert f.verdict == "stuck" and f.evidence["signal"] == "announced"
    assert _by_name(s, (StatusSample("busy", t=1.0),))["silent_stop"].verdict == "healthy"


def test_announcing_twice_until_a_person_says_proceed_is_stuck_without_status() -> None:
    s = Stream().user()
    s.step(text="Let me look at the parser.").user("proceed").step(text="Now let me fix it.").user("continue")
    s.step(read("parser.py"))
    f = _by_name(s, ())["silent_stop"]
    assert f.verdict == "stuck" and f.evidence["nudged"] == 2 and f.start_index == 1


def test_a_final_summary_or_question_is_no_announcement() -> None:
    for text in ("Fixed the parser and the tests pass. Let me know if you want more.", "Shall I go on?"):
        s = Stream().user().step(read("a.py")).step(text=text)
        assert _by_name(s)["silent_stop"].verdict == "healthy", text


@given(st.integers(min_value=4, max_value=20))
def test_narrating_each_search_is_no_turn_repetition(searches: int) -> None:
    """An Explore subagent's one turn: "Now let me search for more files." before each grep."""
    calls = [bash(f"grep -rn 'name{i}' src") for i in range(searches)]
    text = " ".join(["Now let me search for more files that use the parser."] * searches)
    s = Stream().user().step(*calls, text=text).step(text="Found them all.")
    assert _by_name(s)["turn_repetition"].verdict == "healthy"


def test_the_same_sentence_far_more_often_than_the_calls_is_still_repetition() -> None:
    text = " ".join(["I will now write the test for the failing case."] * 12)
    s = Stream().user().step(bash("ls"), text=text, finish="length")
    assert _by_name(s)["turn_repetition"].verdict == "stuck"


@given(st.integers(min_value=3, max_value=15))
def test_polling_a_running_build_whose_answer_moves_is_not_a_loop(polls: int) -> None:
    s = Stream().user().step(bash("npm run build &"))
    for i in range(polls):
        s.step(bash("tail -n 1 build.log", output=f"compiled {i + 1} of {polls + 1} modules"))
    s.step(bash("tail -n 1 build.log", output="Build succeeded")).step(text="Built.")
    found = _by_name(s)
    assert found["doom_loop"].verdict != "stuck" and found["no_progress"].verdict != "stuck"
