"""The probe: incremental equals batch for any stream and interleaving; scores fall when a
repetition is broken; arbitrary streams never crash; the registry serves add-ons too."""

from __future__ import annotations

import json
from typing import Any

import pytest
from detstreams import Stream, bash, call, read
from hypothesis import given, settings
from hypothesis import strategies as st

import detectors
from detectors import REGISTRY, Detector, Finding, Probe, Registry, Thresholds, score, worst_verdict
from detectors.model import (
    Compaction,
    Message,
    Part,
    Patch,
    PermissionEvent,
    Reasoning,
    Retry,
    StatusSample,
    StepFinish,
    Text,
    ToolCall,
)

_tools = st.sampled_from(["bash", "read", "edit", "invalid", "write", "grep"])
_inputs = st.sampled_from(['{"command":"ls"}', '{"command":"sleep 5"}', '{"filePath":"a"}', "{}", '{"x":1}'])
_status = st.sampled_from(["pending", "running", "completed", "error"])
_errors = st.sampled_from(["", "File not found: /a", "rule which prevents you", "Tool execution aborted"])


@st.composite
def _part(draw: st.DrawFn, k: int) -> Part:
    pid = f"p{k}"
    kind = draw(st.integers(0, 7))
    if kind <= 2:
        return ToolCall(
            pid,
            draw(_tools),
            draw(_inputs),
            draw(_status),
            "out",
            draw(_errors),
            draw(st.sampled_from([None, 0, 1, 2])),
        )
    if kind == 3:
        return Text(pid, draw(st.sampled_from(["same", "other", " ", "Same  "])), draw(st.booleans()))
    if kind == 4:
        return Reasoning(pid, draw(st.sampled_from(["", "think"])))
    if kind == 5:
        return StepFinish(pid, draw(st.sampled_from(["stop", "tool-calls"])), draw(st.integers(0, 5)))
    if kind == 6:
        return Patch(pid, draw(st.sampled_from([(), ("a.py",)])))
    return draw(st.sampled_from([Compaction(pid, True, True), Retry(pid, draw(st.integers(0, 6)))]))


@st.composite
def messages(draw: st.DrawFn) -> list[Message]:
    out = []
    for i in range(draw(st.integers(0, 40))):
        parts = tuple(draw(_part(k)) for k in range(draw(st.integers(0, 4))))
        out.append(
            Message(
                f"m{i}",
                draw(st.sampled_from(["user", "assistant", "assistant", "assistant"])),
                i,
                parts,
                finish=draw(st.sampled_from([None, "stop", "tool-calls"])),
                error=draw(st.sampled_from([None, None, None, "APIError", "ContextOverflowError"])),
                output_tokens=draw(st.integers(0, 3)),
                completed=draw(st.booleans()),
            )
        )
    return out


