"""The patterns real sessions showed: a turn cut by the output limit, the same plan repeated
inside one turn, a command that hit its timeout before the run stalled, and whitespace variants
of one call."""

from __future__ import annotations

from dataclasses import replace

from detstreams import Stream, bash, call, read
from hypothesis import given
from hypothesis import strategies as st

from detectors import Finding, dominant, score
from detectors.commands import exit_is_answer, is_interactive
from detectors.model import StatusSample

IDLE = (StatusSample("idle", t=1.0),)
PLAN = "First I will read the parser. Then I will write a test for the failing case with spaces. "


def find(s: Stream, name: str, status: tuple[StatusSample, ...] = IDLE) -> Finding:
    return next(f for f in score(s.messages, status=status, include_healthy=True) if f.detector == name)


def test_a_long_answer_cut_by_the_output_limit_that_ends_the_run() -> None:
    s = Stream().user().step(read("a.py")).step(text="Here is the plan: " + "step. " * 50, finish="length")
    f = find(s, "output_limit")
    assert f.verdict == "stuck" and f.start_index == 2 and f.evidence["finish"] == "length"
    assert find(s, "output_limit", (StatusSample("busy", t=1.0),)).verdict == "suspect"
    s.step(read("b.py")).step(text="Done.")  # it carried on: recovered
    assert find(s, "output_limit").verdict == "healthy"


def test_an_empty_turn_cut_by_the_limit_is_a_silent_stop_not_an_output_limit() -> None:
    s = Stream().user().step(read("a.py")).step(reasoning="thinking", finish="length")
    assert find(s, "output_limit").verdict == "healthy"
    assert find(s, "silent_stop").verdict == "stuck"


def test_the_same_plan_repeated_inside_one_turn() -> None:
    s = Stream().user().step(text="Plan:\n\n" + "\n\n".join([PLAN] * 12), finish="length")
    found = score(s.messages, status=IDLE)
    f = next(x for x in found if x.detector == "turn_repetition")
    assert f.verdict == "stuck" and f.evidence["repeats"] == 12 and f.start_index == 1
    named = dominant(found)
    assert named is not None and named.detector == "turn_repetition"  # the cause, not the limit


def test_a_long_answer_with_similar_lines_is_not_repetition() -> None:
    names = ["parse", "load"] * 20
    lines = [f"- `app.{w}` handles case {k} of the parser input" for k, w in enumerate(names)]
    s = Stream().user().step(text="\n".join(lines))
    assert find(s, "turn_repetition").verdict == "healthy"


@given(st.lists(st.text(alphabet="abc .", max_size=40), max_size=30))
def test_repetition_counts_never_exceed_the_sentences(parts: list[str]) -> None:
    s = Stream().user().step(text=" ".join(parts))
    f = find(s, "turn_repetition")
    assert f.evidence.get("repeats", 0) <= len(parts) + 1


def _timed_out(cmd: str) -> Stream:
    c = replace(bash(cmd, output="(no output)"), exit_code=None, timed_out=True)
    return Stream().user().step(read("a.py")).step(c)


def test_a_command_hitting_its_timeout_then_a_stall() -> None:
    s = _timed_out("git commit").step(error="MessageAbortedError", completed=True)
    f = find(s, "command_timeout")
    assert f.verdict == "stuck" and f.start_index == 2
    assert f.evidence["interactive"] is True and f.evidence["stalled_steps"] == 1
    found = score(s.messages, status=IDLE)
    named = dominant(found)
    assert named is not None and named.detector == "command_timeout"


def test_a_timeout_the_agent_recovers_from_is_healthy() -> None:
    s = _timed_out("sleep 3 && make").step(bash("sleep 3 && make", output="built"), text="With more time.")
    assert find(s, "command_timeout").verdict == "healthy"
    # the rerun alone, no text: a call that waits is still the agent carrying on
    s = _timed_out("sleep 3 && make").step(bash("sleep 3 && make", output="built")).step(text="Built.")
    assert find(s, "command_timeout").verdict == "healthy"


