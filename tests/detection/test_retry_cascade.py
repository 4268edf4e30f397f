"""Retry cascade: failing runs, the same error with new arguments, provider errors, retries."""

from __future__ import annotations

from detstreams import Stream, bash, call, edit, read

from detectors import Finding, dominant, score
from detectors.model import Message, Retry, StatusSample

NOT_FOUND = "Could not find oldString in the file."


def cascade(s: Stream, status: tuple[StatusSample, ...] = ()) -> Finding:
    found = score(s.messages, status=status, include_healthy=True)
    return next(f for f in found if f.detector == "retry_cascade")


def test_a_run_of_different_failing_calls_is_stuck() -> None:
    s = Stream().user()
    for i in range(6):
        s.step(bash(f"make t{i}", exit=2))
    f = cascade(s)
    assert f.verdict == "stuck"
    assert f.start_index == 1


def test_a_success_breaks_the_run() -> None:
    s = Stream().user()
    for i in range(6):
        s.step(bash(f"make t{i}", exit=2)).step(bash("ls"))
    assert cascade(s).verdict == "healthy"


def test_the_same_error_with_varying_arguments_is_stuck() -> None:
    s = Stream().user()
    for i in range(5):
        s.step(read("src/app.py"))
        s.step(
            call("edit", {"filePath": "src/app.py", "oldString": f"v{i}"}, status="error", error=NOT_FOUND)
        )
    f = cascade(s)
    assert f.verdict == "stuck"
    assert f.evidence["signal"] == "same_error"
    assert f.evidence["count"] == 5


def test_a_file_change_between_failures_is_progress() -> None:
    s = Stream().user()
    for i in range(6):
        s.step(bash("pytest -q", exit=1)).step(edit("src/a.py", i))
    assert cascade(s).verdict == "healthy"


def test_bash_failures_of_different_programs_are_different_errors() -> None:
    s = Stream().user()
    for i in range(2):  # four bash exits with status 1, but two programs
        s.step(bash(f"grep -n x{i} src", exit=1)).step(read(f"f{i}")).step(bash(f"test -f f{i}", exit=1))
        s.step(read(f"g{i}"))
    assert cascade(s).verdict == "healthy"


def test_provider_errors_in_a_row_are_stuck() -> None:
    s = Stream().user().repeat(3, error="APIError")
    assert cascade(s).verdict == "stuck"


def test_an_abort_is_not_a_provider_error() -> None:
    s = Stream().user().repeat(3, error="MessageAbortedError")
    assert cascade(s).verdict == "healthy"


def test_retry_attempts_from_the_status_history() -> None:
    s = Stream().user().step(text="hi")
    samples = tuple(StatusSample("retry", attempt=a, t=float(a)) for a in (1, 2, 3, 4, 5))
    f = cascade(s, samples)
    assert f.verdict == "stuck"
    assert f.evidence == {
        "signal": "retries",
        "attempt": 5,
        "message": "",
        "gave_up": False,
        "message_ids": [],
    }
    assert f.start_index == -1  # no empty step to pin it on
    assert cascade(s, samples[:3]).verdict == "suspect"
    assert cascade(s, samples[:2]).verdict == "healthy"


def test_provider_retries_point_at_the_empty_step_and_are_the_named_pattern() -> None:
    # a provider answering 529 until the driver gives up: the retried step stays empty
    s = Stream().user().step(read("a.py")).step()
    samples = tuple(StatusSample("retry", attempt=a, t=float(a), message="Overloaded") for a in range(1, 8))
    samples += (StatusSample("idle", t=9.0),)
    found = score(s.messages, status=samples)
    f = next(x for x in found if x.detector == "retry_cascade")
    assert f.verdict == "stuck" and f.start_index == 2 and f.evidence["message_ids"] == ["msg_0002"]
    named = dominant(found)
    assert named is not None and named.detector == "retry_cascade"
    assert {x.detector for x in found} >= {"retry_cascade", "silent_stop"}


def test_exit_codes_that_answer_are_not_failures() -> None:
    s = Stream().user()
    for cmd in (
        "grep -n TODO app.py",
        "diff a.py b.py",
        "test -f setup.py",
        "git diff --quiet",
        "cat x | grep -c import",
        "rg FIXME src",
    ):
        s.step(bash(cmd, exit=1, output=""))
    hello = "Hi dev! You've successfully authenticated, but GitHub does not provide shell access."
    s.step(bash("ssh -T git@github.com", exit=1, output=hello))
    assert cascade(s).verdict == "healthy"
    s = Stream().user()
    for cmd in ("grep -n TODO app.py", "diff a.py b.py", "ssh -T git@github.com", "python -m pytest", "make"):
        s.step(bash(cmd, exit=2, output="error"))
    assert cascade(s).verdict != "healthy"  # exit 2 is trouble for grep and diff too


def test_retry_parts_count_like_status_retries() -> None:
    s = Stream().user()
    s.messages.append(s.messages[0].__class__("m", "assistant", 1, (Retry("p", 5, "overloaded"),)))
    assert cascade(s).verdict == "stuck"


def test_a_poll_failing_while_it_waits_is_not_a_cascade() -> None:
    s = Stream().user().repeat(10, bash("sleep 2 && curl -sf localhost:3000/health", exit=7))
    assert cascade(s).verdict == "healthy"


def test_retries_after_which_the_run_ended_on_a_provider_error_are_stuck() -> None:
    s = Stream().user()
    for a in (1, 2, 3):
        s.messages.append(Message(f"sys_{a}", "system", len(s.messages), (Retry(f"r{a}", a, "Overloaded"),)))
    s.step(error="APIError")
    f = cascade(s)
    assert f.verdict == "stuck" and f.evidence["gave_up"] is True and f.evidence["attempt"] == 3
    s.step(bash("ls"), text="Back.")  # it came back: three retries alone are only suspect
    assert cascade(s).verdict == "suspect"