statuses = st.lists(
    st.builds(
        StatusSample,
        st.sampled_from(["busy", "retry", "idle"]),
        st.integers(0, 7),
        st.one_of(st.none(), st.floats(0, 100)),
        st.just(""),
        st.lists(st.sampled_from(["r1", "r2", "r3"]), max_size=2).map(tuple),
    ),
    max_size=15,
)
permissions = st.lists(
    st.builds(
        PermissionEvent,
        st.sampled_from(["asked", "replied"]),
        st.sampled_from(["r1", "r2", "r3"]),
        st.sampled_from(["bash", "doom_loop", "read"]),
        st.just(("*",)),
        st.sampled_from(["once", "reject", "always"]),
    ),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(messages(), statuses, permissions, st.data())
def test_incremental_equals_batch(
    msgs: list[Message], stat: list[StatusSample], perms: list[PermissionEvent], data: st.DataObject
) -> None:
    batch = score(msgs, status=stat, permissions=perms, include_healthy=True)
    probe = Probe()
    queues: list[list[Any]] = [list(msgs), list(stat), list(perms)]
    feeders = [probe.feed, probe.feed_status, probe.feed_permission]
    while any(queues):
        k = data.draw(st.sampled_from([i for i, q in enumerate(queues) if q]))
        feeders[k](queues[k].pop(0))
        if data.draw(st.booleans()):
            probe.findings(include_healthy=True)  # asking must not change anything
    assert probe.findings(include_healthy=True) == batch
    assert probe.findings() == [f for f in batch if f.verdict != "healthy"]


@settings(max_examples=150, deadline=None)
@given(messages(), statuses, permissions)
def test_findings_are_well_formed(
    msgs: list[Message], stat: list[StatusSample], perms: list[PermissionEvent]
) -> None:
    ids = {m.id for m in msgs}
    for f in score(msgs, status=stat, permissions=perms, include_healthy=True):
        assert f.verdict in detectors.VERDICTS
        assert 0.0 <= f.score <= 1.0
        assert -1 <= f.start_index < max(1, len(msgs))
        assert set(f.evidence.get("message_ids", ())) <= ids
        assert json.loads(json.dumps(f.to_dict())) == f.to_dict()
        assert Finding.from_dict(json.loads(json.dumps(f.to_dict()))).to_dict() == f.to_dict()


BREAKS = {
    # detector: (the repeated step, a step that breaks the repetition)
    "doom_loop": (lambda s: s.step(bash("ls")), lambda s: s.step(bash("cat README"))),
    "empty_reasoning": (lambda s: s.step(reasoning="hm", output_tokens=0), lambda s: s.step(text="I see.")),
    "monologue": (lambda s: s.step(text="Same again."), lambda s: s.step(read("x"))),
    "retry_cascade": (lambda s: s.step(bash("make", exit=2)), lambda s: s.step(bash("ls"))),
}


@pytest.mark.parametrize("name", sorted(BREAKS))
@settings(deadline=None)
@given(n=st.integers(3, 9), cut=st.integers(1, 8))
def test_breaking_a_repetition_lowers_the_score(name: str, n: int, cut: int) -> None:
    rep, brk = BREAKS[name]
    whole, broken = Stream().user(), Stream().user()
    cut = min(cut, n - 1)
    for i in range(n):
        rep(whole)
        if i == cut:
            brk(broken)
        rep(broken)

    def value(s: Stream) -> float:
        return next(f.score for f in score(s.messages, include_healthy=True) if f.detector == name)

    longest = Stream().user()
    for _ in range(max(cut, n - cut)):
        rep(longest)
    assert value(broken) <= value(whole)
    if name != "doom_loop":  # (the doom loop also sees the pieces as a longer cycle, scored lower)
        assert value(broken) == pytest.approx(value(longest))  # only the longest piece counts
    if value(whole) < 1.0:
        assert value(broken) < value(whole)


def test_score_returns_only_what_is_not_healthy_by_default() -> None:
    s = Stream().user().step(text="hi")
    assert score(s.messages) == []
    everything = score(s.messages, include_healthy=True)
    assert [f.detector for f in everything] == list(REGISTRY.names())
    assert worst_verdict(everything) == "healthy"


def test_worst_verdict() -> None:
    f = [Finding("a", "suspect", 0.5), Finding("b", "stuck", 1.0), Finding("c", "healthy", 0.0)]
    assert worst_verdict(f) == "stuck"
    assert worst_verdict(f[::2]) == "suspect"
    assert worst_verdict([]) == "healthy"


def test_built_in_detectors_are_registered_like_add_ons() -> None:
    assert set(REGISTRY.names()) == {
        "doom_loop",
        "retry_cascade",
        "permission_deadlock",
        "empty_reasoning",
        "monologue",
        "compaction_loop",
        "silent_stop",
        "no_progress",
        "output_limit",
        "turn_repetition",
        "command_timeout",
    }
    with pytest.raises(ValueError, match="already registered"):
        REGISTRY.register("doom_loop", "again")(lambda th: Detector(th))


def test_an_add_on_detector_runs_through_the_probe() -> None:
    reg = Registry()

    @reg.register("calls", "counts tool calls")
    class Calls(Detector):
        name = "calls"

        def __init__(self, th: Thresholds) -> None:
            super().__init__(th)
            self.n = 0

        def feed(self, turn: Any) -> None:
            self.n += len(turn.calls)

        def finding(self) -> Finding:
            return Finding(
                self.name, "stuck" if self.n > 2 else "healthy", min(1.0, self.n / 3), {"n": self.n}
            )

    s = Stream().user().repeat(3, call("read", {"filePath": "a"}))
    assert score(s.messages, registry=reg) == [Finding("calls", "stuck", 1.0, {"n": 3})]
    probe = Probe(registry=reg)
    assert probe.verdict() == "healthy"


def test_a_probe_can_run_a_subset() -> None:
    probe = Probe(only=["doom_loop"])
    for m in Stream().user().repeat(6, bash("ls")).messages:
        probe.feed(m)
    assert [f.detector for f in probe.findings()] == ["doom_loop"]
    with pytest.raises(ValueError, match="unknown detector"):
        Probe(only=["nope"])


def test_thresholds_from_a_mapping() -> None:
    th = Thresholds.from_mapping({"doom_repeat_stuck": "8", "permission_wait_stuck_s": 2})
    assert th.doom_repeat_stuck == 8
    assert th.permission_wait_stuck_s == 2.0
    with pytest.raises(ValueError, match="unknown threshold"):
        Thresholds.from_mapping({"nope": 1})
    assert set(Thresholds.help()) == set(th.to_dict())


def test_peek_shows_an_in_flight_message_without_feeding_it() -> None:
    s = Stream().user().step(bash("ls"), text="x").step(call("bash", {"command": "./m.sh"}, status="running"))
    probe = Probe()
    for m in s.messages[:-1]:
        probe.feed(m)
    probe.feed_status(StatusSample("idle"))
    assert [f.detector for f in probe.peek(s.messages[-1])] == ["permission_deadlock"]
    assert probe.findings() == []
    assert probe.messages_seen == 2


@settings(deadline=None)  # on a loaded machine one example can take longer than the default 200 ms
@given(messages(), statuses, permissions, st.integers(0, 8))
def test_peek_equals_feeding_the_in_flight_message_and_leaves_the_probe_alone(
    msgs: list[Message], stat: list[StatusSample], perms: list[PermissionEvent], cut: int
) -> None:
    """What `peek` answers is what feeding the message would give, and the probe is untouched
    (its copy shares no state with it)."""
    if not msgs:
        return
    cut = min(cut, len(msgs) - 1)
    probe = Probe()
    for m in msgs[:cut]:
        probe.feed(m)
    for s in stat:
        probe.feed_status(s)
    for e in perms:
        probe.feed_permission(e)
    before = probe.findings(include_healthy=True)
    peeked = probe.peek(msgs[cut], include_healthy=True)
    assert probe.findings(include_healthy=True) == before
    assert probe.messages_seen == cut
    probe.feed(msgs[cut])
    assert peeked == probe.findings(include_healthy=True)


def test_peek_works_for_a_detector_defined_in_a_function() -> None:
    """A detector class local to a function does not pickle; peek still copies it."""

    class Local(Detector):
        def __init__(self, th: Thresholds) -> None:
            self.n = 0

        def feed(self, turn: Any) -> None:
            self.n += 1

        def finding(self) -> Finding:
            stuck = self.n >= 2
            return Finding("local", "stuck" if stuck else "healthy", 1.0 if stuck else 0.0, {}, -1)

    reg = Registry()
    reg.register("local", "counts turns")(Local)
    s = Stream().user().step(bash("ls"), text="x")
    probe = Probe(registry=reg)
    probe.feed(s.messages[0])
    assert [f.verdict for f in probe.peek(s.messages[1])] == ["stuck"]
    assert probe.findings() == []


def _fresh(code: str) -> str:
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return r.stdout.strip()


def test_a_verdict_name_alone_loads_no_detector() -> None:
    """`detectors.findings` (a verdict's name, what the store's query models need) imports no
    detector; the registry has every built-in the first time it is read, in their order."""
    got = _fresh(
        "import sys\n"
        "import detectors.findings\n"
        "print(sorted(m for m in sys.modules if m.startswith('detectors')))\n"
        "from detectors.base import REGISTRY\n"
        "print(list(REGISTRY.names()))\n"
    ).splitlines()
    assert got[0] == "['detectors', 'detectors.findings']"
    assert got[1] == repr(list(REGISTRY.names()))
    assert {"doom_loop", "command_timeout", "retry_cascade", "silent_stop"} <= set(REGISTRY.names())


def test_an_add_on_registered_first_still_comes_after_the_built_ins() -> None:
    got = _fresh(
        "from detectors.base import REGISTRY, Detector\n"
        "REGISTRY.register('first_addon', 'x')(Detector)\n"
        "print(list(REGISTRY.names()))\n"
    )
    assert got == repr([*REGISTRY.names(), "first_addon"])