def test_a_timeout_left_as_the_last_thing_is_suspect_while_busy_and_stuck_once_idle() -> None:
    s = _timed_out("gh auth login")
    assert find(s, "command_timeout", (StatusSample("busy", t=1.0),)).verdict == "suspect"
    assert find(s, "command_timeout").verdict == "stuck"


def test_interactive_commands() -> None:
    for cmd in (
        "git commit",
        "git -c user.name=x commit --allow-empty",
        "gh auth login",
        "vim notes.md",
        "git rebase -i HEAD~3",
        "git tag -a v1",
        "npm init",
    ):
        assert is_interactive(cmd), cmd
    for cmd in ("git commit -m 'x'", "git commit --no-edit --amend", "git tag v1", "npm init -y", "ls -la"):
        assert not is_interactive(cmd), cmd


def test_exit_codes_that_answer() -> None:
    assert exit_is_answer("grep -q x f", 1, "")
    assert exit_is_answer("cd src && rg TODO", 1, "")
    assert exit_is_answer("FOO=1 diff a b", 1, "")
    assert exit_is_answer("git diff --quiet", 1, "")
    assert exit_is_answer("ssh -T git@github.com", 1, "Hi x! You've successfully authenticated")
    assert not exit_is_answer("ssh -T git@github.com", 1, "Permission denied (publickey).")
    assert not exit_is_answer("grep x f", 2, "")
    assert not exit_is_answer("grep x f | wc -l && make", 1, "")
    assert not exit_is_answer("pytest -q", 1, "")


def test_whitespace_and_key_order_variants_are_one_call() -> None:
    forms = ["cd x && npm test", "cd x  && npm test", "cd x &&  npm  test ", "cd  x && npm test"]
    s = Stream().user()
    for k in range(6):  # and a description that comes and goes: the command is the call
        args = {"command": forms[k % 4], "description": "Run"} if k % 3 else {"command": forms[k % 4]}
        s.step(call("bash", args if k % 2 else dict(reversed(args.items())), exit=1, output="npm ERR!"))
    found = score(s.messages)
    named = dominant(found)
    assert named is not None and named.detector == "doom_loop" and named.verdict == "stuck"


def test_cycles_of_three_and_four_through_text_and_reasoning_are_stuck() -> None:
    for period in (3, 4):
        calls = [read("a.py"), bash("grep -n split a.py"), bash("python -c 'import a'", exit=1), read("b.py")]
        s = Stream().user()
        for k in range(3 * period):
            s.step(
                calls[k % period],
                text="Let me check." if k % 2 else None,
                reasoning="Maybe the split." if k % 3 == 0 else None,
            )
        f = find(s, "doom_loop")
        assert f.verdict == "stuck" and f.evidence["period"] == period, period


WORDS = st.sampled_from(["ls", "-la", "src", "&&", "npm", "test", "|", "grep", "x"])


@given(
    st.lists(WORDS, min_size=1, max_size=8),
    st.lists(st.sampled_from([" ", "  ", "\t", "\n"]), min_size=8, max_size=8),
)
def test_whitespace_never_makes_two_calls_differ(words: list[str], gaps: list[str]) -> None:
    import json

    from detectors.digest import call_signature

    plain = " ".join(words)
    spaced = gaps[0] + "".join(w + gaps[i % len(gaps)] for i, w in enumerate(words))
    a = call_signature("bash", json.dumps({"command": plain}, sort_keys=True, separators=(",", ":")))
    b = call_signature(
        "bash", json.dumps({"command": spaced, "description": "x"}, sort_keys=True, separators=(",", ":"))
    )
    assert a == b


@given(st.sampled_from(["grep", "rg", "diff", "cmp", "test", "pytest", "make", "npm"]), st.integers(0, 3))
def test_only_the_deciding_program_and_status_make_an_answer(prog: str, status: int) -> None:
    answer = exit_is_answer(f"cd src && {prog} x y", status, "")
    assert answer == (status == 1 and prog in {"grep", "rg", "diff", "cmp", "test"})
    assert not exit_is_answer(f"{prog} x y && make", status, "")  # make decides the status
