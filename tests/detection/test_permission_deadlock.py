"""Permission deadlock: unanswered asks, repeated denials, calls hanging while idle."""

from __future__ import annotations

from detstreams import Stream, bash, call

from detectors import Finding, score
from detectors.model import PermissionEvent, StatusSample

DENIED = "The user has specified a rule which prevents you from using this specific tool call."


def deadlock(
    s: Stream, status: tuple[StatusSample, ...] = (), perms: tuple[PermissionEvent, ...] = ()
) -> Finding:
    found = score(s.messages, status=status, permissions=perms, include_healthy=True)
    return next(f for f in found if f.detector == "permission_deadlock")


def ask(rid: str, kind: str = "external_directory", pats: tuple[str, ...] = ("/etc/*",)) -> PermissionEvent:
    return PermissionEvent("asked", rid, kind, pats, call_id="call_1")


def waiting(rid: str, seconds: float, kind: str = "busy") -> tuple[StatusSample, ...]:
    n = int(seconds * 4) + 1
    return tuple(StatusSample(kind, t=k / 4, pending_permissions=(rid,)) for k in range(n))  # type: ignore[arg-type]


def running() -> Stream:
    return Stream().user().step(call("read", {"filePath": "/etc/hosts"}, status="running"), completed=False)


def test_an_ask_left_unanswered_for_long_is_stuck() -> None:
    for kind, pats in (("external_directory", ("/etc/*",)), ("read", (".env",)), ("doom_loop", ("bash",))):
        f = deadlock(running(), waiting("per_1", 40), (ask("per_1", kind, pats),))
        assert f.verdict == "stuck"
        assert f.evidence["permissions"] == [kind]
        assert f.evidence["requests"] == ["per_1"]
        assert f.evidence["waited_s"] == 40.0


def test_a_fresh_ask_is_only_suspect() -> None:
    f = deadlock(running(), waiting("per_1", 1), (ask("per_1"),))
    assert f.verdict == "suspect"


def test_an_ask_answered_is_healthy() -> None:
    perms = (ask("per_1"), PermissionEvent("replied", "per_1", reply="once"))
    assert deadlock(running(), waiting("per_1", 40), perms).verdict == "healthy"


def test_the_reply_may_arrive_before_the_ask_is_seen() -> None:
    perms = (PermissionEvent("replied", "per_1", reply="always"), ask("per_1"))
    assert deadlock(running(), waiting("per_1", 40), perms).verdict == "healthy"


def test_an_ask_unanswered_when_the_session_went_idle_is_stuck() -> None:
    f = deadlock(running(), (StatusSample("busy", t=0.0), StatusSample("idle", t=0.5)), (ask("per_1"),))
    assert f.verdict == "stuck"


def test_another_sessions_pending_ask_does_not_count() -> None:
    assert deadlock(running(), waiting("per_other", 40), (ask("per_1"),)).verdict == "suspect"


def test_repeated_denials() -> None:
    s = Stream().user()
    for i in range(4):
        s.step(call("bash", {"command": f"rm -rf b{i}"}, status="error", error=DENIED))
    f = deadlock(s)
    assert f.verdict == "stuck"
    assert f.evidence["signal"] == "denials"
    assert (
        deadlock(Stream().user().repeat(2, call("bash", {}, status="error", error=DENIED))).verdict
        == "healthy"
    )


def test_denials_far_apart_with_work_between_are_no_deadlock() -> None:
    """A person who says no now and then, while the agent gets on with other calls (a published
    Claude Code session: three refusals over a hundred messages of work), is not a deadlock;
    the same refusals with too little work between them still are."""

    def refusals(work_between: int) -> Stream:
        s = Stream().user()
        for i in range(3):
            s.step(call("bash", {"command": f"docker run {i}"}, status="error", error=DENIED))
            for j in range(work_between):
                s.step(bash(f"ls d{i}{j}"))
        return s

    assert deadlock(refusals(3)).verdict == "healthy"
    assert deadlock(refusals(2)).verdict == "stuck"


def test_what_was_stuck_stays_stuck_when_work_follows() -> None:
    s = Stream().user()
    for i in range(3):
        s.step(call("bash", {"command": f"rm -rf b{i}"}, status="error", error=DENIED))
    for j in range(5):
        s.step(bash(f"ls {j}"))
    assert deadlock(s).verdict == "stuck"


def test_rejected_replies_count_as_denials() -> None:
    perms: list[PermissionEvent] = []
    for i in range(3):
        perms += [ask(f"per_{i}"), PermissionEvent("replied", f"per_{i}", reply="reject")]
    assert deadlock(Stream().user(), (), tuple(perms[:4])).verdict == "healthy"
    assert deadlock(Stream().user(), (), tuple(perms)).verdict == "stuck"


def test_a_call_running_while_the_session_idles_is_stuck() -> None:
    s = Stream().user().step(bash("ls"), text="x").step(call("bash", {"command": "./m.sh"}, status="running"))
    f = deadlock(s, (StatusSample("busy"), StatusSample("idle")))
    assert f.verdict == "stuck"
    assert f.evidence["signal"] == "hanging_calls"
    assert f.start_index == 2


def test_a_long_running_call_while_busy_is_a_long_build_not_a_deadlock() -> None:
    s = Stream().user().step(call("bash", {"command": "make"}, status="running"), completed=False)
    samples = tuple(StatusSample("busy", t=k / 4) for k in range(400))
    assert deadlock(s, samples).verdict == "healthy"


def test_the_wait_is_a_named_setting() -> None:
    from detectors import Thresholds

    found = score(
        running().messages,
        status=waiting("per_1", 6),
        permissions=(ask("per_1"),),
        thresholds=Thresholds(permission_wait_stuck_s=5),
    )
    assert [f.verdict for f in found] == ["stuck"]


def test_the_ask_points_at_the_message_of_the_call_it_holds_up() -> None:
    s = Stream().user().step(bash("ls"), text="first")
    s.step(call("bash", {"command": "rm -rf /tmp/x"}, status="running"), completed=False)
    call_id = s.messages[-1].parts[0].call_id  # type: ignore[union-attr]
    event = PermissionEvent("asked", "per_9", "bash", ("rm *",), call_id=call_id)
    assert deadlock(s, waiting("per_9", 40), (event,)).start_index == 2
