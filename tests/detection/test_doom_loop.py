"""Doom loop: repeats, same failures and short cycles fire; polling and test-fix-test do not."""

from __future__ import annotations

from detstreams import Stream, bash, call, edit, read
from hypothesis import given
from hypothesis import strategies as st

from detectors import Finding, Thresholds, score


def doom(s: Stream, th: Thresholds | None = None) -> Finding:
    return next(
        f for f in score(s.messages, include_healthy=True, thresholds=th) if f.detector == "doom_loop"
    )


def test_identical_calls_across_messages_are_stuck() -> None:
    s = Stream().user().repeat(6, bash("git status --short"))
    f = doom(s)
    assert f.verdict == "stuck"
    assert f.start_index == 1
    assert f.evidence["repetitions"] == 6
    assert f.evidence["signature"] == ['bash {"command":"git status --short"}']
    assert len(f.evidence["message_ids"]) == 6
    assert f.evidence["active"] is True


def test_text_between_the_calls_does_not_hide_the_loop() -> None:
    s = Stream().user()
    for i in range(5):
        s.step(bash("make"), text=f"Trying again ({i}).")
        s.step(text="Hmm.")
    assert doom(s).verdict == "stuck"


def test_key_order_of_the_input_is_ignored() -> None:
    a = call("grep", {"pattern": "x", "path": "src"})
    b = call("grep", {"path": "src", "pattern": "x"})
    s = Stream().user()
    for i in range(6):
        s.step(a if i % 2 else b)
    assert doom(s).verdict == "stuck"


def test_the_same_call_failing_the_same_way_is_stuck_sooner() -> None:
    failing = read("/x/missing.py", error="File not found: /x/missing.py")
    assert doom(Stream().user().repeat(3, failing)).verdict == "stuck"
    assert doom(Stream().user().step(*[read("/x/present.py")] * 3)).verdict == "suspect"


def test_the_same_call_made_again_turn_after_turn_is_stuck_at_the_third_turn() -> None:
    # each time after reading the same answer: surer than three copies made at once in one turn
    same = read("/x/present.py")
    assert doom(Stream().user().repeat(2, same)).verdict == "healthy"
    assert doom(Stream().user().repeat(3, same)).verdict == "stuck"
    assert doom(Stream().user().step(same, same).step(same)).verdict == "suspect"
    # answered differently each time: something is changing, polling limits apply
    s = Stream().user()
    for word in ("starting", "compiling", "linking"):
        s.step(call("read", {"filePath": "/x/build.log"}, output=word))
    assert doom(s).verdict == "healthy"


@given(turns=st.lists(st.integers(1, 4), min_size=1, max_size=6), text=st.booleans())
def test_the_same_answer_read_again_is_stuck_by_turns_or_by_copies(turns: list[int], text: bool) -> None:
    # `turns[k]` copies of one call in turn k, every copy answered alike
    s = Stream().user()
    for n in turns:
        s.step(*[bash("git status --short")] * n, text="Checking again." if text else None)
    copies, in_a_row = sum(turns), len(turns)
    stuck = in_a_row >= 3 or copies >= 4
    assert (doom(s).verdict == "stuck") == stuck


def test_short_cycles_up_to_period_four_are_found() -> None:
    for period in (2, 3, 4):
        s = Stream().user()
        for _ in range(4):
            for k in range(period):
                s.step(bash(f"step {k}"))
        f = doom(s)
        assert f.verdict == "stuck", period
        assert f.evidence["period"] == period


def test_a_cycle_longer_than_the_limit_is_not_a_doom_loop() -> None:
    s = Stream().user()
    for _ in range(4):
        for k in range(5):
            s.step(bash(f"step {k}"))
    assert doom(s).verdict == "healthy"


def test_parallel_identical_calls_in_one_step_count() -> None:
    s = Stream().user().step(*[bash("ls")] * 3)
    assert doom(s).verdict == "suspect"
    s = Stream().user().step(*[bash("ls")] * 4)
    assert doom(s).verdict == "stuck"


def test_test_fix_test_is_progress() -> None:
    # each fix moves the answer (fewer failures); the same answer after every edit is a thrash
    # (test_field_guards)
    s = Stream().user()
    for i in range(8):
        s.step(bash("pytest -q", exit=1, output=f"{8 - i} failed, {i} passed"))
        s.step(edit("src/a.py", i))
    assert doom(s).verdict == "healthy"


def test_a_patch_part_of_the_sessions_own_command_resets_the_run() -> None:
    s = Stream().user()
    for i in range(4):
        s.repeat(2, bash("./check.sh", exit=1, output=f"level {i} too low")).step(
            bash(f"./gen.sh --level {i} > out.txt"), patch=("/p/out.txt",)
        )
    assert doom(s).verdict == "healthy"
    s = Stream().user()
    for _ in range(4):  # the same generator writing the same file: not progress
        s.repeat(2, bash("./check.sh", exit=1)).step(bash("./gen.sh > out.txt"), patch=("/p/out.txt",))
    assert doom(s).verdict == "stuck"


