"""The evaluation baselines do what the rules they copy say, and nothing else: OpenHands'
StuckDetector and OpenCode's doom-loop guard, over the same streams octel reads."""

from __future__ import annotations

from detstreams import Stream, bash, edit, read
from hypothesis import given
from hypothesis import strategies as st

from detectors.baselines import BASELINES, evaluate_baseline
from detectors.baselines.opencode_guard import OpenCodeDoomGuard
from detectors.baselines.openhands import OpenHandsStuck
from detectors.evaluation import LabelledRun
from detectors.model import Message


def _fire(b: OpenHandsStuck | OpenCodeDoomGuard, messages: list[Message]) -> tuple[str, int] | None:
    for m in messages:
        b.feed(m)
    return (b.fired.rule, b.fired.seen) if b.fired else None


def test_openhands_same_action_and_observation_four_times() -> None:
    s = Stream().user()
    for _ in range(4):
        s.step(bash("make"))
    assert _fire(OpenHandsStuck(), s.messages) == ("repeating_action_observation", 5)
    s3 = Stream().user()
    for _ in range(3):
        s3.step(bash("make"))
    assert _fire(OpenHandsStuck(), s3.messages) is None


def test_openhands_same_action_failing_three_times() -> None:
    s = Stream().user()
    for _ in range(3):
        s.step(read("/x", error="File not found: /x"))
    assert _fire(OpenHandsStuck(), s.messages) == ("repeating_action_error", 4)


def test_openhands_compares_the_thought_too() -> None:
    s = Stream().user()
    for k in range(4):
        s.step(bash("make"), text=f"try {k}")
    assert _fire(OpenHandsStuck(), s.messages) is None


def test_openhands_monologue_and_alternation() -> None:
    s = Stream().user()
    for _ in range(3):
        s.step(text="I will fix it.")
    assert _fire(OpenHandsStuck(), s.messages) == ("monologue", 4)
    a = Stream().user()
    for _ in range(3):
        a.step(bash("make")).step(read("/a"))
    fired = _fire(OpenHandsStuck(), a.messages)
    assert fired is not None and fired[0] == "repeating_action_observation_pattern"


def test_opencode_guard_sees_one_message_only() -> None:
    across = Stream().user()
    for _ in range(6):
        across.step(bash("make"))
    assert _fire(OpenCodeDoomGuard(), across.messages) is None
    inside = Stream().user().step(bash("make"), bash("make"), bash("make"))
    assert _fire(OpenCodeDoomGuard(), inside.messages) == ("doom_loop_ask", 2)


@given(st.lists(st.lists(st.sampled_from(["a", "b", "c"]), min_size=0, max_size=2), max_size=30))
def test_opencode_guard_never_fires_on_two_calls_a_message(steps: list[list[str]]) -> None:
    s = Stream().user()
    for cmds in steps:
        s.step(*[bash(c) for c in cmds])
    assert _fire(OpenCodeDoomGuard(), s.messages) is None


@given(st.lists(st.integers(0, 40), min_size=1, max_size=40))
def test_openhands_never_fires_while_every_call_changes_a_file(ns: list[int]) -> None:
    s = Stream().user()
    for k, n in enumerate(ns):
        s.step(edit("a.py", n * 100 + k))  # every action differs
    assert _fire(OpenHandsStuck(), s.messages) is None


def test_scores_count_flags_alarms_and_lag() -> None:
    stuck = Stream().user().step(bash("ls"))
    for _ in range(4):
        stuck.step(bash("make"))
    healthy = Stream().user().step(bash("a"), bash("a"), bash("a"))
    runs = [
        LabelledRun("s", "doom_loop", stuck.messages, pattern_start=2),
        LabelledRun("h", "healthy", healthy.messages),
    ]
    oh = evaluate_baseline("openhands", runs, BASELINES["openhands"][1])
    assert (oh.flagged, oh.right_pattern, oh.false_alarms, oh.mean_lag) == (1, 1, (), 3.0)
    oc = evaluate_baseline("opencode_guard", runs, BASELINES["opencode_guard"][1])
    assert (oc.flagged, oc.false_alarms) == (0, ("h",))