def test_files_another_session_changed_are_not_progress() -> None:
    # one project, several sessions: a step's patch lists what others wrote meanwhile
    s = Stream().user()
    for _ in range(6):
        s.step(bash("pytest -q", exit=1), patch=("/p/other_session_notes.md",))
    assert doom(s).verdict == "stuck"


def test_edits_that_undo_each_other_are_not_progress() -> None:
    s = Stream().user()
    there = call("edit", {"filePath": "a.py", "oldString": "x", "newString": "y"})
    back = call("edit", {"filePath": "a.py", "oldString": "y", "newString": "x"})
    for _ in range(5):
        s.step(there).step(bash("pytest -q", exit=1)).step(back).step(bash("pytest -q", exit=1))
    assert doom(s).verdict == "stuck"


def test_polling_with_sleep_is_waiting_not_looping() -> None:
    s = Stream().user().repeat(20, bash("sleep 30 && gh run view 1"))
    assert doom(s).verdict == "healthy"
    s = Stream().user()
    for _ in range(15):
        s.step(bash("sleep 10")).step(bash("curl -s localhost:8000/health"))
    assert doom(s).verdict == "healthy"


def test_polling_forever_is_still_caught() -> None:
    assert doom(Stream().user().repeat(60, bash("sleep 30 && gh run view 1"))).verdict == "stuck"


def test_breaking_the_repetition_lowers_the_score() -> None:
    whole = Stream().user().repeat(4, bash("ls"))
    broken = Stream().user().repeat(2, bash("ls")).step(bash("cat a")).repeat(2, bash("ls"))
    assert doom(broken).score < doom(whole).score


def test_thresholds_are_named_settings() -> None:
    s = Stream().user().repeat(6, bash("ls"))
    th = Thresholds(doom_repeat_stuck=10, doom_repeat_suspect=8, doom_repeat_turns_stuck=10)
    assert doom(s, th).verdict == "healthy"


def test_the_worst_episode_is_kept_and_marked_inactive() -> None:
    s = Stream().user().repeat(6, bash("ls")).step(bash("cat README")).step(text="done")
    f = doom(s)
    assert f.verdict == "stuck"
    assert f.evidence["active"] is False


def test_the_same_call_answered_differently_is_polling() -> None:
    s = Stream().user()
    for state in ("queued", "queued", "in_progress", "in_progress", "testing", "testing", "completed"):
        s.step(bash("gh run view 42 --json status", output=f'{{"status":"{state}"}}'))
    assert doom(s).verdict == "healthy"
    s.repeat(30, bash("gh run view 42 --json status", output='{"status":"completed"}'))
    assert doom(s).verdict == "stuck"  # ...until it stops changing


def test_outputs_that_differ_only_in_numbers_are_the_same_answer() -> None:
    s = Stream().user()
    for i in range(6):
        s.step(bash("pytest -q", exit=1, output=f"1 failed in 0.{50 + i}s at /tmp/run{i}"))
    assert doom(s).verdict == "stuck"


def test_an_edit_undone_and_made_again_is_stuck() -> None:
    there = call("edit", {"filePath": "a.py", "oldString": "x", "newString": "y"})
    back = call("edit", {"filePath": "a.py", "oldString": "y", "newString": "x"})
    s = Stream().user().step(there).step(bash("pytest", exit=1)).step(back)
    assert doom(s).verdict != "stuck"  # one revert is a change of mind
    s.step(bash("pytest", exit=1)).step(there)
    f = doom(s)
    assert f.verdict == "stuck" and f.evidence["signal"] == "undo_redo" and f.evidence["flips"] == 2
    assert f.start_index == 3


def test_a_revert_then_a_different_edit_is_not_a_loop() -> None:
    there = call("edit", {"filePath": "a.py", "oldString": "x", "newString": "y"})
    back = call("edit", {"filePath": "a.py", "oldString": "y", "newString": "x"})
    s = Stream().user().step(there).step(back).step(edit("a.py", 7)).step(there)
    assert doom(s).verdict == "healthy"


def test_a_cycle_whose_answers_never_change_is_stuck_after_two_rounds() -> None:
    s = Stream().user()
    for _ in range(2):
        s.step(read("/a.py")).step(call("grep", {"pattern": "x"})).step(bash("make", exit=2))
    assert doom(s).verdict == "stuck"
    moving = Stream().user()
    for k in range(2):
        moving.step(read("/a.py")).step(call("grep", {"pattern": "x"})).step(bash("make", output=f"{k} of 9"))
    assert doom(moving).verdict != "stuck"
